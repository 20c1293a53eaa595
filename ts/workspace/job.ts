import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";

import { configClassOf } from "../config/class.js";
import { type GeneratedPaths, identifierOf } from "../config/identifiers.js";
import { XpmTorchError } from "../errors.js";
import { generatePaths } from "./generated.js";
import { writeParamsJson } from "./params-json.js";

/** Another process holds the job's lock. */
export class JobLockedError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_JOB_LOCKED", message);
  }
}

/** A file of a job directory cannot be read (a crash mid-write, a full disk). */
export class JobFileError extends XpmTorchError {
  constructor(readonly file: string, message: string) {
    super("ERR_JOB_FILE", message);
  }
}

/** The name of a workspace folder found from the current folder upward. */
const WORKSPACE_FOLDER = "xpm-workspace";

/**
 * The default workspace: `XPM_TORCH_WORKSPACE`; else the nearest `xpm-workspace` folder in the
 * current folder or a folder above it (as git finds `.git`), so that a command run from a
 * subfolder of a project uses the project's; else `./xpm-workspace`, created when first used.
 */
export function defaultWorkspace(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  if (env.XPM_TORCH_WORKSPACE) return resolve(cwd, env.XPM_TORCH_WORKSPACE);
  const start = resolve(cwd);
  for (let dir = start; ; dir = dirname(dir)) {
    const candidate = join(dir, WORKSPACE_FOLDER);
    if (isDirectory(candidate)) return candidate;
    if (dirname(dir) === dir) return join(start, WORKSPACE_FOLDER);
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Every file of a job directory, named in this one place (identifiers.md §11, experimaestro's names). */
export interface JobFiles {
  readonly dir: string;
  /** Last component of the type id: `learner` for `xpm_torch.learner.Learner`. */
  readonly name: string;
  readonly paramsFile: string;
  readonly lockFile: string;
  readonly doneFile: string;
  readonly failedFile: string;
  readonly resultFile: string;
  /** `.experimaestro/status.json`: the job's state (ts/workspace/status.ts). */
  readonly statusFile: string;
  /** `.experimaestro/events/`: the archive of the job's state events. */
  readonly eventsDir: string;
  /** `.experimaestro/launches.jsonl`: each process a scheduler started for the job. */
  readonly launchesFile: string;
  /** `<name>.pid`: experimaestro's record of the process, while it is scheduled or runs. */
  readonly pidFile: string;
  readonly stdoutFile: string;
  readonly stderrFile: string;
  /** The batch script a SlurmLauncher writes. */
  readonly slurmScript: string;
  /** `.experimaestro/launch.claim`: the plan launching the job, so that two plans never both do. */
  readonly claimFile: string;
  /** `.experimaestro/pretrained.json`: the Hub models (id, revision, commit) a run of the job started from. */
  readonly pretrainedFile: string;
}

/** The files of the job directory `<workspace>/jobs/<type id>/<identifier>`. */
export function jobFiles(dir: string): JobFiles {
  const typeId = basename(dirname(dir));
  const name = typeId.slice(typeId.lastIndexOf(".") + 1);
  const meta = join(dir, ".experimaestro");
  return {
    dir,
    name,
    paramsFile: join(dir, "params.json"),
    lockFile: join(dir, `${name}.lock`),
    doneFile: join(dir, `${name}.done`),
    failedFile: join(dir, `${name}.failed`),
    resultFile: join(meta, "result.json"),
    statusFile: join(meta, "status.json"),
    eventsDir: join(meta, "events"),
    launchesFile: join(meta, "launches.jsonl"),
    pidFile: join(dir, `${name}.pid`),
    stdoutFile: join(dir, `${name}.out`),
    stderrFile: join(dir, `${name}.err`),
    slurmScript: join(dir, `${name}.slurm.sh`),
    claimFile: join(meta, "launch.claim"),
    pretrainedFile: join(meta, "pretrained.json"),
  };
}

/** A task's job directory and the files in it. */
export interface Job extends JobFiles {
  readonly workspace: string;
  readonly typeId: string;
  readonly identifier: string;
  readonly paths: GeneratedPaths;
}

export function jobOf(task: object, workspace: string): Job {
  const cls = configClassOf(task);
  if (!cls) throw new TypeError("jobOf() takes a configuration object");
  const typeId = cls.typeId.toLowerCase();
  const identifier = identifierOf(task);
  const dir = join(resolve(workspace), "jobs", typeId, identifier);
  return { ...jobFiles(dir), workspace: resolve(workspace), typeId, identifier, paths: generatePaths(task, dir) };
}

/** Writes `text` to `file` through a temporary file and a rename, so readers never see half. */
export function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

/** The process a job's lock names. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly started: string;
  /** The SLURM job the process runs in: its lock is stale once SLURM no longer runs that job. */
  readonly slurmJob?: string;
}

/** The holder a lock file names; undefined while it is being written, or for garbage. */
export function readLockHolder(lockFile: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(lockFile, "utf8")) as Partial<LockHolder>;
    if (typeof holder.pid !== "number" || typeof holder.host !== "string") return undefined;
    const slurmJob = typeof holder.slurmJob === "string" ? { slurmJob: holder.slurmJob } : {};
    return { pid: holder.pid, host: holder.host, started: String(holder.started ?? ""), ...slurmJob };
  } catch {
    return undefined;
  }
}

