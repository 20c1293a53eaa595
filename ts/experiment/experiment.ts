// experiment(): a plan submits Learners; each runs as its own process through its launcher, in
// the workspace's job directories, recorded as experimaestro records them.
import { existsSync } from "node:fs";
import { resolve } from "node:path";

import { type ConfigOf, configClassOf } from "../config/class.js";
import { Learner } from "../config/classes/learner.js";
import { identifierOf } from "../config/identifiers.js";
import { ConfigError, XpmTorchError } from "../errors.js";
import { watchedPlan } from "../learn.js";
import type { LearnResult, LearnerConfig } from "../learn-types.js";
import { interruptions } from "../run/interrupts.js";
import { type Job, defaultWorkspace, jobOf, prepareJobDirectory, storedResult } from "../workspace/job.js";
import type { FailureReason, JobState } from "../workspace/job-state.js";
import { paramsIdentifier } from "../workspace/params-json.js";
import { readJobStatus, unreadableStatus } from "../workspace/status.js";
import { ExperimentRecords } from "../workspace/xpm-records.js";
import type { Backend } from "./backend.js";
import { cycleThrough, dependenciesOf } from "./dependencies.js";
import { jobLabel, launcherText, stateWords, tagsText } from "./describe.js";
import { ExperimentError, JobFailedError } from "./errors.js";
import { lastLaunch } from "./job-process.js";
import { LocalLauncher, SlurmLauncher } from "./launchers.js";
import { LocalBackend } from "./local.js";
import { type PlannedLoaders, plannedLoaders } from "./outputs.js";
import { ScheduledJob, Scheduler } from "./scheduler.js";
import { SlurmBackend } from "./slurm-backend.js";

export type { FailureReason, JobState } from "../workspace/job-state.js";

/** A launcher configuration: `LocalLauncher.C({...})` or `SlurmLauncher.C({...})`. */
export type LauncherConfig = ConfigOf<typeof LocalLauncher> | ConfigOf<typeof SlurmLauncher>;

/** Tags of a job: shown by `xpm-torch jobs` and experimaestro, never part of an identifier. */
export type Tags = Readonly<Record<string, string | number | boolean>>;

export interface SubmitOptions {
  readonly tags?: Tags;
  /** Where this job runs (default: the experiment's launcher). */
  readonly launcher?: LauncherConfig;
}

export interface ExperimentOptions {
  /**
   * Where jobs go; default `XPM_TORCH_WORKSPACE`, else the nearest `xpm-workspace` folder in the
   * current folder or above it, else `./xpm-workspace`.
   */
  readonly workspace?: string;
  /** Where jobs run unless `submit()` says otherwise; default `LocalLauncher.C({})` (one job at a time). */
  readonly launcher?: LauncherConfig;
  /**
   * Modules each job process imports before it reads its params.json: those that define the
   * plan's own configuration classes (listeners and hooks written in TypeScript).
   */
  readonly imports?: readonly string[];
  /** Stops the experiment as Ctrl-C does. */
  readonly signal?: AbortSignal;
  /** Ctrl-C (SIGINT) and SIGTERM stop the experiment (default true); a second one exits at once. */
  readonly handleSignals?: boolean;
  /** On Ctrl-C, also cancel the SLURM jobs (by default they keep running, and a rerun follows them). */
  readonly cancelSlurmOnInterrupt?: boolean;
  /** A line per job state change; default: printed to stderr. `null`: silent. */
  readonly log?: ((line: string) => void) | null;
  /** Called as each job changes state (after the workspace's records say so). */
  readonly onJobState?: (job: JobHandle, state: JobState) => void;
}

/** A submitted job. */
export interface JobHandle {
  readonly identifier: string;
  readonly jobDir: string;
  readonly state: JobState;
  /** Why it is in error (`dependency`: it never ran), once it is. */
  readonly failureReason: FailureReason | undefined;
  readonly tags: Tags;
  /** The Learner's result once the job is done (a done job's stored one at once). */
  result(): Promise<LearnResult>;
  /** The Learner's models as loaders, usable before it ran: using one makes a dependency. */
  readonly loaders: PlannedLoaders;
}

/** What a finished experiment ran. */
export interface ExperimentSummary {
  readonly name: string;
  readonly runId: string;
  readonly jobs: readonly { readonly identifier: string; readonly jobDir: string; readonly state: JobState; readonly failureReason?: FailureReason; readonly tags: Tags }[];
}

/** The experiment was stopped (Ctrl-C, SIGTERM, its AbortSignal): local jobs wrote a checkpoint. */
export class ExperimentInterruptedError extends XpmTorchError {
  constructor(name: string, readonly unfinished: readonly string[]) {
    super("ERR_INTERRUPTED", `experiment ${JSON.stringify(name)} was interrupted with ${unfinished.length} job(s) unfinished; run the plan again to go on (interrupted jobs resume from their checkpoints)`);
  }
}

