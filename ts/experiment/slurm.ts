// The SLURM side of the SlurmLauncher: the batch script of a job, and sbatch, squeue, scontrol
// and scancel. No scheduling decisions are taken here.
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

import { XpmTorchError } from "../errors.js";

/** What a SlurmLauncher configures (its fields, all optional). */
export interface SlurmOptions {
  readonly partition?: string;
  readonly account?: string;
  readonly qos?: string;
  readonly time?: string;
  /** Unused here: the launcher folds it into {@link SlurmJobSpec.nodes}. */
  readonly nodes?: number;
  readonly gpus_per_node?: number;
  readonly cpus_per_task?: number;
  readonly mem?: string;
  readonly constraint?: string;
  /** Further `#SBATCH` options, written last (so they override the lines above). */
  readonly sbatch_args?: readonly string[];
}

/** One job to submit. */
export interface SlurmJobSpec {
  /** `--job-name`. */
  readonly name: string;
  /** Where the script is written (in the job directory). */
  readonly scriptFile: string;
  /** The job's output files (append mode, so that a requeued run adds to them). */
  readonly stdout: string;
  readonly stderr: string;
  readonly workdir: string;
  /** What each task runs. */
  readonly command: readonly string[];
  /** Exported by the script. */
  readonly env: Readonly<Record<string, string>>;
  /** Ranks per node: 1, or the data-parallel devices per node. */
  readonly tasksPerNode: number;
  readonly nodes: number;
  /** SLURM job ids that must complete successfully first (`--dependency=afterok:…`). */
  readonly afterOk: readonly string[];
  /** Seconds before the time limit at which the job is told to checkpoint (`--signal=B:USR1@…`). */
  readonly signalSeconds: number;
}

/** A SLURM command failed, or a job cannot be written as a batch script. */
export class SlurmError extends XpmTorchError {
  /** The command at fault (`sbatch`, `squeue`, …), when one ran. */
  readonly command: string | undefined;
  /** What the command wrote on its standard error. */
  readonly stderr: string | undefined;

  constructor(message: string, details: { readonly command?: string; readonly stderr?: string } = {}) {
    super("ERR_SLURM", message);
    this.command = details.command;
    this.stderr = details.stderr;
  }
}

/** A job's state, from SLURM's JOB STATE CODES. */
export type SlurmJobState =
  | "pending"
  | "running"
  | "suspended"
  | "completing"
  | "completed"
  | "failed"
  | "cancelled"
  | "timeout"
  | "preempted"
  | "requeued"
  | "unknown";

export interface SlurmJobStatus {
  readonly id: string;
  readonly state: SlurmJobState;
  /** SLURM's own state, e.g. `PENDING`, `OUT_OF_MEMORY`. */
  readonly slurmState: string;
  /** SLURM's reason, e.g. `Resources`, `DependencyNeverSatisfied`; absent when `None`. */
  readonly reason?: string;
  /** The batch script's exit status (from `scontrol`, once the job ended). */
  readonly exitCode?: number;
  /** The signal that ended it, when one did. */
  readonly signal?: number;
  /** How many times the job was requeued (from `scontrol`). */
  readonly restarts?: number;
}

/** States after which a job does not run again. */
export const SLURM_FINAL_STATES: ReadonlySet<SlurmJobState> = new Set(["completed", "failed", "cancelled", "timeout", "preempted"]);

const STATES: Readonly<Record<string, SlurmJobState>> = {
  PENDING: "pending",
  CONFIGURING: "pending",
  RESV_DEL_HOLD: "pending",
  RUNNING: "running",
  RESIZING: "running",
  SIGNALING: "running",
  STOPPED: "running",
  SUSPENDED: "suspended",
  COMPLETING: "completing",
  STAGE_OUT: "completing",
  COMPLETED: "completed",
  FAILED: "failed",
  BOOT_FAIL: "failed",
  NODE_FAIL: "failed",
  OUT_OF_MEMORY: "failed",
  SPECIAL_EXIT: "failed",
  CANCELLED: "cancelled",
  REVOKED: "cancelled",
  TIMEOUT: "timeout",
  DEADLINE: "timeout",
  PREEMPTED: "preempted",
  REQUEUED: "requeued",
  REQUEUE_HOLD: "requeued",
  REQUEUE_FED: "requeued",
};

