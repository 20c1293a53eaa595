// `xpm-torch jobs kill`: stops one job, wherever it runs.
import { hostname } from "node:os";

import { XpmTorchError } from "../errors.js";
import type { JobInfo } from "../report/job.js";
import { stateLabel } from "../workspace/job-state.js";
import { jobFiles, liveLockHolder } from "../workspace/job.js";
import { cancelJob } from "./slurm.js";

/**
 * Stops the job whose identifier starts with `prefix`: SIGTERM to its process on this host (it
 * writes a checkpoint first), `scancel` for a SLURM job. Resolves to what was done.
 * @throws XpmTorchError when no job or several match, or the job runs nowhere this host can reach.
 */
export async function killJob(jobs: readonly JobInfo[], prefix: string): Promise<string> {
  const matches = jobs.filter((j) => j.identifier.startsWith(prefix));
  if (matches.length === 0) throw new XpmTorchError("ERR_NO_JOB", `no job's identifier starts with ${JSON.stringify(prefix)}`);
  if (matches.length > 1) throw new XpmTorchError("ERR_NO_JOB", `${matches.length} jobs start with ${JSON.stringify(prefix)}: give more of the identifier`);
  const job = matches[0]!;
  const record = job.process;
  if (record?.type === "slurm" && typeof record.id === "string") {
    await cancelJob(record.id);
    return `cancelled SLURM job ${record.id} (${job.dir})`;
  }
  // A job run by `learn()` outside any experiment has no record: its lock names its process.
  const locked = liveLockHolder(jobFiles(job.dir).lockFile);
  const pid = record?.type === "local" && record.host === hostname() && typeof record.pid === "number" ? record.pid : locked?.host === hostname() ? locked.pid : undefined;
  if (job.state !== "running" || pid === undefined) {
    throw new XpmTorchError("ERR_NO_JOB", `job ${job.dir} is ${stateLabel(job.state, job.failureReason)}${record?.type === "local" && record.host !== hostname() ? ` on ${String(record.host)}` : ""}: nothing to stop here`);
  }
  process.kill(pid, "SIGTERM");
  return `sent SIGTERM to process ${pid} (${job.dir}): it writes a checkpoint and stops; running the job again resumes it`;
}
