// Jobs submitted to SLURM: a script in the job directory, dependencies as afterok, the queue
// followed with squeue/scontrol (clusters often keep no accounting) and the job's own files.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

import type { ConfigOf } from "../config/class.js";
import { processesPerNode } from "../distributed.js";
import type { Backend, LaunchRequest, ProcessExit, ProcessRecord } from "./backend.js";
import { outputFiles } from "./job-process.js";
import type { SlurmLauncher } from "./launchers.js";
import { type SlurmJobStatus, cancelJob, queryJobs, requireCommand, sbatchScript, submitBatch } from "./slurm.js";

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

/** How often the queue is asked about the jobs followed (one squeue call for all of them). */
const POLL_MS = Number(process.env.XPM_TORCH_SLURM_POLL_MS ?? 1000);

const QUEUED = new Set(["pending", "requeued", "preempted"]);
const RUNNING = new Set(["running", "completing", "suspended"]);

export class SlurmBackend implements Backend {
  readonly queuesDependencies = true;
  private readonly followed = new Map<string, (status: SlurmJobStatus | undefined) => void>();
  private polling = false;

  constructor(
    private readonly launcher: SlurmLauncherConfig,
    private readonly slurm: SlurmClient = slurmCommands,
  ) {}

  private checked = false;

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
    const files = outputFiles(job);
    const scriptFile = join(job.dir, `${job.name}.slurm.sh`);
    const script = sbatchScript(this.launcher, {
      name: `xpm-${job.name}-${job.identifier.slice(0, 10)}`,
      scriptFile,
      stdout: files.stdout,
      stderr: files.stderr,
      workdir: process.cwd(),
      command,
      env: this.launcher.cpus_per_task ? { OMP_NUM_THREADS: String(this.launcher.cpus_per_task) } : {},
      tasksPerNode: processesPerNode(config.fabric_config),
      nodes: this.launcher.nodes ?? config.fabric_config.num_nodes,
      afterOk,
      signalSeconds: this.launcher.signal_seconds,
    });
    writeFileSync(scriptFile, script, { mode: 0o755 });
    return { type: "slurm", id: await this.slurm.submit(scriptFile) };
  }

  async isLive(record: ProcessRecord): Promise<boolean> {
    if (record.type !== "slurm") return false;
    const status = (await this.slurm.query([record.id])).get(record.id);
    return status !== undefined && (QUEUED.has(status.state) || RUNNING.has(status.state));
  }

  follow(record: ProcessRecord, _job: unknown, onRunning: () => void): Promise<ProcessExit> {
    if (record.type !== "slurm") throw new TypeError("a SlurmLauncher follows SLURM jobs");
    return new Promise((resolve) => {
      this.followed.set(record.id, (status) => {
        if (status && RUNNING.has(status.state)) onRunning();
        if (status && (QUEUED.has(status.state) || RUNNING.has(status.state))) return;
        this.followed.delete(record.id);
        resolve({ code: status?.exitCode ?? null, how: status ? status.slurmState : "no longer known to SLURM" });
      });
      void this.poll();
    });
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      while (this.followed.size > 0) {
        // squeue may fail for a moment (the controller restarting): ask again next time. Only
        // the jobs asked about are answered: others may have joined while squeue ran.
        const asked = [...this.followed.keys()];
        const statuses = await this.slurm.query(asked).catch(() => undefined);
        if (statuses) for (const id of asked) this.followed.get(id)?.(statuses.get(id));
        if (this.followed.size > 0) await new Promise((wake) => setTimeout(wake, POLL_MS));
      }
    } finally {
      this.polling = false;
    }
  }

  async stop(record: ProcessRecord, how: "interrupt" | "kill"): Promise<void> {
    if (record.type !== "slurm") return;
    // An interrupt is SIGTERM to the job's processes: they write a checkpoint and exit.
    await this.slurm.cancel(record.id, how === "interrupt" ? "TERM" : undefined).catch(() => undefined);
  }
}
