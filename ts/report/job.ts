import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";

import { type FailureReason, type JobState, failureReasonOfCode } from "../workspace/job-state.js";
import { type JobFiles, jobFiles, liveLockHolder, processAlive } from "../workspace/job.js";
import { type ReadJobStatus, readJobStatus } from "../workspace/status.js";
import { listExperiments } from "../workspace/xpm-records.js";


/** A listener's best value of one metric, as stored in the job's result. */
export interface BestValue {
  readonly listener: string;
  readonly metric: string;
  readonly value: number;
  readonly epoch: number;
  readonly model?: string;
}

/** What a job directory says about its job, read without loading libtorch. */
export interface JobInfo {
  readonly dir: string;
  readonly typeId: string;
  readonly identifier: string;
  /** From its own files (done, running, error), else from its scheduler's record. */
  readonly state: JobState;
  /** Why it is in error: `cancelled` (interrupted: it resumes), `memory`, `failed`, `dependency` (never ran). */
  readonly failureReason?: FailureReason;
  /** For jobs in error: the stored error message. */
  readonly error?: string;
  /** Epochs done: from the result, else from the newest checkpoint. */
  readonly epochs: number;
  readonly best: readonly BestValue[];
  /** Listener outputs that are not best values (TypeScript listeners' own results). */
  readonly otherOutputs: Readonly<Record<string, unknown>>;
  readonly stopped: string | null;
  readonly learnedModel: string | null;
  /** Last change of the job directory's markers. */
  readonly modified: Date;
  /** The experiments that submitted it (their current runs). */
  readonly experiments: readonly string[];
  /** Its tags in those experiments. */
  readonly tags: Readonly<Record<string, unknown>>;
  /** Who runs it, as its scheduler recorded: `{ type: "local", pid, host }` or `{ type: "slurm", id }`. */
  readonly process: Readonly<Record<string, unknown>> | null;
}

interface StoredResultFile {
  epochs?: unknown[];
  listeners?: Record<string, unknown>;
  stopped?: string | null;
  learned_model?: string | null;
}

function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch {
    return undefined;
  }
}

function isBest(value: unknown): value is { epoch: number; value: number; model?: string } {
  const v = value as { epoch?: unknown; value?: unknown } | null;
  return typeof v === "object" && v !== null && typeof v.epoch === "number" && typeof v.value === "number";
}

/** Splits listener outputs into best values and the rest. */
function bestValues(listeners: Record<string, unknown>): { best: BestValue[]; other: Record<string, unknown> } {
  const best: BestValue[] = [];
  const other: Record<string, unknown> = {};
  for (const [listener, output] of Object.entries(listeners)) {
    const entries = typeof output === "object" && output !== null ? Object.entries(output) : [];
    const bests = entries.filter(([, v]) => isBest(v));
    if (bests.length === 0 || bests.length !== entries.length) other[listener] = output;
    for (const [metric, v] of bests) {
      const b = v as { epoch: number; value: number; model?: string };
      best.push({ listener, metric, value: b.value, epoch: b.epoch, ...(typeof b.model === "string" ? { model: b.model } : {}) });
    }
  }
  return { best, other };
}

function newestCheckpointEpoch(dir: string): number {
  const checkpoints = join(dir, "checkpoints");
  if (!existsSync(checkpoints)) return 0;
  const epochs = readdirSync(checkpoints)
    .map((name) => /^epoch-(\d+)$/.exec(name)?.[1])
    .filter((e): e is string => e !== undefined)
    .map(Number);
  return epochs.length ? Math.max(...epochs) : 0;
}

/** True when `dir` looks like a job directory (holds params.json). */
export function isJobDir(dir: string): boolean {
  return existsSync(join(dir, "params.json"));
}

/**
 * Reads a job directory `<workspace>/jobs/<type id>/<identifier>/`.
 * @throws Error when `dir` holds no params.json.
 */
