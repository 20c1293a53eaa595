// What the scheduler asks of a launcher: start a job's process, follow it to its end, stop it.
import type { LearnerConfig } from "../learn-types.js";
import type { Job } from "../workspace/job.js";

/**
 * Who runs a job: a process of a host, or a SLURM job (with the SLURM jobs it was queued behind).
 * Kept in the job's status file and its launch log.
 */
export type ProcessRecord =
  | { readonly type: "local"; readonly pid: number; readonly host: string; readonly devices?: readonly number[] }
  | { readonly type: "slurm"; readonly id: string; readonly afterOk?: readonly string[] };

/**
 * How a job's process ended, as far as its launcher knows. `lost` when the launcher no longer knows:
 * `vanished` (SLURM forgot the job), `dependency never satisfied` (queued behind a job that ended
 * badly: cancelled by the backend), `unreachable` (SLURM did not answer for too long; the job may
 * still run), `detached` (the plan stopped following it).
 */
export interface ProcessExit {
  readonly code: number | null;
  /** The signal or the scheduler's word for the end (`SIGKILL`, `CANCELLED`, `TIMEOUT`). */
  readonly how?: string;
  readonly lost?: "vanished" | "dependency never satisfied" | "unreachable" | "detached";
}

export interface LaunchRequest {
  readonly job: Job;
  readonly config: LearnerConfig;
  readonly command: readonly string[];
  /** SLURM ids of dependencies still queued or running (only for backends that queue dependencies). */
  readonly afterOk: readonly string[];
}

export interface Backend {
  /** Whether a job may be handed over before its dependencies are done (SLURM's afterok). */
  readonly queuesDependencies: boolean;
  /** How long a job this launcher lost (`lost: "vanished"`) is given for its own files to say how it ended. */
  readonly lostGraceMs: number;
  /** Whether there is room for this job now. */
  canStart(config: LearnerConfig): boolean;
  /**
   * Throws when the job can never run here (more GPUs than there are, no sbatch); returns what
   * will run but badly (more threads than cores).
   */
  check(config: LearnerConfig, where: string): readonly string[];
  /** Throws when the launcher refuses the job, or could not be reached for too long. */
  start(request: LaunchRequest): Promise<ProcessRecord>;
  /** Whether a process recorded by an earlier run of the plan is still queued or running. */
  isLive(record: ProcessRecord): Promise<boolean>;
  /**
   * Resolves when the process is gone. A followed process takes its room in the launcher (a slot,
   * its GPUs) from the call on, synchronously; `onRunning` once it runs, `onQueued` when it waits
   * in a queue again (a requeued SLURM job).
   */
  follow(record: ProcessRecord, job: Job, events: { onRunning(): void; onQueued?(): void }): Promise<ProcessExit>;
  /** Stops following the process (it runs on): its follow() resolves with `lost: "detached"`. */
  detach(record: ProcessRecord): void;
  /** Asks the process to stop: `interrupt` lets it write a checkpoint first. */
  stop(record: ProcessRecord, how: "interrupt" | "kill"): Promise<void>;
}