/** The lock's holder, unless it is a process of this host that no longer exists. */
export function liveLockHolder(lockFile: string): LockHolder | undefined {
  const holder = readLockHolder(lockFile);
  return holder && (holder.host !== hostname() || processAlive(holder.pid)) ? holder : undefined;
}

/** Whether a process of this host with this pid exists (a signal 0 reaches it, or may not). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes the job's lock, or throws naming its holder. A lock left by a dead process of this host
 * is taken over.
 */
export function acquireLock(job: Job): () => void {
  mkdirSync(job.dir, { recursive: true });
  const slurmJob = process.env.SLURM_JOB_ID;
  const me: LockHolder = { pid: process.pid, host: hostname(), started: new Date().toISOString(), ...(slurmJob ? { slurmJob } : {}) };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(job.lockFile, "wx");
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      return () => rmSync(job.lockFile, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    // Unreadable (being written right now, or garbage): held.
    const holder = readLockHolder(job.lockFile);
    if (holder && holder.host === me.host && !processAlive(holder.pid)) {
      rmSync(job.lockFile, { force: true });
      continue;
    }
    const who = holder ? `process ${holder.pid} on ${holder.host} (since ${holder.started})` : "another process";
    throw new JobLockedError(`job ${job.dir} is already running in ${who}; wait for it, or remove ${job.lockFile} if that process is gone`);
  }
  throw new JobLockedError(`could not take the lock ${job.lockFile}`);
}

/** Creates the job directory and writes params.json. */
export function prepareJobDirectory(task: object, job: Job): void {
  mkdirSync(join(job.dir, ".experimaestro"), { recursive: true });
  writeAtomic(job.paramsFile, writeParamsJson(task, { workspace: job.workspace, jobDir: job.dir, paths: job.paths }));
}

/** The stored result of a finished job, if it finished. */
/**
 * The stored result of a finished job, if it finished.
 * @throws JobFileError when the job is marked done and its result cannot be read.
 */
export function storedResult<T>(job: JobFiles): T | undefined {
  if (!existsSync(job.doneFile) || !existsSync(job.resultFile)) return undefined;
  try {
    return JSON.parse(readFileSync(job.resultFile, "utf8")) as T;
  } catch (error) {
    throw new JobFileError(
      job.resultFile,
      `${job.resultFile} is not JSON (${(error as Error).message}), yet ${job.doneFile} marks the job done: remove ${job.doneFile} to run the job again (it resumes from its last checkpoint)`,
    );
  }
}

/** Records success: the result first, then the done marker that makes it final. */
export function markDone(job: JobFiles, result: unknown): void {
  writeAtomic(job.resultFile, JSON.stringify(result));
  rmSync(job.failedFile, { force: true });
  writeFileSync(job.doneFile, "");
}

export function markFailed(job: JobFiles, error: unknown): void {
  const info = error instanceof XpmTorchError ? { code: error.code, message: error.message } : { message: String(error) };
  writeAtomic(job.failedFile, JSON.stringify({ ...info, time: new Date().toISOString() }));
}
