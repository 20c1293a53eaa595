// What the scheduler asks of a launcher: start a job's process, follow it to its end, stop it.
import type { LearnerConfig } from "../learn-types.js";
import type { Job } from "../workspace/job.js";

/** Who runs a job: a process of a host, or a SLURM job. Kept in the job's status file. */
export type ProcessRecord =
  | { readonly type: "local"; readonly pid: number; readonly host: string; readonly devices?: readonly number[] }
  | { readonly type: "slurm"; readonly id: string };

/** How a job's process ended, as far as its launcher knows. */
export interface ProcessExit {
  readonly code: number | null;
  /** The signal or the scheduler's word for the end (`SIGKILL`, `CANCELLED`, `TIMEOUT`). */
  readonly how?: string;
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
  /** Whether there is room for this job now. */
  canStart(config: LearnerConfig): boolean;
  /**
   * Throws when the job can never run here (more GPUs than there are, no sbatch); returns what
   * will run but badly (more threads than cores).
   */
  check(config: LearnerConfig, where: string): readonly string[];
  start(request: LaunchRequest): Promise<ProcessRecord>;
  /** Whether a process recorded by an earlier run of the plan is still queued or running. */
  isLive(record: ProcessRecord): Promise<boolean>;
  /** Resolves when the process is gone; `onRunning` once it runs (a queued job first waits). */
  follow(record: ProcessRecord, job: Job, onRunning: () => void): Promise<ProcessExit>;
  /** Asks the process to stop: `interrupt` lets it write a checkpoint first. */
  stop(record: ProcessRecord, how: "interrupt" | "kill"): Promise<void>;
}
