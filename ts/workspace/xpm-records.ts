// Experiment and job records in experimaestro 2.7's workspace layout, so that its commands
// (`experimaestro experiments list`, `experimaestro jobs list`, its monitor) show our runs:
//   WS/.__experimaestro__                                  marker
//   WS/experiments/<name>/{lock, current -> <run>}
//   WS/experiments/<name>/<run>/{status.json, jobs.jsonl, environment.json, jobs/<task>/<id> -> job, events/}
//   WS/jobs/<task>/<id>/.experimaestro/{status.json, events/}, <script>.pid while it runs
//   WS/.events/{experiments,jobs}/*.jsonl                  live events, removed once final
// status.json files always hold the current state: the events only wake experimaestro's monitor.
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { hostname as osHostname } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";

import { type FailureReason, type JobState, failureReasonOf, jobStateOf } from "../workspace/job-state.js";
import {
  type EventStream,
  FAILURE_NAMES,
  appendEvent,
  isObject,
  liveFiles,
  localIso,
  pad,
  readJson,
  readText,
  readdirSafe,
  writeJsonAtomic,
} from "../workspace/xpm-files.js";

export type TagValue = string | number | boolean;

export interface RecordedJob {
  readonly identifier: string;
  /** The task directory's name under WS/jobs (e.g. `xpm_torch.learner.learner`). */
  readonly taskId: string;
  /** WS/jobs/<taskId>/<identifier>. */
  readonly jobDir: string;
  readonly tags: Readonly<Record<string, TagValue>>;
  /** Identifiers of the jobs it waits for. */
  readonly dependsOn: readonly string[];
}

export interface ListedRun {
  readonly name: string;
  readonly runId: string;
  /** `running`, `done` or `failed`. */
  readonly status: string;
  readonly hostname: string | null;
  readonly jobs: readonly {
    readonly identifier: string;
    readonly taskId: string;
    readonly jobDir: string;
    readonly tags: Record<string, unknown>;
    /** The scheduler's last word on the job in this run (absent before the first). */
    readonly state?: JobState;
    readonly failureReason?: FailureReason;
  }[];
}

const MARKER = ".__experimaestro__";

/** Creates `workspace` and its (empty) experimaestro marker, if missing. */
export function markWorkspace(workspace: string): void {
  mkdirSync(workspace, { recursive: true });
  appendFileSync(join(workspace, MARKER), "");
}

/** One run of an experiment, as experimaestro records it. Only the scheduler process writes it. */
export class ExperimentRecords {
  readonly workspace: string;
  readonly name: string;
  readonly runId: string;
  /** WS/experiments/<name>/<runId>. */
  readonly dir: string;
  private readonly hostname: string;
  private readonly startedAt: Date;
  private endedAt: Date | null = null;
  private status: "running" | "done" | "failed" = "running";
  private readonly jobs = new Map<string, RecordedJob>();
  private readonly jobStates: Record<string, string> = {};
  private readonly dependencies: Record<string, string[]> = {};
  private eventsCount: number | undefined;
  private readonly events: EventStream;

  private constructor(workspace: string, name: string, runId: string, hostname: string, startedAt: Date) {
    this.workspace = workspace;
    this.name = name;
    this.runId = runId;
    this.dir = join(workspace, "experiments", name, runId);
    this.hostname = hostname;
    this.startedAt = startedAt;
    this.events = { live: join(workspace, ".events", "experiments"), prefix: `${name}-`, archive: join(this.dir, "events") };
  }

