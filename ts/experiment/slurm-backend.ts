// Jobs submitted to SLURM: a script in the job directory, dependencies as afterok, the queue
// followed with squeue/scontrol (clusters often keep no accounting) and the job's own files.
import { writeFileSync } from "node:fs";

import type { ConfigOf } from "../config/class.js";
import { processesPerNode } from "../run/distributed.js";
import type { Backend, LaunchRequest, ProcessExit, ProcessRecord } from "./backend.js";
import type { SlurmLauncher } from "./launchers.js";
import { SlurmError, type SlurmJobStatus, cancelJob, queryJobs, requireCommand, sbatchScript, submitBatch } from "./slurm.js";

type SlurmLauncherConfig = ConfigOf<typeof SlurmLauncher>;

/** What the backend asks of SLURM (its commands; a fake cluster in the scheduler's tests). */
export interface SlurmClient {
  /** Throws when SLURM's commands cannot run here. */
  check(): void;
  submit(scriptFile: string): Promise<string>;
  query(ids: readonly string[]): Promise<Map<string, SlurmJobStatus>>;
  cancel(id: string, signal?: string): Promise<void>;
}

/** SLURM through its commands: sbatch, squeue, scontrol and scancel. */
export const slurmCommands: SlurmClient = {
  check: () => requireCommand("sbatch"),
  submit: (scriptFile) => submitBatch(scriptFile),
  query: (ids) => queryJobs(ids),
  cancel: (id, signal) => cancelJob(id, undefined, signal),
};

const QUEUED = new Set(["pending", "requeued", "preempted"]);
const RUNNING = new Set(["running", "completing", "suspended"]);

/** How the backend paces its talks with SLURM. */
export interface SlurmTimings {
  /** How often the queue is asked about the jobs followed (one squeue call for all of them). */
  readonly pollMs: number;
  /** How long a job SLURM no longer knows is given for its own files to say how it ended. */
  readonly lostGraceMs: number;
  /** How long SLURM may fail to answer (sbatch, squeue) before the jobs concerned end in error. */
  readonly unreachableMs: number;
}

