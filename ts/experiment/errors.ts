import { XpmTorchError } from "../errors.js";
import type { Job } from "../workspace/job.js";

/** A job of an experiment ended in error, or never ran because a dependency did. */
export class JobFailedError extends XpmTorchError {
  readonly jobDir: string;
  readonly identifier: string;
  readonly state: "error" | "dependency failed";
  /** The last lines of the job's standard error. */
  readonly stderrTail: string;

  constructor(job: Job, state: "error" | "dependency failed", reason: string, stderrTail: string) {
    const tail = stderrTail ? `\n--- last lines of ${job.name}.err ---\n${stderrTail}` : "";
    super("ERR_JOB_FAILED", `job ${job.typeId}/${job.identifier} (${job.dir}): ${reason}${tail}`);
    this.jobDir = job.dir;
    this.identifier = job.identifier;
    this.state = state;
    this.stderrTail = stderrTail;
  }
}

/** An experiment ended with jobs in error; each one's error is in `failures`. */
export class ExperimentError extends XpmTorchError {
  readonly failures: readonly JobFailedError[];

  constructor(name: string, failures: readonly JobFailedError[]) {
    const lines = failures.map((f) => `  ${f.state}: ${f.jobDir}`);
    super("ERR_EXPERIMENT", `experiment ${JSON.stringify(name)}: ${failures.length} job(s) did not finish:\n${lines.join("\n")}\n(each job's ${"`"}.err${"`"} file says why; run the plan again to run them again)`);
    this.failures = failures;
  }
}
