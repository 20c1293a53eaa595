// Who runs the job: this process alone, the launcher of a ddp run, or one of its ranks.
import { existsSync, rmSync } from "node:fs";

import { DistributedError } from "../errors.js";
import type { LearnOptions, LearnResult, LearnerConfig } from "../learn-types.js";
import { type Job, acquireLock, markDone, markFailed, prepareJobDirectory, storedResult } from "../workspace/job.js";
import { failureReasonOfCode } from "../workspace/job-state.js";
import { writeJobStatus } from "../workspace/status.js";
import { LAUNCHED_ENV, type RankInfo, launchWorkers } from "./distributed.js";
import { withJobProgress } from "./job-progress.js";
import { listenerResults } from "./listener-results.js";
import { loadersOf } from "./outputs.js";
import { type StoredResult, train } from "./train.js";

/** How long ranks other than 0 wait for rank 0 to write params.json (under torchrun or SLURM). */
const PARAMS_WAIT_MS = 300_000;

async function waitForParams(job: Job, rank: number): Promise<void> {
  const deadline = Date.now() + PARAMS_WAIT_MS;
  while (!existsSync(job.paramsFile)) {
    if (Date.now() > deadline) {
      throw new DistributedError(`rank ${rank}: rank 0 did not prepare the job directory ${job.dir} within ${PARAMS_WAIT_MS / 1000} s (is it on a file system all nodes share?)`);
    }
    await new Promise((wake) => setTimeout(wake, 100));
  }
}

/** The job's state where experimaestro's tools (and a plan run again) read it. */
function recordState(job: Job, state: "running" | "done" | "error", error?: unknown): void {
  const failureReason = failureReasonOfCode((error as { code?: unknown } | undefined)?.code);
  writeJobStatus({ jobDir: job.dir, identifier: job.identifier, taskId: job.typeId }, { state, ...(state === "error" ? { failureReason } : {}) });
}

/** Finishes a result for the caller. */
export function completed(config: LearnerConfig, job: Job, result: StoredResult, cached: boolean): LearnResult {
  // Results stored by earlier versions have no `pretrained` nor `dropped_training_state`.
  const { pretrained = [], dropped_training_state = null } = result as Partial<StoredResult>;
  return { ...result, ...listenerResults(config, result.listeners), pretrained, dropped_training_state, jobDir: job.dir, identifier: job.identifier, cached, loaders: loadersOf(config, result) };
}

/** The job as one process owns it: lock, params.json, training, done or failed marker. */
export async function runOwned(config: LearnerConfig, job: Job, work: () => Promise<StoredResult>): Promise<LearnResult> {
  const release = acquireLock(job);
  try {
    prepareJobDirectory(config, job);
    // An earlier attempt's failure is no longer the job's state.
    rmSync(job.failedFile, { force: true });
    recordState(job, "running");
    const result = await work();
    markDone(job, result);
    recordState(job, "done");
    return completed(config, job, result, false);
  } catch (error) {
    markFailed(job, error);
    recordState(job, "error", error);
    throw error;
  } finally {
    release();
  }
}

/**
 * Starts this script again once per device (strategy `ddp`), waits for the workers and returns
 * what rank 0 stored. Node 0 holds the lock and prepares the job; other nodes wait for it.
 */
export async function launch(config: LearnerConfig, job: Job, perNode: number): Promise<LearnResult> {
  const fabric = config.fabric_config;
  const nodeRank = Number(process.env.NODE_RANK ?? process.env.GROUP_RANK ?? "0");
  const workers = async (): Promise<StoredResult> => {
    await launchWorkers(fabric, perNode);
    const stored = storedResult<StoredResult>(job);
    if (!stored) throw new DistributedError(`the workers exited without a result: rank 0 did not mark ${job.dir} done`);
    return stored;
  };
  if (nodeRank !== 0) {
    await waitForParams(job, nodeRank * perNode);
    await launchWorkers(fabric, perNode);
    const stored = storedResult<StoredResult>(job);
    if (!stored) throw new DistributedError(`node ${nodeRank}: the run ended without a result from rank 0`);
    return completed(config, job, stored, false);
  }
  return runOwned(config, job, workers);
}

/**
 * One rank of a distributed run. Started by {@link launch}: the launcher owns the job, and rank 0
 * only marks it done. Started by torchrun or SLURM: rank 0 owns the job; the others wait for its
 * params.json. Ranks other than 0 never touch the job state and show no progress.
 */
export async function asRank(config: LearnerConfig, job: Job, options: LearnOptions, rank: RankInfo): Promise<LearnResult> {
  const launched = process.env[LAUNCHED_ENV] === "1";
  const workerOptions = rank.rank === 0 ? options : { ...options, quiet: true };
  // Rank 0 reports the run's progress where experimaestro reads it.
  const rankOptions = rank.rank === 0 ? withJobProgress(config, job, workerOptions) : workerOptions;
  if (rank.rank === 0 && !launched) return runOwned(config, job, () => train(config, job, rankOptions));
  if (rank.rank !== 0 && !launched) await waitForParams(job, rank.rank);
  const result = await train(config, job, rankOptions);
  if (rank.rank === 0) markDone(job, result);
  return completed(config, job, result, false);
}