/** Maps a SLURM state (`CANCELLED by 0`, `COMPLETING+` included) to ours. */
export function slurmJobState(raw: string): SlurmJobState {
  const base = raw.trim().split(/[\s+]/)[0]!.toUpperCase();
  return STATES[base] ?? "unknown";
}

// ---------------------------------------------------------------------------------------------
// The batch script

const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** Quotes a word for bash (single quotes; left bare when nothing in it is special). */
export function shellQuote(word: string): string {
  if (word.includes("\0")) throw new SlurmError(`SlurmLauncher: an argument contains a NUL character, which no command line can carry: ${JSON.stringify(word)}`);
  if (SAFE_WORD.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** An `#SBATCH --option=value` line; sbatch reads quotes and backslashes in it as a shell would. */
function directive(option: string, value: string | number): string {
  const text = String(value);
  if (/[\n\r\0]/.test(text)) throw new SlurmError(`SlurmLauncher: ${option} cannot contain a line break: ${JSON.stringify(text)}`);
  if (!/[\s"'#\\]/.test(text)) return `#SBATCH ${option}=${text}`;
  return `#SBATCH ${option}="${text.replace(/[\\"]/g, "\\$&")}"`;
}

/** An sbatch_args entry: `--option=value` with its value quoted when needed, anything else as it is. */
function extraDirective(arg: string): string {
  if (/[\n\r\0]/.test(arg)) throw new SlurmError(`SlurmLauncher: sbatch_args entry ${JSON.stringify(arg)} contains a line break`);
  const match = /^(--[A-Za-z][\w-]*)=(.*)$/s.exec(arg);
  if (match) return directive(match[1]!, match[2]!);
  if (/["'\\]/.test(arg)) throw new SlurmError(`SlurmLauncher: sbatch_args entry ${JSON.stringify(arg)} has quotes; write it as --option=value, which is quoted for sbatch`);
  return `#SBATCH ${arg}`;
}

/** sbatch expands `%j`, `%N`, … in output file names: a literal `%` is written `%%`. */
function outputPattern(path: string): string {
  // A backslash turns the expansion off and is dropped from the name.
  if (path.includes("\\")) throw new SlurmError(`SlurmLauncher: sbatch cannot write a job's output to a path with a backslash: ${path}`);
  return path.replace(/%/g, "%%");
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const positiveInteger = (what: string, value: number): number => {
  if (!Number.isInteger(value) || value < 1) throw new SlurmError(`SlurmLauncher: ${what} must be a positive integer, not ${value}`);
  return value;
};

/**
 * The batch script of a job. It runs the command (as `srun`, one task per rank, when the job has
 * more than one task), and on SIGUSR1 — `signalSeconds` before the time limit, or a preemption
 * notice — sends SIGTERM once to the run (which writes a checkpoint and exits), waits for it and
 * requeues the job, which then resumes from that checkpoint. The run must exit non-zero when it
 * stopped before the end: a run that finished meanwhile is not requeued. SIGUSR2 stops the run
 * the same way without requeue; SIGTERM (sent by SLURM to every process of the job) only waits.
 */
export function sbatchScript(options: SlurmOptions, spec: SlurmJobSpec): string {
  const nodes = positiveInteger("nodes", spec.nodes);
  const tasksPerNode = positiveInteger("tasksPerNode", spec.tasksPerNode);
  const signalSeconds = positiveInteger("signalSeconds", spec.signalSeconds);
  if (spec.command.length === 0) throw new SlurmError("SlurmLauncher: the job has no command to run");
  for (const id of spec.afterOk) {
    if (!/^\d+(_\d+)?$/.test(id)) throw new SlurmError(`SlurmLauncher: ${JSON.stringify(id)} is not a SLURM job id (dependency of ${spec.name})`);
  }
  const lines = ["#!/bin/bash"];
  lines.push(directive("--job-name", spec.name));
  lines.push(directive("--output", outputPattern(spec.stdout)));
  lines.push(directive("--error", outputPattern(spec.stderr)));
  lines.push(directive("--chdir", spec.workdir));
  if (options.time !== undefined) lines.push(directive("--time", options.time));
  if (options.partition !== undefined) lines.push(directive("--partition", options.partition));
  if (options.account !== undefined) lines.push(directive("--account", options.account));
  if (options.qos !== undefined) lines.push(directive("--qos", options.qos));
  lines.push(directive("--nodes", nodes));
  lines.push(directive("--ntasks-per-node", tasksPerNode));
  if (options.gpus_per_node !== undefined) lines.push(directive("--gpus-per-node", options.gpus_per_node));
  if (options.cpus_per_task !== undefined) lines.push(directive("--cpus-per-task", options.cpus_per_task));
  if (options.mem !== undefined) lines.push(directive("--mem", options.mem));
  if (options.constraint !== undefined) lines.push(directive("--constraint", options.constraint));
  lines.push("#SBATCH --open-mode=append");
  lines.push("#SBATCH --requeue");
  lines.push(`#SBATCH --signal=B:USR1@${signalSeconds}`);
  if (spec.afterOk.length > 0) lines.push(`#SBATCH --dependency=afterok:${spec.afterOk.join(":")}`);
  for (const arg of options.sbatch_args ?? []) lines.push(extraDirective(arg));

  lines.push("");
  lines.push("# Written by xpm-torch. SIGUSR1 (time limit near, or preemption): SIGTERM to the run, which");
  lines.push("# writes a checkpoint and exits; then the job is requeued and resumes from it.");
  for (const [name, value] of Object.entries(spec.env)) {
    if (!ENV_NAME.test(name)) throw new SlurmError(`SlurmLauncher: ${JSON.stringify(name)} is not an environment variable name`);
    lines.push(`export ${name}=${shellQuote(value)}`);
  }
  const command = spec.command.map(shellQuote).join(" ");
  const several = nodes * tasksPerNode > 1;
  const srun = ["srun", `--nodes=${nodes}`, `--ntasks-per-node=${tasksPerNode}`];
  // srun of SLURM 22.05 does not inherit the batch job's --cpus-per-task.
  if (options.cpus_per_task !== undefined) srun.push(`--cpus-per-task=${options.cpus_per_task}`);
  // Not 1: a rank that exits first after SIGTERM would get its peers killed while rank 0 checkpoints.
  srun.push("--kill-on-bad-exit=0");
  lines.push(
    "",
    "xpm_child=",
    "xpm_stopped=0",
    "xpm_requeue=0",
    "xpm_interrupt=0",
    "xpm_stop() {",
    '  [ "$xpm_stopped" = 1 ] && return',
    "  xpm_stopped=1",
    several
      ? '  scancel --signal=TERM "$SLURM_JOB_ID"  # each rank, once (srun answers SIGTERM with SIGKILL)'
      : '  kill -TERM "$xpm_child" 2>/dev/null',
    "}",
    "xpm_on_usr1() {",
    '  echo "xpm-torch: SIGUSR1 (time limit near, or preemption): asking the run to write a checkpoint" >&2',
    "  xpm_requeue=1",
    '  [ -n "$xpm_child" ] && xpm_stop',
    "}",
    "# SIGUSR2 (cancelJob with TERM): the run stops after a checkpoint; no requeue.",
    "xpm_on_usr2() {",
    '  echo "xpm-torch: SIGUSR2: asking the run to write a checkpoint and stop" >&2',
    "  xpm_interrupt=1",
    '  [ -n "$xpm_child" ] && xpm_stop',
    "}",
    "# SIGTERM (scancel, time limit, preemption) reaches the run itself from SLURM: wait for it.",
    "xpm_on_term() { xpm_stopped=1; }",
    "trap xpm_on_usr1 USR1",
    "trap xpm_on_usr2 USR2",
    "trap xpm_on_term TERM",
    'echo "xpm-torch: SLURM job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) starts on $(hostname) at $(date \'+%F %T\')" >&2',
    `${several ? `${srun.join(" ")} ` : ""}${command} &`,
    "xpm_child=$!",
    '[ "$xpm_requeue$xpm_interrupt" != 00 ] && xpm_stop',
    'while kill -0 "$xpm_child" 2>/dev/null; do wait "$xpm_child"; done',
    'wait "$xpm_child"',
    "xpm_status=$?",
    'if [ "$xpm_requeue" = 1 ] && [ "$xpm_interrupt" = 0 ] && [ "$xpm_status" != 0 ]; then',
    '  echo "xpm-torch: the run stopped (exit status $xpm_status); requeueing SLURM job $SLURM_JOB_ID" >&2',
    '  scontrol requeue "$SLURM_JOB_ID" || echo "xpm-torch: scontrol requeue failed; the job ends here" >&2',
    "fi",
    'exit "$xpm_status"',
    "",
  );
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------
// The commands

interface Ran {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number;
}

const TIMEOUT_MS = 120_000;

function missing(command: string): SlurmError {
  return new SlurmError(
    `SlurmLauncher: cannot run "${command}": it is not on PATH. Install SLURM's client commands (Debian/Ubuntu: apt-get install slurm-client or slurm-wlm), load your cluster's SLURM module, or add the directory holding ${command} to PATH`,
    { command },
  );
}

/**
 * Throws the error naming what to install when `command` is not on the PATH of `env`: a plan is
 * refused before it starts rather than failing job by job.
 */
export function requireCommand(command: string, env: NodeJS.ProcessEnv = process.env): void {
  const dirs = (env.PATH ?? "").split(delimiter).filter(Boolean);
  const found = dirs.some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) throw missing(command);
}

/** Runs a SLURM command; resolves with its exit status, rejects only when it could not run. */
function slurm(command: string, args: readonly string[], env: NodeJS.ProcessEnv | undefined): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: env ?? process.env, encoding: "utf8", timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (!error) return resolve({ stdout, stderr, code: 0 });
      const cause = error as NodeJS.ErrnoException & { killed?: boolean; code?: string | number };
      if (cause.code === "ENOENT") return reject(missing(command));
      if (cause.killed) {
        return reject(new SlurmError(`SlurmLauncher: ${command} did not answer within ${TIMEOUT_MS / 1000} s; is slurmctld reachable (scontrol ping)?`, { command, stderr }));
      }
      if (typeof cause.code === "number") return resolve({ stdout, stderr, code: cause.code });
      reject(new SlurmError(`SlurmLauncher: cannot run ${command}: ${error.message}`, { command, stderr }));
    });
  });
}

const oneLine = (text: string): string =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .join("; ");

/** Submits a batch script with `sbatch --parsable`; resolves to the job id. */
export async function submitBatch(scriptFile: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const ran = await slurm("sbatch", ["--parsable", scriptFile], env);
  if (ran.code !== 0) {
    const said = oneLine(ran.stderr) || `exit status ${ran.code}, no message`;
    throw new SlurmError(
      `SlurmLauncher: sbatch refused ${scriptFile}: ${said}. Check the launcher's options (partition, account, qos, time, mem, constraint, sbatch_args) against the cluster's`,
      { command: "sbatch", stderr: ran.stderr },
    );
  }
  const last = ran.stdout.trim().split("\n").pop() ?? "";
  const id = last.split(";")[0]!.trim();
  if (!/^\d+$/.test(id)) {
    throw new SlurmError(`SlurmLauncher: sbatch answered ${JSON.stringify(ran.stdout.trim())} instead of a job id`, { command: "sbatch", stderr: ran.stderr });
  }
  return id;
}

/** The squeue format {@link parseSqueue} reads. */
export const SQUEUE_FORMAT = "%i|%T|%r";

const reasonOf = (text: string | undefined): string | undefined => {
  const reason = text?.trim();
  return reason === undefined || reason === "" || reason === "None" || reason === "(null)" ? undefined : reason;
};

/** Parses `squeue -h -o "%i|%T|%r"`. */
export function parseSqueue(text: string): Map<string, SlurmJobStatus> {
  const jobs = new Map<string, SlurmJobStatus>();
  for (const line of text.split("\n")) {
    const [id, slurmState, ...rest] = line.trim().split("|");
    if (!id || slurmState === undefined) continue;
    const reason = reasonOf(rest.join("|"));
    jobs.set(id, { id, state: slurmJobState(slurmState), slurmState, ...(reason ? { reason } : {}) });
  }
  return jobs;
}

/** Parses one job of `scontrol show job -o ID` (its first line). */
export function parseScontrolJob(text: string): SlurmJobStatus | undefined {
  const line = text.split("\n").find((l) => l.includes("JobId="));
  if (!line) return undefined;
  const fields = new Map<string, string>();
  for (const part of line.trim().split(/\s+(?=[A-Za-z][\w:/]*=)/)) {
    const eq = part.indexOf("=");
    const key = part.slice(0, eq);
    if (!fields.has(key)) fields.set(key, part.slice(eq + 1).trim());
  }
  const id = fields.get("JobId");
  const slurmState = fields.get("JobState");
  if (!id || !slurmState) return undefined;
  const status: { -readonly [K in keyof SlurmJobStatus]: SlurmJobStatus[K] } = { id, state: slurmJobState(slurmState), slurmState };
  const reason = reasonOf(fields.get("Reason"));
  if (reason) status.reason = reason;
  const exit = /^(\d+):(\d+)$/.exec(fields.get("ExitCode") ?? "");
  if (exit && !["pending", "running", "suspended", "requeued"].includes(status.state)) {
    status.exitCode = Number(exit[1]);
    if (exit[2] !== "0") status.signal = Number(exit[2]);
  }
  const restarts = fields.get("Restarts");
  if (restarts && /^\d+$/.test(restarts)) status.restarts = Number(restarts);
  return status;
}

const JOB_ID = /^\d+(_\d+)?$/;

const checkIds = (ids: readonly string[]): void => {
  for (const id of ids) if (!JOB_ID.test(id)) throw new SlurmError(`SlurmLauncher: ${JSON.stringify(id)} is not a SLURM job id`);
};

const unknownJob = (ran: Ran): boolean => /Invalid job id/i.test(ran.stderr);

/**
 * The jobs' states: `squeue` for the jobs still queued or running, then `scontrol show job` for
 * those that ended (it knows them for MinJobAge after their end, with their exit status). Ids
 * SLURM no longer knows are absent from the map.
 */
export async function queryJobs(ids: readonly string[], env?: NodeJS.ProcessEnv): Promise<Map<string, SlurmJobStatus>> {
  checkIds(ids);
  const wanted = [...new Set(ids)];
  const jobs = new Map<string, SlurmJobStatus>();
  if (wanted.length === 0) return jobs;
  const queued = await slurm("squeue", ["-h", "-o", SQUEUE_FORMAT, "-j", wanted.join(",")], env);
  if (queued.code !== 0 && !unknownJob(queued)) {
    throw new SlurmError(`SlurmLauncher: squeue failed: ${oneLine(queued.stderr) || `exit status ${queued.code}`}. Is slurmctld reachable (scontrol ping)?`, {
      command: "squeue",
      stderr: queued.stderr,
    });
  }
  if (queued.code === 0) for (const [id, status] of parseSqueue(queued.stdout)) if (wanted.includes(id)) jobs.set(id, status);
  const ended = wanted.filter((id) => !jobs.has(id));
  for (let i = 0; i < ended.length; i += 8) {
    const shown = await Promise.all(ended.slice(i, i + 8).map((id) => slurm("scontrol", ["show", "job", "-o", id], env).then((ran) => ({ id, ran }))));
    for (const { id, ran } of shown) {
      if (ran.code !== 0) {
        if (unknownJob(ran)) continue;
        throw new SlurmError(`SlurmLauncher: scontrol show job ${id} failed: ${oneLine(ran.stderr) || `exit status ${ran.code}`}`, { command: "scontrol", stderr: ran.stderr });
      }
      const status = parseScontrolJob(ran.stdout);
      if (status) jobs.set(id, { ...status, id });
    }
  }
  return jobs;
}

/**
 * Cancels a job with `scancel`: SIGTERM to every process of the job at once, SIGKILL KillWait
 * seconds later (30 s by default); the run writes its checkpoint in between. With `signal`, the
 * job is not cancelled but signalled, through the script of {@link sbatchScript}: `TERM` makes it
 * send SIGTERM once to the run (each rank) and end when the run ends, without requeue; `USR1`
 * makes it checkpoint and requeue the job; any other signal goes to the batch script as it is.
 * A job that already ended is no error.
 */
export async function cancelJob(id: string, env?: NodeJS.ProcessEnv, signal?: string): Promise<void> {
  checkIds([id]);
  const name = signal?.toUpperCase().replace(/^SIG/, "");
  if (name !== undefined && !/^[A-Z0-9+]+$/.test(name)) throw new SlurmError(`SlurmLauncher: ${JSON.stringify(signal)} is not a signal name`);
  // The script only waits on SIGTERM (SLURM sends it to every process at once): TERM goes as USR2.
  const args = name === undefined ? [id] : ["--batch", `--signal=${name === "TERM" ? "USR2" : name}`, id];
  const ran = await slurm("scancel", args, env);
  if (ran.code === 0 || unknownJob(ran) || /already completing or completed/i.test(ran.stderr)) return;
  throw new SlurmError(`SlurmLauncher: scancel ${args.join(" ")} failed: ${oneLine(ran.stderr) || `exit status ${ran.code}`}`, { command: "scancel", stderr: ran.stderr });
}