  /** Starts a new run: its folder, `current` pointing at it, status.json saying `running`. */
  static open(workspace: string, name: string, options: { runId?: string; hostname?: string; now?: Date } = {}): ExperimentRecords {
    if (!/^[^/\\.][^/\\]*$/.test(name)) throw new TypeError(`${JSON.stringify(name)} cannot name an experiment's folder`);
    const ws = resolve(workspace);
    markWorkspace(ws);
    const base = join(ws, "experiments", name);
    mkdirSync(base, { recursive: true });
    appendFileSync(join(base, "lock"), "");
    const now = options.now ?? new Date();
    let runId = options.runId;
    if (runId !== undefined) {
      if (!/^[^/\\.][^/\\]*$/.test(runId) || runId === "current") throw new TypeError(`${JSON.stringify(runId)} cannot name a run`);
      if (existsSync(join(base, runId))) throw new Error(`run ${runId} of experiment ${name} already exists`);
    } else {
      const stamp = runStamp(now);
      runId = stamp;
      for (let n = 1; existsSync(join(base, runId)); n++) runId = `${stamp}.${n}`;
    }
    const records = new ExperimentRecords(ws, name, runId, options.hostname ?? osHostname(), now);
    const previous = currentRunDir(base);
    // Live events left by an earlier run that did not finish go to that run's archive.
    for (const [count, file] of liveFiles(records.events)) {
      const archived = previous ? join(previous, "events", `event-${count}.jsonl`) : undefined;
      if (archived && !existsSync(archived)) {
        mkdirSync(dirname(archived), { recursive: true });
        renameSync(file, archived);
      } else rmSync(file, { force: true });
    }
    mkdirSync(records.dir);
    appendFileSync(join(records.dir, "jobs.jsonl"), "");
    records.writeStatus();
    records.writeEnvironment();
    const link = join(base, `.current-${process.pid}-${randomBytes(4).toString("hex")}`);
    symlinkSync(runId, link);
    renameSync(link, join(base, "current"));
    return records;
  }

  /** Records a job of this run (a second call for the same identifier does nothing). */
  addJob(job: RecordedJob, state: JobState = "waiting"): void {
    this.checkOpen();
    const jobDir = checkJobDir(job, this.workspace);
    if (this.jobs.has(job.identifier)) return;
    this.jobs.set(job.identifier, job);
    const now = new Date();
    const tags = { ...job.tags };
    appendFileSync(join(this.dir, "jobs.jsonl"), `${JSON.stringify({ job_id: job.identifier, task_id: job.taskId, tags, timestamp: now.getTime() / 1000 })}\n`);
    const link = join(this.dir, "jobs", job.taskId, job.identifier);
    mkdirSync(dirname(link), { recursive: true });
    if (!isLink(link)) symlinkSync(relative(dirname(link), jobDir), link);
    if (job.dependsOn.length > 0) this.dependencies[job.identifier] = [...job.dependsOn];
    this.jobStates[job.identifier] = state;
    this.event(now, {
      job_id: job.identifier,
      task_id: job.taskId,
      experiment_id: this.name,
      scheduler_state: state,
      failure_reason: null,
      run_id: this.runId,
      tags: Object.entries(tags).map(([key, value]) => ({ key, value })),
      depends_on: [...job.dependsOn],
      submitted_time: localIso(now),
      event_type: "ExperimentJobStateEvent",
    });
  }

  /** The scheduler's state of a job of this run (a failure reason only with `error`). */
  jobState(identifier: string, state: JobState, failure?: FailureReason): void {
    this.checkOpen();
    const job = this.jobs.get(identifier);
    if (!job) throw new Error(`job ${identifier} is not part of run ${this.runId} of ${this.name}`);
    if (failure !== undefined && state !== "error") throw new TypeError(`a failure reason goes with the error state, not ${state}`);
    const reason = state === "error" ? FAILURE_NAMES[failure ?? "failed"] : null;
    this.jobStates[identifier] = reason ? `error:${reason}` : state;
    this.event(new Date(), {
      job_id: identifier,
      task_id: job.taskId,
      experiment_id: this.name,
      scheduler_state: state,
      failure_reason: reason,
      run_id: this.runId,
      tags: [],
      depends_on: [],
      submitted_time: null,
      event_type: "ExperimentJobStateEvent",
    });
  }

  /** Ends the run: its final status and end time; its live events are archived. */
  finish(status: "done" | "failed"): void {
    this.checkOpen();
    const now = new Date();
    this.status = status;
    this.endedAt = now;
    appendEvent(this.events, runEvent(now, this.name, this.runId, status));
    this.writeStatus();
    for (const [, file] of liveFiles(this.events)) rmSync(file, { force: true });
    this.writeEnvironment();
  }

  private checkOpen(): void {
    if (this.status !== "running") throw new Error(`run ${this.runId} of ${this.name} is over`);
  }

  private event(now: Date, fields: Record<string, unknown>): void {
    this.eventsCount = appendEvent(this.events, { timestamp: now.getTime() / 1000, ...fields });
    this.writeStatus();
  }