const envNumber = (name: string, fallback: number): number => {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

/** The timings from the environment (`XPM_TORCH_SLURM_POLL_MS`, `…_LOST_GRACE_S`, `…_UNREACHABLE_S`). */
export function slurmTimings(): SlurmTimings {
  return {
    pollMs: envNumber("XPM_TORCH_SLURM_POLL_MS", 1000),
    lostGraceMs: envNumber("XPM_TORCH_SLURM_LOST_GRACE_S", 60) * 1000,
    unreachableMs: envNumber("XPM_TORCH_SLURM_UNREACHABLE_S", 600) * 1000,
  };
}

/** SLURM's words for a controller that cannot be reached now, rather than a refusal. */
const UNREACHABLE = /unable to contact slurm controller|socket timed out|connection refused|connect failure|temporarily unavailable|try again|slurm_persist_conn|Transient/i;

/**
 * Whether a SLURM command may be run again after this error: the controller could not be
 * reached. A command that did not answer in time may have acted: only a query is run again then
 * (a second sbatch could queue the job twice).
 */
export function isTransientSlurmError(error: unknown, query: boolean): boolean {
  if (!(error instanceof SlurmError)) return false;
  const said = `${error.message} ${error.stderr ?? ""}`;
  return UNREACHABLE.test(said) || (query && /did not answer within/.test(said));
}

/** One job followed: what its follow() is told at each poll. */
interface Followed {
  readonly record: ProcessRecord & { type: "slurm" };
  readonly events: { onRunning(): void; onQueued?(): void };
  readonly resolve: (exit: ProcessExit) => void;
  running: boolean;
}

export class SlurmBackend implements Backend {
  readonly queuesDependencies = true;
  private readonly followed = new Map<string, Followed>();
  private polling = false;
  private unreachableSince: number | undefined;
  private checked = false;

  constructor(
    private readonly launcher: SlurmLauncherConfig,
    private readonly slurm: SlurmClient = slurmCommands,
    private readonly timings: SlurmTimings = slurmTimings(),
  ) {}

  get lostGraceMs(): number {
    return this.timings.lostGraceMs;
  }

  /** Refuses the plan at once when this machine has no `sbatch`. */
  check(): readonly string[] {
    if (!this.checked) this.slurm.check();
    this.checked = true;
    return [];
  }

  canStart(): boolean {
    return true;
  }

  async start({ job, config, command, afterOk }: LaunchRequest): Promise<ProcessRecord> {
    const script = sbatchScript(this.launcher, {
      name: `xpm-${job.name}-${job.identifier.slice(0, 10)}`,
      scriptFile: job.slurmScript,
      stdout: job.stdoutFile,
      stderr: job.stderrFile,
      workdir: process.cwd(),
      command,
      env: this.launcher.cpus_per_task ? { OMP_NUM_THREADS: String(this.launcher.cpus_per_task) } : {},
      tasksPerNode: processesPerNode(config.fabric_config),
      nodes: this.launcher.nodes ?? config.fabric_config.num_nodes,
      afterOk,
      signalSeconds: this.launcher.signal_seconds,
    });
    writeFileSync(job.slurmScript, script, { mode: 0o755 });
    const id = await this.retried("sbatch", false, () => this.slurm.submit(job.slurmScript));
    return { type: "slurm", id, ...(afterOk.length > 0 ? { afterOk: [...afterOk] } : {}) };
  }

  async isLive(record: ProcessRecord): Promise<boolean> {
    if (record.type !== "slurm") return false;
    const status = (await this.retried("squeue", true, () => this.slurm.query([record.id]))).get(record.id);
    return status !== undefined && (QUEUED.has(status.state) || RUNNING.has(status.state));
  }

  follow(record: ProcessRecord, _job: unknown, events: { onRunning(): void; onQueued?(): void }): Promise<ProcessExit> {
    if (record.type !== "slurm") throw new TypeError("a SlurmLauncher follows SLURM jobs");
    return new Promise((resolve) => {
      this.followed.set(record.id, { record, events, resolve, running: false });
      void this.poll();
    });
  }

  detach(record: ProcessRecord): void {
    if (record.type !== "slurm") return;
    this.end(record.id, { code: null, lost: "detached" });
  }

  async stop(record: ProcessRecord, how: "interrupt" | "kill"): Promise<void> {
    if (record.type !== "slurm") return;
    // An interrupt is SIGTERM to the job's processes: they write a checkpoint and exit.
    await this.slurm.cancel(record.id, how === "interrupt" ? "TERM" : undefined).catch(() => undefined);
  }

  private end(id: string, exit: ProcessExit): void {
    const followed = this.followed.get(id);
    if (!followed) return;
    this.followed.delete(id);
    followed.resolve(exit);
  }

  /** What one poll says of a followed job. */
  private update(followed: Followed, status: SlurmJobStatus | undefined): void {
    const id = followed.record.id;
    if (status === undefined) {
      // Gone from squeue and scontrol: the scheduler gives the job's own files a while to speak.
      return this.end(id, { code: null, how: "no longer known to SLURM", lost: "vanished" });
    }
    if (QUEUED.has(status.state)) {
      if (status.reason === "DependencyNeverSatisfied") {
        // It would wait forever (unless the cluster kills such jobs): cancelled here, queued again
        // by the scheduler behind its dependency's new run, or failed with it.
        void this.slurm.cancel(id).catch(() => undefined);
        return this.end(id, { code: null, how: "DependencyNeverSatisfied", lost: "dependency never satisfied" });
      }
      if (followed.running) followed.events.onQueued?.();
      followed.running = false;
      return;
    }
    if (RUNNING.has(status.state)) {
      if (!followed.running) followed.events.onRunning();
      followed.running = true;
      return;
    }
    this.end(id, { code: status.exitCode ?? null, how: status.slurmState });
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      while (this.followed.size > 0) {
        // Only the jobs asked about are answered: others may have joined while squeue ran.
        const asked = [...this.followed.keys()];
        let statuses: Map<string, SlurmJobStatus> | undefined;
        try {
          statuses = await this.slurm.query(asked);
          this.unreachableSince = undefined;
        } catch (error) {
          this.unreachable(error, asked);
        }
        for (const id of statuses ? asked : []) {
          const followed = this.followed.get(id);
          if (followed) this.update(followed, statuses!.get(id));
        }
        if (this.followed.size > 0) await new Promise((wake) => setTimeout(wake, this.backoff()));
      }
    } finally {
      this.polling = false;
    }
  }

  /** squeue failed: asked again next time, until SLURM has not answered for `unreachableMs`. */
  private unreachable(error: unknown, asked: readonly string[]): void {
    const now = Date.now();
    this.unreachableSince ??= now;
    if (now - this.unreachableSince < this.timings.unreachableMs) return;
    const said = error instanceof Error ? error.message : String(error);
    for (const id of asked) this.end(id, { code: null, how: `SLURM did not answer for ${Math.round((now - this.unreachableSince) / 1000)} s: ${said}`, lost: "unreachable" });
  }

  /** The poll interval, doubled at each failure in a row (at most 30 s). */
  private backoff(): number {
    if (this.unreachableSince === undefined) return this.timings.pollMs;
    const failing = Date.now() - this.unreachableSince;
    return Math.min(30_000, Math.max(this.timings.pollMs, failing / 2));
  }

  /** Runs a SLURM command, again while the controller cannot be reached, for `unreachableMs` at most. */
  private async retried<T>(command: string, query: boolean, run: () => Promise<T>): Promise<T> {
    const started = Date.now();
    let wait = this.timings.pollMs;
    for (;;) {
      try {
        return await run();
      } catch (error) {
        const waited = Date.now() - started;
        if (!isTransientSlurmError(error, query)) throw error;
        if (waited >= this.timings.unreachableMs) {
          const said = error instanceof Error ? error.message : String(error);
          throw new SlurmError(`SlurmLauncher: SLURM could not be reached for ${Math.round(waited / 1000)} s (${command}): ${said}`, { command, ...(error instanceof SlurmError && error.stderr ? { stderr: error.stderr } : {}) });
        }
        await new Promise((wake) => setTimeout(wake, Math.min(wait, this.timings.unreachableMs - waited)));
        wait = Math.min(30_000, wait * 2);
      }
    }
  }
}
