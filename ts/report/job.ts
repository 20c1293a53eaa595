import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";

import { listExperiments } from "../experiment/xpm-records.js";
import { type ReadJobStatus, readJobStatus } from "../workspace/status.js";
import { processAlive } from "../workspace/job.js";

/**
 * Where a job stands: from its own files (done, running, failed, interrupted, incomplete), or, for
 * a job of an experiment not yet run, from its scheduler (waiting, ready, scheduled, dependency
 * failed).
 */
export type JobState = "done" | "running" | "failed" | "interrupted" | "incomplete" | "waiting" | "ready" | "scheduled" | "dependency failed";

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
  readonly state: JobState;
  /** For failed and interrupted jobs: the stored error message. */
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
  const typeId = basename(dirname(dir));
  const name = typeId.slice(typeId.lastIndexOf(".") + 1);
  const marker = (suffix: string) => join(dir, `${name}.${suffix}`);
  const result = readJson<StoredResultFile>(join(dir, ".experimaestro", "result.json"));
  const done = existsSync(marker("done")) && result !== undefined;
  const lock = readJson<{ pid?: number; host?: string }>(marker("lock"));
  const failed = readJson<{ code?: string; message?: string }>(marker("failed"));
  const scheduled = readJobStatus(dir);
  let state: JobState;
  if (done) state = "done";
  else if (existsSync(marker("lock")) && (lock?.host !== hostname() || (typeof lock.pid === "number" && processAlive(lock.pid)))) state = "running";
  else if (scheduled && schedulerSays(scheduled)) state = schedulerSays(scheduled)!;
  else if (failed) state = failed.code === "ERR_INTERRUPTED" ? "interrupted" : "failed";
  else state = "incomplete";
  const { best, other } = bestValues(done ? (result.listeners ?? {}) : {});
  const modified = [marker("done"), marker("failed"), marker("lock"), join(dir, "params.json")]
    .filter((f) => existsSync(f))
    .map((f) => statSync(f).mtime)
    .reduce((a, b) => (a > b ? a : b), new Date(0));
  return {
    dir,
    typeId,
    identifier: basename(dir),
    state,
    ...(state === "failed" || state === "interrupted" ? { error: failed?.message ?? "" } : {}),
    epochs: done ? (result.epochs?.length ?? 0) : newestCheckpointEpoch(dir),
    best,
    otherOutputs: other,
    stopped: done ? (result.stopped ?? null) : null,
    learnedModel: done ? (result.learned_model ?? null) : null,
    modified,
    experiments: [],
    tags: {},
    process: state === "done" ? null : (scheduled?.process ?? null),
  };
}

/** What the scheduler's record says of a job whose own files say nothing yet. */
function schedulerSays(status: ReadJobStatus): JobState | undefined {
  if (status.state === "waiting" || status.state === "ready") return status.state;
  if (status.state === "error" && status.failureReason === "dependency") return "dependency failed";
  const local = status.process?.type === "local" ? status.process : undefined;
  // Queued in SLURM, or started here and not yet holding its lock.
  if (status.state === "scheduled" || status.state === "running") {
    if (!local) return status.state === "scheduled" && status.process ? "scheduled" : undefined;
    return local.host === hostname() && typeof local.pid === "number" && processAlive(local.pid) ? "running" : undefined;
  }
  return undefined;
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
