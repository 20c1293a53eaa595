// A job's `.experimaestro/status.json` and its state events, as experimaestro 2.7 reads them. Two
// processes write it: the job's own and the scheduler of a plan (ts/workspace/job-state.ts says
// which field is whose); each write goes through a temporary file and a rename.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

import { type FailureReason, type JobState, failureReasonOf, isFinal, jobStateOf } from "./job-state.js";
import { jobFiles } from "./job.js";
import { type EventStream, FAILURE_NAMES, appendEvent, isObject, liveFiles, localIso, readJson, timeOf, writeJsonAtomic } from "./xpm-files.js";

/** Which job a status is of: its folder is `WS/jobs/<taskId>/<identifier>`. */
export interface StatusTarget {
  readonly jobDir: string;
  readonly identifier: string;
  readonly taskId: string;
}

export interface JobStatus {
  readonly state: JobState;
  /** For `error` only (default `failed`). */
  readonly failureReason?: FailureReason | null;
  /** The scheduler's view when it differs from the job's own (default: `state`). */
  readonly schedulerState?: JobState;
  /** Milliseconds since the epoch; left out, kept from the recorded status or set by the state. */
  readonly startedTime?: number | null;
  readonly endedTime?: number | null;
  readonly exitCode?: number | null;
  readonly retryCount?: number;
  /**
   * The process: `{type: "local", pid, host}` or `{type: "slurm", id}` (recorded with experimaestro's
   * `pid` key beside `id`). Left out, kept from the recorded status while the job is not over.
   */
  readonly process?: Readonly<Record<string, unknown>> | null;
  /** The run's progress levels; left out, kept from the recorded status (emptied by `waiting` and `scheduled` with a new process). */
  readonly progress?: readonly ProgressLevel[];
}

/** One level of a job's progress, as experimaestro's `progress(value, level, desc)` reports it. */
export interface ProgressLevel {
  readonly level: number;
  /** Between 0 and 1. */
  readonly progress: number;
  readonly desc: string | null;
}

export interface ReadJobStatus extends JobStatus {
  readonly failureReason: FailureReason | null;
  readonly schedulerState: JobState;
  readonly startedTime: number | null;
  readonly endedTime: number | null;
  readonly exitCode: number | null;
  readonly retryCount: number;
  readonly process: Record<string, unknown> | null;
  readonly progress: readonly ProgressLevel[];
}

/**
 * Writes a job's `.experimaestro/status.json` as it is told (atomically) and its event;
 * `<script>.pid` while it is scheduled or runs. The scheduler writes through
 * {@link noteSchedulerState} and {@link settleJobStatus}, which keep what the job's own process said.
 */
export function writeJobStatus(job: StatusTarget, status: JobStatus): void {
  const jobDir = resolve(job.jobDir);
  const files = jobFiles(jobDir);
  if (basename(jobDir) !== job.identifier || basename(dirname(jobDir)) !== job.taskId) {
    throw new TypeError(`${jobDir} is not the folder of job ${job.taskId}/${job.identifier}`);
  }
  const previous = readJobStatus(jobDir);
  const now = Date.now();
  const { state } = status;
  const over = state === "done" || state === "error";
  const queued = state === "waiting" || state === "ready" || state === "scheduled";
  const keptStart = previous && previous.state !== "waiting" && previous.state !== "ready" && previous.state !== "scheduled" ? previous.startedTime : null;
  const started = status.startedTime !== undefined ? status.startedTime : queued ? null : state === "running" ? (previous?.state === "running" ? keptStart : now) : keptStart;
  const ended = status.endedTime !== undefined ? status.endedTime : !over ? null : previous?.state === state && previous.endedTime !== null ? previous.endedTime : now;
  const exitCode = status.exitCode !== undefined ? status.exitCode : over ? (previous?.exitCode ?? null) : null;
  const retryCount = status.retryCount ?? previous?.retryCount ?? 0;
  const processRecord = status.process !== undefined ? status.process : over ? null : (previous?.process ?? null);
  const failure = state === "error" ? FAILURE_NAMES[status.failureReason ?? "failed"] : null;
  const schedulerState = status.schedulerState ?? state;
  const xpmProcess = processRecord ? experimaestroProcess(processRecord) : null;

  const events = jobEvents(job);
  const progress = status.progress ?? (state === "waiting" || (state === "scheduled" && status.process !== undefined) ? [] : (previous?.progress ?? []));
  const count = appendEvent(events, {
    timestamp: now / 1000,
    job_id: job.identifier,
    task_id: job.taskId,
    state,
    failure_reason: failure,
    started_time: started === null ? null : localIso(new Date(started)),
    ended_time: ended === null ? null : localIso(new Date(ended)),
    exit_code: exitCode,
    retry_count: retryCount,
    progress,
    event_type: "JobStateChangedEvent",
  });
  writeJsonAtomic(files.statusFile, {
    job_id: job.identifier,
    task_id: job.taskId,
    path: jobDir,
    state,
    failure_reason: failure,
    scheduler_state: schedulerState,
    scheduler_failure_reason: schedulerState === "error" ? (failure ?? FAILURE_NAMES.failed) : null,
    started_time: started === null ? null : localIso(new Date(started)),
    ended_time: ended === null ? null : localIso(new Date(ended)),
    exit_code: exitCode,
    retry_count: retryCount,
    resumable: false,
    progress,
    process: xpmProcess,
    ...(over ? {} : { events_count: count }),
  });
  if (over) for (const [, file] of liveFiles(events)) rmSync(file, { force: true });
  if (xpmProcess && (state === "scheduled" || state === "running")) writeJsonAtomic(files.pidFile, xpmProcess, false);
  else rmSync(files.pidFile, { force: true });
}

