// The experiment's jobs and their states: a job waits for its dependencies, starts when its
// launcher has room, and ends done or in error; the dependents of a failed job never run.
import { readFileSync } from "node:fs";

import { identifierOf } from "../config/identity.js";
import { InternalError, XpmTorchError } from "../errors.js";
import { completed } from "../launch.js";
import type { LearnResult, LearnerConfig } from "../learn-types.js";
import type { StoredResult } from "../train.js";
import { type Job, liveLockHolder, prepareJobDirectory, storedResult } from "../workspace/job.js";
import { readParamsJson } from "../workspace/params-json.js";
import type { Backend, ProcessExit, ProcessRecord } from "./backend.js";
import { JobFailedError } from "./errors.js";
import { clearFailure, jobCommand, outputFiles, recordLaunch, recordedFailure, tailOf } from "./job-process.js";

/** Where a job of an experiment stands. */
export type JobState = "waiting" | "ready" | "scheduled" | "running" | "done" | "error" | "dependency failed";

/** What the scheduler reports as jobs move (the workspace's records listen). */
export interface StateListener {
  (entry: ScheduledJob, state: JobState, detail: { record?: ProcessRecord; failure?: string; exit?: ProcessExit }): void;
}

/** How often the lock of a job run by some other process is looked at. */
const LOCK_POLL_MS = 500;

/** One job of the plan. */
export class ScheduledJob {
  state: JobState = "waiting";
  record: ProcessRecord | undefined;
  failure: string | undefined;
  readonly outcome: Promise<LearnResult>;
  private settle!: { resolve: (r: LearnResult) => void; reject: (e: Error) => void };

  constructor(
    readonly config: LearnerConfig,
    readonly job: Job,
    readonly backend: Backend,
    readonly dependencies: readonly ScheduledJob[],
    readonly tags: Record<string, string | number | boolean>,
  ) {
    this.outcome = new Promise<LearnResult>((resolve, reject) => (this.settle = { resolve, reject }));
    // A plan need not ask for every result: a failure it never reads is reported at the end.
    this.outcome.catch(() => undefined);
  }

  get settled(): boolean {
    return this.state === "done" || this.state === "error" || this.state === "dependency failed";
  }

  succeed(result: StoredResult, cached: boolean): void {
    this.settle.resolve(completed(this.config, this.job, result, cached));
  }

  fail(error: Error): void {
    this.settle.reject(error);
  }
}

export interface SchedulerOptions {
  readonly onState: StateListener;
  /** Modules the job processes import before reading their params.json. */
  readonly imports: readonly string[];
}

export class Scheduler {
  readonly jobs: ScheduledJob[] = [];
  private stopping = false;
  private adding = 0;
  /** Jobs left running when the plan stopped (SLURM jobs, unless asked). */
  private readonly leftRunning = new Set<ScheduledJob>();
  private pumping = false;
  private idle: (() => void)[] = [];

  constructor(private readonly options: SchedulerOptions) {}

  /** Adds a job: done already, still running from an earlier run of the plan, or to schedule. */
  async add(entry: ScheduledJob): Promise<void> {
    // The job joins the schedule only once it is known not to run elsewhere: started twice, it
    // would race its own earlier process.
    this.adding += 1;
    try {
      const stored = storedResult<StoredResult>(entry.job);
      const record = stored ? undefined : await this.liveRecord(entry);
      entry.record = record;
      this.jobs.push(entry);
      if (stored) return this.finishDone(entry, stored, true);
      if (record) return void this.follow(entry, record);
      if (liveLockHolder(entry.job.lockFile)) return void this.waitForLock(entry);
      this.move(entry, "waiting");
      this.pump();
    } finally {
      this.adding -= 1;
      this.notifyIdle();
    }
  }

  /** Starts no more jobs: those not started fail (a plan awaiting one must not wait forever). */
  halt(): void {
    this.stopping = true;
    for (const j of this.jobs.filter((j) => !j.record && !j.settled)) {
      j.fail(new XpmTorchError("ERR_INTERRUPTED", `the experiment stopped before job ${j.job.dir} started`));
    }
    this.notifyIdle();
  }

  /**
   * Starts no more jobs, and asks the running ones that `which` selects to stop (`interrupt`:
   * after a checkpoint); the others are left running, and not waited for.
   */
  async stop(how: "interrupt" | "kill", which: (entry: ScheduledJob) => boolean = () => true): Promise<void> {
    this.halt();
    const started = this.jobs.filter((j) => j.record && !j.settled);
    started.filter((j) => !which(j)).forEach((j) => this.leftRunning.add(j));
    await Promise.all(started.filter(which).map((j) => j.backend.stop(j.record!, how)));
    this.notifyIdle();
  }

