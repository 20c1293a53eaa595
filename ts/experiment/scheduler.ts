// The experiment's jobs and their states: a job waits for its dependencies, starts when its
// launcher has room, and ends done or in error; the dependents of a failed job never run. Each
// move is one of TRANSITIONS (ts/workspace/job-state.ts); the scheduler writes its own fields of
// the job's status.json and never an outcome the job's process recorded itself.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";

import { InternalError, XpmTorchError } from "../errors.js";
import type { LearnResult, LearnerConfig } from "../learn-types.js";
import { completed } from "../run/launch.js";
import type { StoredResult } from "../run/train.js";
import { type FailureReason, type JobState, checkTransition, failureReasonOfCode, isFinal } from "../workspace/job-state.js";
import { type Job, liveLockHolder, prepareJobDirectory, readLockHolder, storedResult } from "../workspace/job.js";
import { paramsIdentifier } from "../workspace/params-json.js";
import { claimStands, noteClaimProcess, readLaunchClaim, releaseLaunchClaim, takeLaunchClaim } from "../workspace/launch-claim.js";
import { noteSchedulerState, settleJobStatus, writeJobStatus } from "../workspace/status.js";
import type { Backend, ProcessExit, ProcessRecord } from "./backend.js";
import type { StateHow } from "./describe.js";
import { JobFailedError } from "./errors.js";
import { clearFailure, jobCommand, lastLaunch, recordLaunch, recordedFailure, tailOf } from "./job-process.js";

/** What the scheduler reports as jobs move (the experiment's records and log listen). */
export interface StateListener {
  (entry: ScheduledJob, state: JobState, detail: MoveDetail): void;
}

/**
 * What goes with a move: why a job is in error, and how it got where it is when this plan did not
 * run it: `cached` (done before, its stored result taken), `followed` (a process an earlier run of
 * the plan, another plan or a learn() call started).
 */
export interface MoveDetail {
  readonly failure?: string;
  readonly reason?: FailureReason;
  readonly how?: StateHow;
}

/** How often the lock of a job run by some other process is looked at. */
const LOCK_POLL_MS = 500;

