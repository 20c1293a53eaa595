import { ConfigError } from "./errors.js";
import type { LearnOptions, LearnResult, LearnerConfig } from "./learn-types.js";
import { processesPerNode, rankFromEnvironment, usesDdp } from "./run/distributed.js";
import { withJobProgress } from "./run/job-progress.js";
import { asRank, completed, launch, runOwned } from "./run/launch.js";
import { type StoredResult, train } from "./run/train.js";
import { defaultWorkspace, jobOf, storedResult } from "./workspace/job.js";

export type * from "./learn-types.js";
export { unwrapOutcome } from "./errors.js";
export { coreConfigJson } from "./run/train.js";

/**
 * Runs a Learner task in its job directory `<workspace>/jobs/<type id>/<identifier>/`. The loop
 * runs on a thread of its own in the Rust core; the Node event loop stays free meanwhile. A job
 * that already finished returns its stored result without training; a job running in another
 * process makes this call fail with JobLockedError.
 *
 * With `fabric_config.strategy: "ddp"` (or `"auto"`, Lightning's choice) and more than one process in all (`devices` per node
 * times `num_nodes`), the calling process becomes the launcher: it holds the job, runs this same
 * script again once per device with the rank environment (RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and resolves to what rank 0 stored. Under torchrun
 * or SLURM (rank environment already set) each process is one rank. Rank 0 alone writes logs,
 * checkpoints and models; the epoch metrics are averaged over the ranks.
 * @throws the XpmTorchError of what failed (ConfigError, DataError, TorchError and its
 * OutOfMemoryError, CheckpointError, NonFiniteError, FileError, InterruptedError, JobLockedError,
 * DistributedError, InternalError, ...), or, as it is, what a listener, hook, sampler, dims
 * provider or callback of the caller threw.
 */
export function learn(config: LearnerConfig, options: LearnOptions = {}): Promise<LearnResult> {
  const watch = (globalThis as WatchedGlobal)[SCRIPT_WATCH];
  if (!watch) return learnNow(config, options);
  if (watch.refuse !== undefined) return Promise.reject(new ConfigError("learn()", watch.refuse));
  const call = learnNow(config, { ...watch.defaults, ...options });
  watch.calls.push(call);
  return call;
}

async function learnNow(config: LearnerConfig, options: LearnOptions): Promise<LearnResult> {
  const job = jobOf(config, options.workspace ?? defaultWorkspace());
  const rank = rankFromEnvironment();
  // A rank of a distributed run: ddp, or "auto" in a launch environment of several ranks.
  const worker = rank !== undefined && rank.worldSize > 1 && ["ddp", "auto"].includes(config.fabric_config.strategy);
  if (!worker) {
    const done = storedResult<StoredResult>(job);
    if (done) return completed(config, job, done, true);
  }
  if (worker) return asRank(config, job, options, rank);
  const fabric = config.fabric_config;
  const perNode = processesPerNode(fabric);
  if (usesDdp(fabric) && perNode * fabric.num_nodes > 1 && rank === undefined) return launch(config, job, perNode);
  return runOwned(config, job, () => train(config, job, withJobProgress(config, job, options)));
}

/**
 * What learn() looks for on `globalThis` while `xpm-torch learn FILE` imports FILE (ts/cli/
 * load-config.ts): a module that runs its Learner itself is a script, whose learn() calls the
 * command awaits and reports. Kept there so that the calls of another copy of xpm-torch the
 * module loads are seen too.
 */
export const SCRIPT_WATCH = Symbol.for("xpm-torch.learn.scriptWatch");

export interface ScriptWatch {
  /** Options of the command (`--workspace`, `--quiet`) that each call's own options override. */
  readonly defaults: LearnOptions;
  /** When set, each call is rejected with a ConfigError of this message, before it trains. */
  readonly refuse?: string;
  /** The calls made, in order. */
  readonly calls: Promise<LearnResult>[];
  /** What {@link watchedPlan} started (experiment plans): awaited by the command, not reported. */
  readonly plans: Promise<unknown>[];
}

/**
 * Starts `plan` (an experiment) as learn() starts a call while `xpm-torch learn FILE` imports
 * FILE: recorded, so that the command treats FILE as a script that ran, or refused before it
 * starts; outside that, it only starts it.
 */
export function watchedPlan<T>(plan: () => Promise<T>): Promise<T> {
  const watch = (globalThis as WatchedGlobal)[SCRIPT_WATCH];
  if (watch?.refuse !== undefined) return Promise.reject(new ConfigError("experiment()", watch.refuse));
  const started = plan();
  watch?.plans.push(started);
  return started;
}

type WatchedGlobal = typeof globalThis & { [SCRIPT_WATCH]?: ScriptWatch };