/** A job the plan submitted, with the launcher it was submitted with. */
interface Submitted {
  readonly entry: ScheduledJob;
  readonly handle: JobHandle;
  readonly launcher: LauncherConfig;
  readonly launcherKey: string;
  readonly tags: Record<string, string | number | boolean>;
}

/** The plan's view of the experiment: it submits jobs. */
export class Experiment {
  private readonly byIdentifier = new Map<string, Submitted>();
  private readonly backends = new Map<string, Backend>();
  private readonly pending: ScheduledJob[] = [];
  private flushing = false;
  private closed = false;
  private failedWrite: Error | undefined;

  /** @internal */
  constructor(
    readonly name: string,
    readonly workspace: string,
    private readonly defaultLauncher: LauncherConfig,
    private readonly scheduler: Scheduler,
    /** The run's records, opened when the first job is written. */
    private readonly records: () => ExperimentRecords,
    private readonly warn: (line: string) => void,
    private readonly makeBackend: BackendFactory,
  ) {}

  /**
   * Submits a Learner: returns its handle at once. The same configuration submitted twice is
   * one job. A job already done is not run again; one in error runs again. Nothing is written
   * into the workspace before the plan's synchronous part is over: a refusal leaves it as it was.
   * @throws ConfigError for a job that uses the outputs of a task not submitted (and not done),
   * a cycle, or a second submission with another launcher.
   */
  submit(learner: LearnerConfig, options: SubmitOptions = {}): JobHandle {
    if (this.closed) throw new XpmTorchError("ERR_EXPERIMENT", `experiment ${JSON.stringify(this.name)} is over: submit jobs inside its plan`);
    if (!Learner.is(learner)) throw new ConfigError("submit", "takes a Learner configuration (Learner.C({...}))");
    const launcher = options.launcher ?? this.defaultLauncher;
    const launcherKey = JSON.stringify(launcher);
    const identifier = identifierOf(learner);
    const known = this.byIdentifier.get(identifier);
    if (known) return this.submittedAgain(learner, known, launcher, launcherKey, options.tags ?? {});
    const job = jobOf(learner, this.workspace);
    const tags = { ...(options.tags ?? {}) };
    const dependencies = this.dependencyEntries(learner, job, tags);
    const backend = this.backendOf(launcher, launcherKey);
    backend.check(learner, this.jobWords(learner, identifier, tags)).forEach((warning) => this.warn(`xpm-torch ${this.name}: ${warning}`));
    const entry = new ScheduledJob(learner, job, backend, dependencies, tags);
    entry.record = this.recordedProcess(job);
    const handle: JobHandle = {
      identifier,
      jobDir: job.dir,
      get state() {
        return entry.state;
      },
      get failureReason() {
        return entry.failureReason;
      },
      tags,
      result: () => entry.outcome,
      loaders: plannedLoaders(learner, job),
    };
    this.byIdentifier.set(identifier, { entry, handle, launcher, launcherKey, tags });
    this.enqueue(entry);
    return handle;
  }

  /** The same job again: its tags are merged; another launcher is refused. */
  private submittedAgain(learner: LearnerConfig, known: Submitted, launcher: LauncherConfig, launcherKey: string, tags: Tags): JobHandle {
    if (known.launcherKey !== launcherKey) {
      throw new ConfigError(
        "submit.launcher",
        `${this.jobWords(learner, known.handle.identifier, { ...known.tags, ...tags })} was already submitted with another launcher, ${launcherText(known.launcher)}; now with ${launcherText(launcher)}: a job runs in one place`,
      );
    }
    Object.assign(known.tags, tags);
    return known.handle;
  }

  /** `experiment "sweep": job Learner 3f2a9c1b2d4e [lr=0.001]`, for messages. */
  private jobWords(config: object, identifier: string, tags: Readonly<Record<string, unknown>> = {}): string {
    return `experiment ${JSON.stringify(this.name)}: job ${jobLabel(config, identifier, tags)}`;
  }