/** A job's recorded status (ours or experimaestro's), or undefined when none is readable. */
export function readJobStatus(jobDir: string): ReadJobStatus | undefined {
  const raw = readJson(jobFiles(jobDir).statusFile);
  if (!isObject(raw)) return undefined;
  const state = jobStateOf(raw.state);
  if (!state) return undefined;
  const processRecord = isObject(raw.process) ? raw.process : null;
  return {
    state,
    failureReason: state === "error" ? (failureReasonOf(raw.failure_reason) ?? "failed") : null,
    schedulerState: jobStateOf(raw.scheduler_state) ?? state,
    startedTime: timeOf(raw.started_time),
    endedTime: timeOf(raw.ended_time),
    exitCode: typeof raw.exit_code === "number" ? raw.exit_code : null,
    retryCount: typeof raw.retry_count === "number" ? raw.retry_count : 0,
    process: processRecord,
    progress: Array.isArray(raw.progress) ? raw.progress.flatMap(progressLevelOf) : [],
  };
}

function progressLevelOf(value: unknown): ProgressLevel[] {
  if (!isObject(value) || typeof value.level !== "number" || typeof value.progress !== "number") return [];
  return [{ level: value.level, progress: value.progress, desc: typeof value.desc === "string" ? value.desc : null }];
}

/** The job's event files: the live one experimaestro's monitor watches, and the job's archive. */
function jobEvents(job: StatusTarget): EventStream {
  const jobDir = resolve(job.jobDir);
  return {
    live: join(dirname(dirname(dirname(jobDir))), ".events", "jobs"),
    prefix: `${createHash("sha256").update(job.taskId).digest("hex").slice(0, 8)}-${job.identifier}-`,
    archive: jobFiles(jobDir).eventsDir,
  };
}

/**
 * The job's progress, written by its own process: a `JobProgressEvent` for the level that moved,
 * and the `progress` list of status.json (experimaestro's monitor reads either). Levels below
 * `level` are dropped, as experimaestro does. Nothing else of status.json changes.
 */
export function recordProgress(target: StatusTarget, level: ProgressLevel, levels: readonly ProgressLevel[]): void {
  if (!readJobStatus(target.jobDir)) return;
  const count = appendEvent(jobEvents(target), {
    timestamp: Date.now() / 1000,
    job_id: target.identifier,
    task_id: target.taskId,
    level: level.level,
    progress: level.progress,
    desc: level.desc,
    event_type: "JobProgressEvent",
  });
  const file = jobFiles(resolve(target.jobDir)).statusFile;
  const raw = readJson(file);
  if (isObject(raw)) writeJsonAtomic(file, { ...raw, progress: levels, ...("events_count" in raw ? { events_count: count } : {}) });
}

/** experimaestro's process record: a SLURM job's id also under `pid`. */
function experimaestroProcess(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (record.type === "slurm" && record.pid === undefined && record.id !== undefined) return { ...record, pid: String(record.id) };
  return { ...record };
}

/**
 * The scheduler's word once a job's process is gone. An outcome the process recorded itself (its
 * own `done`, or `error` with its reason) stands: only the exit code and the process record change.
 * Returns the outcome the file then holds.
 */
export function settleJobStatus(target: StatusTarget, outcome: { readonly state: "done" | "error"; readonly failureReason?: FailureReason; readonly exitCode: number | null }): { state: "done" | "error"; failureReason: FailureReason | null } {
  const recorded = readJobStatus(target.jobDir);
  if (recorded && isFinal(recorded.state)) {
    writeJobStatus(target, { state: recorded.state, failureReason: recorded.failureReason, exitCode: outcome.exitCode, process: null });
    return { state: recorded.state as "done" | "error", failureReason: recorded.failureReason };
  }
  writeJobStatus(target, { ...outcome, process: null });
  return { state: outcome.state, failureReason: outcome.state === "error" ? (outcome.failureReason ?? "failed") : null };
}

/**
 * Why a job's status.json cannot be read: undefined when it is missing or readable, else what is
 * wrong (a crash mid-write, a full disk). Such a file is rewritten at the job's next state.
 */
export function unreadableStatus(jobDir: string): string | undefined {
  const file = jobFiles(jobDir).statusFile;
  if (!existsSync(file)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    return `${file} is not JSON (${(error as Error).message})`;
  }
  if (!isObject(raw) || !jobStateOf(raw.state)) return `${file} holds no job state`;
  return undefined;
}

/**
 * The scheduler's `scheduled` or `running` for a job it follows: once the job's own process has
 * said where it stands (`running`, or its outcome), that state stays, and only the scheduler's
 * view and the process record change.
 */
export function noteSchedulerState(target: StatusTarget, schedulerState: "scheduled" | "running", processRecord: Readonly<Record<string, unknown>> | null): void {
  const recorded = readJobStatus(target.jobDir);
  const spoke = recorded !== undefined && (recorded.state === "running" || isFinal(recorded.state));
  writeJobStatus(target, spoke ? { state: recorded.state, failureReason: recorded.failureReason, schedulerState, process: processRecord } : { state: schedulerState, process: processRecord });
}
