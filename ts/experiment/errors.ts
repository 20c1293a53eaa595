import { XpmTorchError } from "../errors.js";
import { type FailureReason, stateLabel } from "../workspace/job-state.js";
import type { Job } from "../workspace/job.js";

/** A job of an experiment ended in error, or never ran because a dependency did (`reason` `dependency`). */
export class JobFailedError extends XpmTorchError {
  readonly jobDir: string;
  readonly identifier: string;
  readonly state = "error";
  /** Why: `failed`, `memory`, `cancelled` (interrupted), `timeout`, or `dependency` (never ran). */
  readonly reason: FailureReason;
  /** The last lines of the job's standard error. */
  readonly stderrTail: string;

  constructor(job: Job, reason: FailureReason, message: string, stderrTail: string) {
    const tail = stderrTail ? `\n--- last lines of ${job.name}.err ---\n${stderrTail}` : "";
    super("ERR_JOB_FAILED", `job ${job.typeId}/${job.identifier} (${job.dir}): ${message}${tail}`);
    this.jobDir = job.dir;
    this.identifier = job.identifier;
    this.reason = reason;
    this.stderrTail = stderrTail;
  }
}

/** An experiment ended with jobs in error; each one's error is in `failures`. */
export class ExperimentError extends XpmTorchError {
  readonly failures: readonly JobFailedError[];

  constructor(name: string, failures: readonly JobFailedError[]) {
    const lines = failures.map((f) => `  ${stateLabel("error", f.reason)}: ${f.jobDir}`);
    super("ERR_EXPERIMENT", `experiment ${JSON.stringify(name)}: ${failures.length} job(s) did not finish:\n${lines.join("\n")}\n(each job's ${"`"}.err${"`"} file says why; run the plan again to run them again)`);
    this.failures = failures;
  }
}