  /**
   * The process an earlier run of the plan started for the job, from its status.json; from its
   * launch log when status.json cannot be read (a crash mid-write), which is then rewritten.
   */
  private recordedProcess(job: Job): ScheduledJob["record"] {
    const damaged = unreadableStatus(job.dir);
    if (damaged === undefined) return (readJobStatus(job.dir)?.process ?? undefined) as ScheduledJob["record"];
    const launched = lastLaunch(job);
    this.warn(`xpm-torch ${this.name}: ${damaged}; ${launched ? `the job's launch log names its last process (${JSON.stringify(launched)}), which is followed if it still runs` : "its launch log names no process"}`);
    return launched;
  }

  private dependencyEntries(learner: LearnerConfig, job: Job, tags: Tags): ScheduledJob[] {
    const self = this.jobWords(learner, job.identifier, tags);
    return dependenciesOf(learner).map((task) => {
      if (task === learner) throw new ConfigError("submit", `${self} uses its own outputs (a cycle)`);
      const known = this.byIdentifier.get(identifierOf(task));
      if (known) return known.entry;
      if (!Learner.is(task)) throw new ConfigError("submit", `${self} uses an output of a ${configClassOf(task)?.typeId ?? "task"}: only Learners run in experiments`);
      const taskJob = jobOf(task, this.workspace);
      // Done by an earlier plan: part of this experiment as it is (it will not run again).
      if (storedResult(taskJob)) return this.entryOf(this.submit(task as LearnerConfig).identifier);
      const cycle = cycleThrough(learner);
      if (cycle) throw new ConfigError("submit", `${self} is part of a cycle of dependencies: ${cycle.map((t) => jobLabel(t, identifierOf(t))).join(" -> ")}`);
      throw new ConfigError(
        "submit",
        `${self} uses the outputs of the ${jobLabel(task, taskJob.identifier)}, which is neither submitted in this experiment nor done in ${this.workspace}: submit it first`,
      );
    });
  }

  private entryOf(identifier: string): ScheduledJob {
    return this.byIdentifier.get(identifier)!.entry;
  }

  private backendOf(launcher: LauncherConfig, key: string): Backend {
    let backend = this.backends.get(key);
    if (!backend) {
      backend = this.makeBackend(launcher);
      this.backends.set(key, backend);
    }
    return backend;
  }

  /**
   * Jobs are written into the workspace and start once the plan's synchronous part is over, so
   * that a refusal comes before any of them, and leaves the workspace as it was.
   */
  private enqueue(entry: ScheduledJob): void {
    this.pending.push(entry);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      if (this.closed) return;
      for (let next = this.pending.shift(); next; next = this.pending.shift()) {
        if (!this.write(next)) return;
        void this.scheduler.add(next);
      }
    });
  }

  /** Writes a job's folder and its record in this run (seen at once by `xpm-torch jobs` and experimaestro). */
  private write(entry: ScheduledJob): boolean {
    const { config, job } = entry;
    try {
      if (!paramsReadBack(job)) prepareJobDirectory(config, job);
      const dependsOn = entry.dependencies.map((d) => d.job.identifier);
      this.records().addJob({ identifier: job.identifier, taskId: job.typeId, jobDir: job.dir, tags: entry.tags, dependsOn });
      return true;
    } catch (error) {
      // The workspace cannot take the job: nothing more starts, and the experiment says why.
      this.failedWrite = error instanceof Error ? error : new Error(String(error));
      entry.fail(this.failedWrite);
      this.close();
      this.scheduler.halt();
      return false;
    }
  }

  /** @internal What kept a job from being written into the workspace (a full disk, no permission). */
  get writeFailure(): Error | undefined {
    return this.failedWrite;
  }

  /** @internal No more jobs; those not yet handed to the scheduler never start. */
  close(): void {
    this.closed = true;
    for (const entry of this.pending.splice(0)) entry.fail(notStarted(this.name));
  }

  /** @internal The handle of a submitted job. */
  handleOf(identifier: string): JobHandle {
    return this.byIdentifier.get(identifier)!.handle;
  }

  /** @internal */
  get entries(): ScheduledJob[] {
    return [...this.byIdentifier.values()].map((v) => v.entry);
  }

  /** @internal Whether jobs are still waiting to be handed to the scheduler. */
  get hasPending(): boolean {
    return this.pending.length > 0 || this.flushing;
  }
}

function notStarted(name: string): XpmTorchError {
  return new XpmTorchError("ERR_INTERRUPTED", `experiment ${JSON.stringify(name)} stopped before this job started`);
}

/** Whether the job's params.json exists and reads back as its task (a torn one is written again). */
function paramsReadBack(job: Job): boolean {
  if (!existsSync(job.paramsFile)) return false;
  try {
    return paramsIdentifier(job.paramsFile) === job.identifier;
  } catch {
    return false;
  }
}

/** Makes the backend of a launcher (fakes stand in for SLURM and processes in the scheduler's tests). */
export type BackendFactory = (launcher: LauncherConfig) => Backend;

/** The launchers' own backends: processes of this machine, SLURM's commands. */
export const launcherBackend: BackendFactory = (launcher) => {
  if (LocalLauncher.is(launcher)) return new LocalBackend(launcher as ConfigOf<typeof LocalLauncher>);
  if (SlurmLauncher.is(launcher)) return new SlurmBackend(launcher as ConfigOf<typeof SlurmLauncher>);
  throw new ConfigError("launcher", "expected a LocalLauncher or a SlurmLauncher configuration");
};