/** One job of the plan. */
export class ScheduledJob {
  state: JobState = "unscheduled";
  failureReason: FailureReason | undefined;
  record: ProcessRecord | undefined;
  /** Whether its process is one this plan follows but did not start. */
  followed = false;
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
    return isFinal(this.state);
  }

  succeed(result: StoredResult, cached: boolean): void {
    this.settle.resolve(completed(this.config, this.job, result, cached));
  }

  fail(error: Error): void {
    this.settle.reject(error);
  }

  /** The job's folder and name, as status.json is addressed. */
  get target(): { jobDir: string; identifier: string; taskId: string } {
    return { jobDir: this.job.dir, identifier: this.job.identifier, taskId: this.job.typeId };
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
  /** Dependents cancelled in the queue to be queued again behind their dependency's new run. */
  private readonly requeued = new Set<ScheduledJob>();
  private pumping = false;
  private idle: (() => void)[] = [];
  /** This plan, in the launch claims of its jobs. */
  private readonly plan = randomBytes(6).toString("hex");
  /** Jobs another plan is launching, watched until its process is known. */
  private readonly watchingClaims = new Set<ScheduledJob>();

  constructor(private readonly options: SchedulerOptions) {}

  /** Adds a job: done already, still running from an earlier run of the plan, or to schedule. */
  async add(entry: ScheduledJob): Promise<void> {
    // The job joins the schedule only once it is known not to run elsewhere: started twice, it
    // would race its own earlier process. Nothing starts while jobs are being added, so that the
    // processes a killed plan left take their launcher's room first.
    this.adding += 1;
    try {
      this.jobs.push(entry);
      const stored = storedResult<StoredResult>(entry.job);
      if (stored) return this.finishDone(entry, stored, true);
      const record = await this.liveRecord(entry);
      entry.record = record;
      if (record) return void this.follow(entry, record);
      await this.dropStaleLock(entry);
      if (liveLockHolder(entry.job.lockFile)) return void this.waitForLock(entry);
      this.move(entry, "waiting");
    } catch (error) {
      this.finishError(entry, error instanceof Error ? error.message : String(error), "", "failed");
    } finally {
      this.adding -= 1;
      this.pump();
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
   * after a checkpoint); the others are left running, no longer followed, and their results
   * fail with ERR_INTERRUPTED (a plan awaiting one ends).
   */
  async stop(how: "interrupt" | "kill", which: (entry: ScheduledJob) => boolean = () => true): Promise<void> {
    this.halt();
    const started = this.jobs.filter((j) => j.record && !j.settled);
    for (const j of started.filter((j) => !which(j))) {
      this.leftRunning.add(j);
      j.backend.detach(j.record!);
      j.fail(new XpmTorchError("ERR_INTERRUPTED", `the experiment stopped while job ${j.job.dir} was ${j.state}; it goes on, and running the plan again follows it`));
    }
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

  /** Moves a job along TRANSITIONS, writes the scheduler's side of its status, and tells the listener. */
  private move(entry: ScheduledJob, state: JobState, detail: MoveDetail = {}): void {
    checkTransition(entry.state, state, `${entry.job.typeId}/${entry.job.identifier}`);
    entry.state = state;
    entry.failureReason = state === "error" ? (detail.reason ?? "failed") : undefined;
    this.options.onState(entry, state, detail);
  }

  /** A process an earlier run of the plan started and that still runs (or is queued). */
  private async liveRecord(entry: ScheduledJob): Promise<ProcessRecord | undefined> {
    const record = entry.record;
    if (!record) return undefined;
    return (await entry.backend.isLive(record)) ? record : undefined;
  }

  /**
   * A lock that names a SLURM job its launcher no longer runs (its node lost, the job cancelled
   * before it could unlock) is stale: no process of that host can be asked whether it lives.
   */
  private async dropStaleLock(entry: ScheduledJob): Promise<void> {
    const holder = readLockHolder(entry.job.lockFile);
    if (!holder?.slurmJob) return;
    if (!(await entry.backend.isLive({ type: "slurm", id: holder.slurmJob }))) rmSync(entry.job.lockFile, { force: true });
  }

  /** Starts what can start; marks the dependents of failed jobs. */
  private pump(): void {
    if (this.pumping || this.adding > 0) return this.notifyIdle();
    this.pumping = true;
    try {
      for (const entry of this.jobs) {
        if (entry.state !== "waiting" && entry.state !== "ready") continue;
        const failed = entry.dependencies.find((d) => d.state === "error");
        if (failed) {
          this.failDependent(entry, failed);
          continue;
        }
        if (this.stopping || !this.dependenciesAllow(entry)) continue;
        if (entry.state === "waiting") this.move(entry, "ready");
        // Starting takes the launcher's room at once (before any await), so the next job sees it.
        if (!entry.backend.canStart(entry.config) || this.watchingClaims.has(entry)) continue;
        if (!takeLaunchClaim(entry.job, this.plan)) {
          void this.followOtherPlan(entry);
          continue;
        }
        // Done since this plan looked (by another plan, or a learn() call): not launched again.
        const stored = doneMeanwhile(entry.job);
        if (stored) {
          releaseLaunchClaim(entry.job, this.plan);
          this.finishDone(entry, stored, true);
          continue;
        }
        void this.launch(entry);
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
    writeJobStatus(entry.target, { state: "error", failureReason: "dependency", process: null });
    this.move(entry, "error", { failure: entry.failure, reason: "dependency" });
    entry.fail(new JobFailedError(entry.job, "dependency", entry.failure, ""));
    if (entry.record) void entry.backend.stop(entry.record, "kill");
  }

  /** The dependents queued behind a job that ended in error will never run: they fail with it. */
  private failDependentsOf(failed: ScheduledJob): void {
    for (const entry of this.jobs) {
      if (entry.state === "scheduled" && entry.dependencies.includes(failed)) this.failDependent(entry, failed);
    }
  }

  /**
   * Dependents queued (with afterok) behind an earlier run of `entry`, now that it runs anew: they
   * would wait on a job that will never succeed. Cancelled, they are queued again behind this run.
   */
  private requeueDependentsOf(entry: ScheduledJob, record: ProcessRecord): void {
    if (record.type !== "slurm") return;
    for (const dependent of this.jobs) {
      const queued = dependent.record;
      if (dependent.state !== "scheduled" || queued?.type !== "slurm" || !dependent.dependencies.includes(entry)) continue;
      if (queued.afterOk?.includes(record.id)) continue;
      this.requeued.add(dependent);
      void dependent.backend.stop(queued, "kill");
    }
  }

  private async launch(entry: ScheduledJob): Promise<void> {
    const afterOk = entry.dependencies.flatMap((d) => (d.state !== "done" && d.record?.type === "slurm" ? [d.record.id] : []));
    // Scheduled at once: no second launch of this job while this one awaits its launcher.
    entry.followed = false;
    this.move(entry, "scheduled");
    let record: ProcessRecord;
    try {
      prepareJobDirectory(entry.config, entry.job);
      checkParamsJson(entry.job);
      clearFailure(entry.job);
      record = await entry.backend.start({ job: entry.job, config: entry.config, command: jobCommand(entry.job, this.options.imports), afterOk });
    } catch (error) {
      releaseLaunchClaim(entry.job, this.plan);
      this.finishError(entry, error instanceof Error ? error.message : String(error), "", "failed");
      return;
    }
    recordLaunch(entry.job, record);
    noteClaimProcess(entry.job, this.plan, record);
    entry.record = record;
    writeJobStatus(entry.target, { state: "scheduled", process: record, exitCode: null });
    this.requeueDependentsOf(entry, record);
    if (this.stopping) await entry.backend.stop(record, "interrupt");
    await this.follow(entry, record);
  }

  private async follow(entry: ScheduledJob, record: ProcessRecord): Promise<void> {
    entry.record = record;
    // A job this plan launched is scheduled already; one it follows is so from now on.
    if (entry.state !== "scheduled") {
      entry.followed = true;
      this.move(entry, "scheduled", { how: "followed" });
      noteSchedulerState(entry.target, "scheduled", record);
    }
    this.pump();
    let exit: ProcessExit;
    try {
      exit = await entry.backend.follow(record, entry.job, {
        onRunning: () => {
          if (entry.state !== "scheduled") return;
          this.move(entry, "running");
          noteSchedulerState(entry.target, "running", record);
        },
        onQueued: () => {
          if (entry.state !== "running") return;
          this.move(entry, "scheduled");
          noteSchedulerState(entry.target, "scheduled", record);
        },
      });
    } catch (error) {
      exit = { code: null, how: error instanceof Error ? error.message : String(error) };
    }
    // Followed no more here: a plan that runs later follows the process, or launches the job anew.
    releaseLaunchClaim(entry.job, this.plan);
    if (exit.lost === "detached" || entry.settled) return;
    const requeued = this.requeued.delete(entry);
    if (exit.lost === "dependency never satisfied" || requeued) return this.queueAgain(entry);
    if (exit.lost === "vanished") await this.graceForFiles(entry);
    this.settleFromFiles(entry, exit);
  }

  /**
   * Another plan claimed the launch of the job (two plans started at once): its process is
   * followed once that plan records it. When the claim goes without one, the job is launched here.
   */
  private async followOtherPlan(entry: ScheduledJob): Promise<void> {
    this.watchingClaims.add(entry);
    try {
      while (!this.stopping) {
        const claim = readLaunchClaim(entry.job);
        if (claim === undefined || !claimStands(claim)) {
          const last = lastLaunch(entry.job);
          if (last && (storedResult(entry.job) || (await entry.backend.isLive(last)))) return void this.follow(entry, last);
          // Claimed here at the next pump, once the claim is gone (or a torn one is old enough).
          return await new Promise((wake) => setTimeout(wake, LOCK_POLL_MS));
        }
        if (claim.process) return void this.follow(entry, claim.process as ProcessRecord);
        await new Promise((wake) => setTimeout(wake, LOCK_POLL_MS));
      }
    } catch {
      // The launcher could not be asked: the job is claimed again at the next pump.
    } finally {
      this.watchingClaims.delete(entry);
      this.pump();
    }
  }

  /** A dependent whose queued job was cancelled: behind its dependency's new run, or failed with it. */
  private queueAgain(entry: ScheduledJob): void {
    entry.record = undefined;
    const failed = entry.dependencies.find((d) => d.state === "error");
    if (failed) return this.failDependent(entry, failed);
    writeJobStatus(entry.target, { state: "waiting", process: null });
    this.move(entry, "waiting");
    this.pump();
  }

  /** Gives a job its launcher lost a while for its own files to say how it ended. */
  private async graceForFiles(entry: ScheduledJob): Promise<void> {
    const deadline = Date.now() + entry.backend.lostGraceMs;
    while (Date.now() < deadline && !this.stopping) {
      if (storedResult(entry.job) || recordedFailure(entry.job) !== undefined) return;
      await new Promise((wake) => setTimeout(wake, Math.min(LOCK_POLL_MS, Math.max(1, deadline - Date.now()))));
    }
  }

  /** Waits while another process (a learn() call, another plan) holds the job. */
  private async waitForLock(entry: ScheduledJob): Promise<void> {
    if (entry.state !== "running") {
      entry.followed = true;
      this.move(entry, "running", { how: "followed" });
    }
    while (!this.stopping && liveLockHolder(entry.job.lockFile)) await new Promise((wake) => setTimeout(wake, LOCK_POLL_MS));
    if (this.stopping) return;
    this.settleFromFiles(entry, { code: null, how: "run by another process" });
  }

  /** What the job's files say once its process is gone. */
  private settleFromFiles(entry: ScheduledJob, exit: ProcessExit): void {
    if (entry.settled) return; // a dependent cancelled in the queue
    let stored: StoredResult | undefined;
    try {
      stored = storedResult<StoredResult>(entry.job);
    } catch (error) {
      return this.finishError(entry, (error as Error).message, "", "failed", exit);
    }
    if (stored) return this.finishDone(entry, stored, false, exit);
    if (exit.lost !== "vanished" && exit.lost !== "unreachable" && liveLockHolder(entry.job.lockFile)) return void this.waitForLock(entry);
    const recorded = recordedFailure(entry.job);
    const message = recorded?.message ?? unrecordedEnd(entry, exit);
    this.finishError(entry, message, tailOf(entry.job.stderrFile), recorded ? failureReasonOfCode(recorded.code) : "failed", exit);
  }

  private finishDone(entry: ScheduledJob, result: StoredResult, cached: boolean, exit?: ProcessExit): void {
    settleJobStatus(entry.target, { state: "done", exitCode: exit?.code ?? null });
    this.move(entry, "done", cached ? { how: "cached" } : {});
    entry.succeed(result, cached);
    this.pump();
  }

  private finishError(entry: ScheduledJob, message: string, stderrTail: string, reason: FailureReason, exit?: ProcessExit): void {
    entry.failure = message;
    // The job's process may have said more (its own reason) in status.json: that word stands.
    const settled = exit?.lost === "unreachable" ? { failureReason: reason } : settleJobStatus(entry.target, { state: "error", failureReason: reason, exitCode: exit?.code ?? null });
    const finalReason = settled.failureReason ?? reason;
    this.move(entry, "error", { failure: message, reason: finalReason });
    entry.fail(new JobFailedError(entry.job, finalReason, message, stderrTail));
    this.failDependentsOf(entry);
    this.pump();
  }
}

/** The job's result if it is done, else undefined (a torn result is the job process's to report). */
function doneMeanwhile(job: Job): StoredResult | undefined {
  try {
    return storedResult<StoredResult>(job);
  } catch {
    return undefined;
  }
}

/** Why a job ended, when its own process did not say: what its launcher saw. */
function unrecordedEnd(entry: ScheduledJob, exit: ProcessExit): string {
  const record = entry.record;
  const slurm = record?.type === "slurm" ? `SLURM job ${record.id}` : "its process";
  if (exit.lost === "vanished") {
    return `${slurm} is no longer known to SLURM (squeue, scontrol: ended past MinJobAge, or a controller restarted without its state), and the job's files do not say how it ended; run the plan again to resume it from its checkpoint`;
  }
  if (exit.lost === "unreachable") return `${exit.how ?? "SLURM did not answer"}; the job may still run: run the plan again once SLURM answers to follow it`;
  if (exit.how === "SIGKILL") return `its process was killed (SIGKILL: the out-of-memory killer, or kill -9) before it could say why; run the plan again to resume it from its checkpoint`;
  if (record?.type === "slurm" && exit.how) {
    return `${slurm} ended ${exit.how}${exit.code !== null ? ` (exit status ${exit.code})` : ""} without the job saying why (scancel, a time limit, a lost node); run the plan again to resume it from its checkpoint`;
  }
  const how = exit.how ? ` (${exit.how})` : exit.code !== null ? ` with status ${exit.code}` : "";
  return `the job's process ended${how} without a result`;
}

/** The job process rebuilds the task from params.json: it must find the same identifier. */
function checkParamsJson(job: Job): void {
  const identifier = paramsIdentifier(job.paramsFile);
  if (identifier !== job.identifier) {
    throw new InternalError(`${job.paramsFile} reads back as the task ${identifier}, not ${job.identifier}: the job process would train another configuration`);
  }
}