  private writeStatus(): void {
    const live = this.status === "running" && this.eventsCount !== undefined;
    writeJsonAtomic(join(this.dir, "status.json"), {
      version: 1,
      experiment_id: this.name,
      run_id: this.runId,
      status: this.status,
      hostname: this.hostname,
      started_at: localIso(this.startedAt),
      ended_at: this.endedAt ? localIso(this.endedAt) : null,
      job_states: this.jobStates,
      dependencies: this.dependencies,
      services: {},
      actions: {},
      run_tags: [],
      ...(live ? { events_count: this.eventsCount } : {}),
      last_updated: localIso(new Date()),
    });
  }

  private writeEnvironment(): void {
    const status = this.status === "running" ? null : this.status === "done" ? "completed" : "failed";
    writeJsonAtomic(join(this.dir, "environment.json"), {
      python_version: null,
      packages: {},
      editable_packages: {},
      run: { hostname: this.hostname, started_at: localIso(this.startedAt), ended_at: this.endedAt ? localIso(this.endedAt) : null, status },
    });
  }
}

/** Every experiment's current run with its jobs, tags and scheduler states. */
export function listExperiments(workspace: string): ListedRun[] {
  const ws = resolve(workspace);
  const runs: ListedRun[] = [];
  for (const name of readdirSafe(join(ws, "experiments")).sort()) {
    const base = join(ws, "experiments", name);
    const dir = currentRunDir(base) ?? latestRunDir(base);
    if (!dir) continue;
    const status = readJson(join(dir, "status.json"));
    const states = isObject(status) && isObject(status.job_states) ? status.job_states : {};
    const jobs: ListedRun["jobs"][number][] = [];
    const seen = new Set<string>();
    for (const line of readText(join(dir, "jobs.jsonl")).split("\n")) {
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        continue;
      }
      if (!isObject(record) || typeof record.job_id !== "string" || typeof record.task_id !== "string" || seen.has(record.job_id)) continue;
      seen.add(record.job_id);
      const [state, reason] = typeof states[record.job_id] === "string" ? String(states[record.job_id]).split(":") : [];
      const jobState = jobStateOf(state);
      const failure = jobState === "error" ? (failureReasonOf(reason) ?? "failed") : undefined;
      jobs.push({
        identifier: record.job_id,
        taskId: record.task_id,
        jobDir: join(ws, "jobs", record.task_id, record.job_id),
        tags: isObject(record.tags) ? { ...record.tags } : {},
        ...(jobState ? { state: jobState } : {}),
        ...(failure ? { failureReason: failure } : {}),
      });
    }
    runs.push({
      name,
      runId: basename(dir),
      status: isObject(status) && typeof status.status === "string" ? status.status : "running",
      hostname: isObject(status) && typeof status.hostname === "string" ? status.hostname : null,
      jobs,
    });
  }
  return runs;
}

function runEvent(now: Date, name: string, runId: string, status: "done" | "failed"): Record<string, unknown> {
  return {
    timestamp: now.getTime() / 1000,
    experiment_id: name,
    run_id: runId,
    status: status === "done" ? "completed" : "failed",
    ended_at: localIso(now),
    event_type: "RunCompletedEvent",
  };
}

// --- helpers

function checkJobDir(job: RecordedJob, workspace: string): string {
  const jobDir = resolve(job.jobDir);
  if (jobDir !== join(workspace, "jobs", job.taskId, job.identifier)) {
    throw new TypeError(`job ${job.identifier}: its folder ${jobDir} is not ${join(workspace, "jobs", job.taskId, job.identifier)}`);
  }
  return jobDir;
}

function currentRunDir(base: string): string | undefined {
  try {
    const dir = resolve(base, readlinkSync(join(base, "current")));
    return existsSync(dir) ? dir : undefined;
  } catch {
    return undefined;
  }
}

function latestRunDir(base: string): string | undefined {
  const runs = readdirSafe(base)
    .filter((name) => !name.startsWith(".") && name !== "current" && existsSync(join(base, name, "status.json")))
    .sort();
  const last = runs[runs.length - 1];
  return last === undefined ? undefined : join(base, last);
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** `YYYYMMDD_HHMMSS` in local time, as experimaestro names runs. */
function runStamp(date: Date): string {
  return `${date.getFullYear()}${pad(date.getMonth() + 1)}${pad(date.getDate())}_${pad(date.getHours())}${pad(date.getMinutes())}${pad(date.getSeconds())}`;
}