/**
 * Runs a plan: `plan(xp)` submits jobs with `xp.submit(learner, { tags })` and may await their
 * results. Resolves once every submitted job has ended.
 * @throws ExperimentError when jobs ended in error (each job's JobFailedError in `failures`),
 * ExperimentInterruptedError when stopped, or what the plan itself threw.
 */
export function experiment(name: string, plan: (xp: Experiment) => Promise<void> | void, options: ExperimentOptions = {}): Promise<ExperimentSummary> {
  // Recorded, so that `xpm-torch learn plan.ts` takes a module that runs its plan for a script that ran.
  return watchedPlan(() => runExperiment(name, plan, options, launcherBackend));
}

/** @internal {@link experiment} with the backends `makeBackend` makes. */
export async function runExperiment(
  name: string,
  plan: (xp: Experiment) => Promise<void> | void,
  options: ExperimentOptions,
  makeBackend: BackendFactory,
): Promise<ExperimentSummary> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new ConfigError("experiment", `${JSON.stringify(name)} cannot name an experiment: letters, digits, ".", "_" and "-", not starting with "." or "-"`);
  }
  const workspace = options.workspace ?? defaultWorkspace();
  const log = options.log === undefined ? (line: string) => console.error(line) : options.log;
  // Opened when the first job is written: a plan refused before that leaves no run behind.
  let opened: ExperimentRecords | undefined;
  const records = () => (opened ??= ExperimentRecords.open(workspace, name));
  const scheduler = new Scheduler({
    imports: (options.imports ?? []).map((file) => resolve(file)),
    onState: (entry, state, detail) => {
      records().jobState(entry.job.identifier, state, state === "error" ? detail.reason : undefined);
      const tags = tagsText(entry.tags);
      log?.(`xpm-torch ${name}: ${entry.job.identifier.slice(0, 12)} ${tags ? `[${tags}] ` : ""}${stateWords(state, detail, entry.record, entry.followed)}`);
      options.onJobState?.(xp.handleOf(entry.job.identifier), state);
    },
  });
  const xp = new Experiment(name, workspace, options.launcher ?? LocalLauncher.C({}), scheduler, records, (line) => (log ?? console.warn)(line), makeBackend);
  const { interrupted, planFailed, planError } = await runPlan(xp, scheduler, plan, options);
  const entries = xp.entries;
  const failures = entries.flatMap((e) => (e.state === "error" ? [e] : []));
  const succeeded = failures.length === 0 && !interrupted && !planFailed && !xp.writeFailure;
  // A run that wrote nothing and failed is not recorded; an empty plan that succeeded is.
  if (opened || succeeded) records().finish(succeeded ? "done" : "failed");
  if (interrupted) throw new ExperimentInterruptedError(name, entries.filter((e) => e.state !== "done").map((e) => e.job.dir));
  if (xp.writeFailure) throw xp.writeFailure;
  if (planFailed) throw planError;
  if (failures.length > 0) {
    const errors = await Promise.all(failures.map((f) => f.outcome.then(() => undefined, (e: unknown) => e as JobFailedError)));
    throw new ExperimentError(name, errors.filter((e): e is JobFailedError => e instanceof JobFailedError));
  }
  return {
    name,
    runId: records().runId,
    jobs: entries.map((e) => ({ identifier: e.job.identifier, jobDir: e.job.dir, state: e.state, ...(e.failureReason ? { failureReason: e.failureReason } : {}), tags: { ...e.tags } })),
  };
}

/**
 * Runs the plan, then waits for its jobs: until each has ended, or, once the plan is stopped
 * (Ctrl-C, its signal) or failed, until those that run have (no job is left behind unseen).
 */
async function runPlan(
  xp: Experiment,
  scheduler: Scheduler,
  plan: (xp: Experiment) => Promise<void> | void,
  options: ExperimentOptions,
): Promise<{ interrupted: boolean; planFailed: boolean; planError: unknown }> {
  let interrupted = false;
  const stopHandlers = interruptions(
    () => {
      interrupted = true;
      xp.close();
      void scheduler.stop("interrupt", (j) => j.record?.type === "local" || options.cancelSlurmOnInterrupt === true);
    },
    options,
    "stopping the experiment: its local jobs finish their step and write a checkpoint",
  );
  let planFailed = false;
  let planError: unknown;
  try {
    try {
      await plan(xp);
    } catch (error) {
      planFailed = true;
      planError = error;
      // Nothing more starts (nor is written, when the plan failed in its synchronous part).
      xp.close();
      scheduler.halt();
    }
    while (xp.hasPending) await new Promise((wake) => setImmediate(wake));
    await scheduler.whenIdle();
  } finally {
    stopHandlers();
    xp.close();
  }
  return { interrupted, planFailed, planError };
}