export function readJob(dir: string): JobInfo {
  if (!isJobDir(dir)) throw new Error(`${dir} is not a job directory (no params.json); job directories are <workspace>/jobs/<type id>/<identifier>/`);
  const files = jobFiles(dir);
  const result = readJson<StoredResultFile>(files.resultFile);
  const done = existsSync(files.doneFile) && result !== undefined;
  const failed = readJson<{ code?: string; message?: string }>(files.failedFile);
  const recorded = readJobStatus(dir);
  const { state, failureReason, error } = done ? { state: "done" as const } : stateFromFiles(files, recorded, failed);
  const { best, other } = bestValues(done ? (result.listeners ?? {}) : {});
  const modified = [files.doneFile, files.failedFile, files.lockFile, files.paramsFile]
    .filter((f) => existsSync(f))
    .map((f) => statSync(f).mtime)
    .reduce((a, b) => (a > b ? a : b), new Date(0));
  return {
    dir,
    typeId: basename(dirname(dir)),
    identifier: basename(dir),
    state,
    ...(failureReason ? { failureReason } : {}),
    ...(error !== undefined ? { error } : {}),
    epochs: done ? (result.epochs?.length ?? 0) : newestCheckpointEpoch(dir),
    best,
    otherOutputs: other,
    stopped: done ? (result.stopped ?? null) : null,
    learnedModel: done ? (result.learned_model ?? null) : null,
    modified,
    experiments: [],
    tags: {},
    process: state === "done" ? null : (recorded?.process ?? null),
  };
}

/** Where a job that is not done stands: its lock, its process, then what was recorded. */
function stateFromFiles(
  files: JobFiles,
  recorded: ReadJobStatus | undefined,
  failed: { code?: string; message?: string } | undefined,
): { state: JobState; failureReason?: FailureReason; error?: string } {
  if (liveLockHolder(files.lockFile)) return { state: "running" };
  if (recorded && (recorded.state === "waiting" || recorded.state === "ready")) return { state: recorded.state };
  if (recorded && (recorded.state === "scheduled" || recorded.state === "running") && processMayLive(recorded.process)) return { state: recorded.state };
  if (failed) return { state: "error", failureReason: failureReasonOfCode(failed.code), error: failed.message ?? "" };
  if (recorded?.state === "error") return { state: "error", failureReason: recorded.failureReason ?? "failed", error: "" };
  if (recorded && recorded.state !== "unscheduled" && recorded.state !== "waiting" && recorded.state !== "ready") {
    return { state: "error", failureReason: "failed", error: `its process is gone, and the job's files do not say how it ended (killed?); running it again resumes it` };
  }
  return { state: "unscheduled" };
}

/** Whether a recorded process may still run: a SLURM job (asking SLURM is not for a report), or a live process of this host. */
function processMayLive(record: Readonly<Record<string, unknown>> | null): boolean {
  if (record === null) return false;
  if (record.type !== "local") return true;
  return record.host !== hostname() || (typeof record.pid === "number" && processAlive(record.pid));
}

/** Every job of a workspace, newest first, with the experiments that submitted it and its tags. */
export function listJobs(workspace: string): JobInfo[] {
  const submitted = new Map<string, { experiments: string[]; tags: Record<string, unknown> }>();
  for (const run of listExperiments(workspace)) {
    for (const job of run.jobs) {
      const entry = submitted.get(job.jobDir) ?? { experiments: [], tags: {} };
      entry.experiments.push(run.name);
      Object.assign(entry.tags, job.tags);
      submitted.set(job.jobDir, entry);
    }
  }
  return jobDirs(resolve(workspace))
    .map((dir) => ({ ...readJob(dir), ...submitted.get(dir) }))
    .sort((a, b) => b.modified.getTime() - a.modified.getTime());
}

function jobDirs(workspace: string): string[] {
  const root = join(workspace, "jobs");
  if (!existsSync(root)) return [];
  const dirs: string[] = [];
  for (const typeId of readdirSync(root)) {
    const typeDir = join(root, typeId);
    if (!statSync(typeDir).isDirectory()) continue;
    for (const id of readdirSync(typeDir)) {
      const dir = join(typeDir, id);
      if (isJobDir(dir)) dirs.push(dir);
    }
  }
  return dirs;
}