  /** Resolves once every job has ended, or will not start (after {@link stop}). */
  whenIdle(): Promise<void> {
    if (this.quiet()) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private quiet(): boolean {
    return this.adding === 0 && this.jobs.every((j) => j.settled || (this.stopping && (j.record === undefined || this.leftRunning.has(j))));
  }

  private notifyIdle(): void {
    if (!this.quiet()) return;
    this.idle.splice(0).forEach((wake) => wake());
  }

  private move(entry: ScheduledJob, state: JobState, detail: Parameters<StateListener>[2] = {}): void {
    entry.state = state;
    this.options.onState(entry, state, { record: entry.record, ...detail });
  }

  /** A process an earlier run of the plan started and that still runs (or is queued). */
  private async liveRecord(entry: ScheduledJob): Promise<ProcessRecord | undefined> {
    const record = entry.record;
    if (!record) return undefined;
    return (await entry.backend.isLive(record)) ? record : undefined;
  }

  /** Starts what can start; marks the dependents of failed jobs. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (const entry of this.jobs) {
        if (entry.state !== "waiting" && entry.state !== "ready") continue;
        const failed = entry.dependencies.find((d) => d.state === "error" || d.state === "dependency failed");
        if (failed) {
          this.failDependent(entry, failed);
          continue;
        }
        if (this.stopping || !this.dependenciesAllow(entry)) continue;
        if (entry.state === "waiting") this.move(entry, "ready");
        // Starting takes the launcher's room at once (before any await), so the next job sees it.
        if (entry.backend.canStart(entry.config)) void this.launch(entry);
      }
    } finally {
      this.pumping = false;
    }
    this.notifyIdle();
  }

  private dependenciesAllow(entry: ScheduledJob): boolean {
    return entry.dependencies.every(
      (d) => d.state === "done" || (entry.backend.queuesDependencies && d.record?.type === "slurm" && (d.state === "scheduled" || d.state === "running")),
    );
  }

  private failDependent(entry: ScheduledJob, failed: ScheduledJob): void {
    entry.failure = `its dependency ${failed.job.typeId}/${failed.job.identifier} ended in error`;
    this.move(entry, "dependency failed", { failure: entry.failure });
    entry.fail(new JobFailedError(entry.job, "dependency failed", entry.failure, ""));
    if (entry.record) void entry.backend.stop(entry.record, "kill");
  }

  private async launch(entry: ScheduledJob): Promise<void> {
    const afterOk = entry.dependencies.flatMap((d) => (d.state !== "done" && d.record?.type === "slurm" ? [d.record.id] : []));
    entry.state = "scheduled";
    let record: ProcessRecord;
    try {
      prepareJobDirectory(entry.config, entry.job);
      checkParamsJson(entry.job);
      clearFailure(entry.job);
      record = await entry.backend.start({ job: entry.job, config: entry.config, command: jobCommand(entry.job, this.options.imports), afterOk });
    } catch (error) {
      this.finishError(entry, error instanceof Error ? error.message : String(error), "");
      return;
    }
    recordLaunch(entry.job, record);
    if (this.stopping) await entry.backend.stop(record, "interrupt");
    await this.follow(entry, record);
  }

  private async follow(entry: ScheduledJob, record: ProcessRecord): Promise<void> {
    entry.record = record;
    this.move(entry, "scheduled");
    this.pump();
    let exit: ProcessExit;
    try {
      exit = await entry.backend.follow(record, entry.job, () => {
        if (entry.state === "scheduled") this.move(entry, "running");
      });
    } catch (error) {
      exit = { code: null, how: error instanceof Error ? error.message : String(error) };
    }
    this.settleFromFiles(entry, exit);
  }

  /** Waits while another process (a learn() call, another plan) holds the job. */
  private async waitForLock(entry: ScheduledJob): Promise<void> {
    this.move(entry, "running");
    while (liveLockHolder(entry.job.lockFile)) await new Promise((wake) => setTimeout(wake, LOCK_POLL_MS));
    this.settleFromFiles(entry, { code: null, how: "run by another process" });
  }

  /** What the job's files say once its process is gone. */
  private settleFromFiles(entry: ScheduledJob, exit: ProcessExit): void {
    if (entry.settled) return; // a dependent cancelled in the queue
    const stored = storedResult<StoredResult>(entry.job);
    if (stored) return this.finishDone(entry, stored, false);
    if (liveLockHolder(entry.job.lockFile)) return void this.waitForLock(entry);
    const how = exit.how ? ` (${exit.how})` : exit.code !== null ? ` with status ${exit.code}` : "";
    const message = recordedFailure(entry.job) ?? `the job's process ended${how} without a result`;
    this.finishError(entry, message, tailOf(outputFiles(entry.job).stderr), exit);
  }

  private finishDone(entry: ScheduledJob, result: StoredResult, cached: boolean): void {
    this.move(entry, "done");
    entry.succeed(result, cached);
    this.pump();
  }

  private finishError(entry: ScheduledJob, message: string, stderrTail: string, exit?: ProcessExit): void {
    entry.failure = message;
    this.move(entry, "error", { failure: message, ...(exit ? { exit } : {}) });
    entry.fail(new JobFailedError(entry.job, "error", message, stderrTail));
    this.pump();
  }
}

/** The job process rebuilds the task from params.json: it must find the same identifier. */
function checkParamsJson(job: Job): void {
  const identifier = identifierOf(readParamsJson(readFileSync(job.paramsFile, "utf8"), job.paramsFile));
  if (identifier !== job.identifier) {
    throw new InternalError(`${job.paramsFile} reads back as the task ${identifier}, not ${job.identifier}: the job process would train another configuration`);
  }
}
