// A SLURM controller in memory for the scheduler's tests: sbatch, squeue/scontrol and scancel as
// the SlurmBackend calls them, with afterok dependencies as SLURM treats them. Its jobs run only
// when a test says so, and write what a job process writes (status, result or failure).
import { readFileSync } from "node:fs";
import { dirname } from "node:path";

import type { SlurmClient } from "../../ts/experiment/slurm-backend.js";
import { SlurmError, type SlurmJobState, type SlurmJobStatus, slurmJobState } from "../../ts/experiment/slurm.js";
import { type FailureReason } from "../../ts/workspace/job-state.js";
import { jobFiles, markDone, markFailed } from "../../ts/workspace/job.js";
import { writeJobStatus } from "../../ts/workspace/status.js";

export interface FakeSlurmJob {
  readonly id: string;
  readonly jobDir: string;
  readonly afterOk: readonly string[];
  slurmState: string;
  reason: string | undefined;
  exitCode: number | undefined;
}

/** What a finished fake job stores: an empty result (no listeners, no checkpoints). */
export const EMPTY_RESULT = { epochs: [], listeners: {}, learned_model: null, checkpoints: {}, stopped: null, resumed_from: null, warnings: [], start_metrics: null };

const FINAL = new Set<SlurmJobState>(["completed", "failed", "cancelled", "timeout", "preempted"]);

export class FakeSlurm implements SlurmClient {
  readonly jobs = new Map<string, FakeSlurmJob>();
  /** SLURM's message while the controller cannot be reached; every command then fails with it. */
  down: string | undefined;
  /** Every command run, as `sbatch <job dir>`, `squeue <ids>`, `scancel <id> [signal]`. */
  readonly calls: string[] = [];
  private nextId = 1000;

  check(): void {}

  async submit(scriptFile: string): Promise<string> {
    this.reachable("sbatch");
    const jobDir = dirname(scriptFile);
    const afterOk = /^#SBATCH --dependency=afterok:(.+)$/m.exec(readFileSync(scriptFile, "utf8"))?.[1]?.split(":") ?? [];
    const unknown = afterOk.filter((id) => !this.jobs.has(id));
    if (unknown.length > 0) throw new SlurmError(`SlurmLauncher: sbatch refused ${scriptFile}: Job dependency problem`, { command: "sbatch" });
    const id = String(this.nextId++);
    this.jobs.set(id, { id, jobDir, afterOk, slurmState: "PENDING", reason: undefined, exitCode: undefined });
    this.calls.push(`sbatch ${jobDir}`);
    return id;
  }

  async query(ids: readonly string[]): Promise<Map<string, SlurmJobStatus>> {
    this.reachable("squeue");
    this.calls.push(`squeue ${ids.join(",")}`);
    const found = new Map<string, SlurmJobStatus>();
    for (const id of ids) {
      const job = this.jobs.get(id);
      if (!job) continue;
      this.updateDependency(job);
      found.set(id, {
        id,
        state: slurmJobState(job.slurmState),
        slurmState: job.slurmState,
        ...(job.reason ? { reason: job.reason } : {}),
        ...(job.exitCode !== undefined ? { exitCode: job.exitCode } : {}),
      });
    }
    return found;
  }

  /** scancel: the plan's own (TERM asks the run to checkpoint and stop: it ends cancelled). */
  async cancel(id: string, signal?: string): Promise<void> {
    this.reachable("scancel");
    this.calls.push(`scancel ${id}${signal ? ` ${signal}` : ""}`);
    const job = this.jobs.get(id);
    if (!job || this.isFinal(job)) return;
    if (signal === "TERM" && job.slurmState === "RUNNING") return this.end(id, "CANCELLED", 1, "cancelled");
    this.end(id, "CANCELLED", 0);
  }

  // --- what happens on the cluster

  /** The job starts: its process says it runs. */
  start(id: string): void {
    const job = this.job(id);
    job.slurmState = "RUNNING";
    job.reason = undefined;
    writeJobStatus(this.target(job), { state: "running" });
  }

  /** The job's process ends with a result. */
  complete(id: string): void {
    const job = this.job(id);
    markDone(jobFiles(job.jobDir), EMPTY_RESULT);
    writeJobStatus(this.target(job), { state: "done" });
    this.end(id, "COMPLETED", 0);
  }

  /** The job starts, then ends with a result. */
  succeed(id: string): void {
    this.start(id);
    this.complete(id);
  }

  /** The job's process ends in error, saying why. */
  fail(id: string, reason: FailureReason, message: string): void {
    const job = this.job(id);
    markFailed(jobFiles(job.jobDir), { code: reason === "memory" ? "ERR_OUT_OF_MEMORY" : reason === "cancelled" ? "ERR_INTERRUPTED" : "ERR_TRAINING", message });
    writeJobStatus(this.target(job), { state: "error", failureReason: reason });
    this.end(id, "FAILED", 1);
  }

  /** Ends the job as SLURM would without its process saying anything (scancel by hand, a lost node). */
  end(id: string, slurmState: string, exitCode: number, _why?: string): void {
    const job = this.job(id);
    job.slurmState = slurmState;
    job.reason = undefined;
    job.exitCode = exitCode;
    for (const other of this.jobs.values()) this.updateDependency(other);
  }

  /** SLURM no longer knows the job (past MinJobAge, or a controller restarted without its state). */
  forget(id: string): void {
    this.jobs.delete(id);
  }

  /** The ids submitted for a job directory, oldest first. */
  idsOf(jobDir: string): string[] {
    return [...this.jobs.values()].filter((j) => j.jobDir === jobDir).map((j) => j.id);
  }

  /** Sbatch calls made for a job directory (forgotten jobs included). */
  submissionsOf(jobDir: string): number {
    return this.calls.filter((c) => c === `sbatch ${jobDir}`).length;
  }

  stateOf(id: string): string {
    return this.job(id).slurmState;
  }

  private updateDependency(job: FakeSlurmJob): void {
    if (job.slurmState !== "PENDING" || job.afterOk.length === 0) return;
    const deps = job.afterOk.map((id) => this.jobs.get(id));
    if (deps.some((d) => d === undefined || (this.isFinal(d) && d.slurmState !== "COMPLETED"))) job.reason = "DependencyNeverSatisfied";
    else if (deps.every((d) => d!.slurmState === "COMPLETED")) job.reason = undefined;
    else job.reason = "Dependency";
  }

  private isFinal(job: FakeSlurmJob): boolean {
    return FINAL.has(slurmJobState(job.slurmState));
  }

  private job(id: string): FakeSlurmJob {
    const job = this.jobs.get(id);
    if (!job) throw new Error(`fake SLURM: no job ${id}`);
    return job;
  }

  private target(job: FakeSlurmJob): { jobDir: string; identifier: string; taskId: string } {
    const files = jobFiles(job.jobDir);
    return { jobDir: job.jobDir, identifier: files.dir.split("/").pop()!, taskId: dirname(files.dir).split("/").pop()! };
  }

  private reachable(command: string): void {
    if (this.down !== undefined) throw new SlurmError(`SlurmLauncher: ${command} failed: ${this.down}. Is slurmctld reachable (scontrol ping)?`, { command, stderr: this.down });
  }
}
