// The one vocabulary of a job's state, experimaestro's: what a plan's scheduler, the job's own
// process, `xpm-torch jobs` and experimaestro's tools all say of a job.
//
// Who writes what in `.experimaestro/status.json` (ts/workspace/status.ts does the writing):
// - the job's own process: `running` when it starts; `done`, or `error` with its own reason
//   (`cancelled` when interrupted, `memory` when out of memory, else `failed`), when it ends; and
//   the progress of the run;
// - the scheduler of a plan: `waiting`, `ready`, `scheduled`, `error` with `dependency`, the
//   process record, the exit code; and `error` for a process that ended without a word (killed,
//   lost with its node, forgotten by SLURM) — never over an outcome the process recorded itself.

/** Where a job stands (experimaestro's JobState, lowercased). */
export type JobState = "unscheduled" | "waiting" | "ready" | "scheduled" | "running" | "done" | "error";

/** Why a job is in error (experimaestro's JobFailureStatus, lowercased); `dependency`: it never ran. */
export type FailureReason = "failed" | "dependency" | "memory" | "timeout" | "cancelled";

export const JOB_STATES: readonly JobState[] = ["unscheduled", "waiting", "ready", "scheduled", "running", "done", "error"];
export const FAILURE_REASONS: readonly FailureReason[] = ["failed", "dependency", "memory", "timeout", "cancelled"];

/**
 * The moves a plan's scheduler makes, from each state. `unscheduled` is a job just submitted;
 * `error` goes back to `waiting` when a queued job is cancelled to be queued again (behind its
 * dependency's new run); `running` goes back to `scheduled` when SLURM requeues the job.
 */
export const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  // done by an earlier run; run by another process; to schedule; followed, queued or running;
  // its files cannot be read
  unscheduled: ["done", "running", "waiting", "scheduled", "error"],
  waiting: ["ready", "error"],
  // started; done meanwhile by another plan or a learn() call
  ready: ["scheduled", "done"],
  // runs; ended before it was seen running; refused by its launcher (sbatch said no), or ended
  // without running; cancelled to be queued again
  scheduled: ["running", "done", "error", "waiting"],
  running: ["done", "error", "scheduled"],
  done: [],
  error: [],
};

/** A transition the table does not allow: a bug of the scheduler, never a user's error. */
export class IllegalTransitionError extends Error {
  constructor(readonly from: JobState, readonly to: JobState, where: string) {
    super(`internal error: job ${where} cannot go from ${from} to ${to} (allowed: ${TRANSITIONS[from].join(", ") || "none"})`);
  }
}

/** Throws unless `from` → `to` is in {@link TRANSITIONS}. */
export function checkTransition(from: JobState, to: JobState, where: string): void {
  if (!TRANSITIONS[from].includes(to)) throw new IllegalTransitionError(from, to, where);
}

/** Whether a job in this state has ended (it changes no more in this run of a plan). */
export function isFinal(state: JobState): boolean {
  return state === "done" || state === "error";
}

/** The reason a job process records for the error code it ended with. */
export function failureReasonOfCode(code: unknown): FailureReason {
  if (code === "ERR_INTERRUPTED") return "cancelled";
  if (code === "ERR_OUT_OF_MEMORY") return "memory";
  return "failed";
}

/** How a state reads in a table: `error (cancelled)`, `done`. */
export function stateLabel(state: JobState, reason?: FailureReason | null): string {
  return state === "error" ? `error (${reason ?? "failed"})` : state;
}

export function jobStateOf(value: unknown): JobState | undefined {
  return JOB_STATES.find((s) => s === value);
}

/** A reason from experimaestro's upper-case names or ours; unknown ones read as `failed`. */
export function failureReasonOf(value: unknown): FailureReason | undefined {
  if (typeof value !== "string") return undefined;
  return FAILURE_REASONS.find((r) => r === value.toLowerCase()) ?? "failed";
}
