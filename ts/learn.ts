import { existsSync } from "node:fs";

import { CheckpointSettings } from "./config/classes/learner.js";
import { ModuleLoader } from "./config/classes/module.js";
import { ValidationSettings } from "./config/classes/validation.js";
import { markAsOutputOf } from "./config/identity.js";
import { type RunCallbacks, emptySide, foreignCalls, javaScriptParts, reporter, trainingModel, wireOf } from "./bridge.js";
import { ConfigError, DistributedError, unwrapOutcome } from "./errors.js";
import { interruptions } from "./interrupts.js";
import type { LearnOptions, LearnResult, LearnerConfig, LearnerLoaders, ModuleLoaderConfig } from "./learn-types.js";
import { loadNative } from "./native.js";
import { createProgressDisplay } from "./progress/display.js";
import { LAUNCHED_ENV, type RankInfo, launchWorkers, processesPerNode, rankFromEnvironment, usesDdp } from "./distributed.js";
import { generatePaths } from "./workspace/generated.js";
import { type Job, acquireLock, defaultWorkspace, jobOf, markDone, markFailed, prepareJobDirectory, storedResult } from "./workspace/job.js";

export type * from "./learn-types.js";
export { unwrapOutcome } from "./errors.js";

type StoredResult = Omit<LearnResult, "jobDir" | "identifier" | "cached" | "loaders">;

/** The Learner's output as loaders marked as its outputs. */
function loadersOf(config: LearnerConfig, result: StoredResult): LearnerLoaders {
  const loader = (path: string, settings?: object) =>
    markAsOutputOf(ModuleLoader.C({ value: config.model, path, ...(settings ? { settings: settings as never } : {}) }), config);
  const checkpoints = Object.fromEntries(
    Object.entries(result.checkpoints).map(([epoch, path]) => [epoch, loader(path, CheckpointSettings.C({ epoch: Number(epoch) }))]),
  );
  const listeners: Record<string, Record<string, ModuleLoaderConfig>> = {};
  for (const listener of config.listeners) {
    const output = result.listeners[listener.id];
    if (typeof output !== "object" || output === null) continue;
    for (const [key, best] of Object.entries(output as Record<string, unknown>)) {
      const model = (best as { model?: unknown } | null)?.model;
      if (typeof model !== "string") continue;
      (listeners[listener.id] ??= {})[key] = loader(model, ValidationSettings.C({ listener, key }));
    }
  }
  return { learned_model: result.learned_model === null ? null : loader(result.learned_model), checkpoints, listeners };
}


/**
 * The JSON `learn()` hands the core, with the generated paths (`runs`, `checkpoints`, `out/...`)
 * relative to the job directory: what `xpm-torch-run` runs on a machine without Node.
 * @throws ConfigError when a part of the Learner is written in TypeScript (listeners, hooks,
 * samplers, dims providers) or holds its data in JavaScript (in-memory datasets).
 */
export function coreConfigJson(config: LearnerConfig): string {
  const side = emptySide(config.random.seed);
  const wire = wireOf(config, generatePaths(config, ""), side);
  const inJavaScript = javaScriptParts(side);
  if (inJavaScript.length > 0) {
    throw new ConfigError("learner", `runs parts in JavaScript (${inJavaScript.join(", ")}): only learn() in Node can run it`);
  }
  return JSON.stringify(wire);
}

/** One run of the core in this process, with its JavaScript side. */
async function train(config: LearnerConfig, job: Job, options: LearnOptions): Promise<StoredResult> {
  const { binding } = loadNative();
  const side = emptySide(config.random.seed);
  const display = options.quiet
    ? undefined
    : (options.progress ?? createProgressDisplay(process.stderr, { maxEpochs: config.max_epochs, stepsPerEpoch: config.steps_per_epoch }));
  const wire = wireOf(config, job.paths, side);
  const callbacks: RunCallbacks = {
    onEpoch: (report) => {
      display?.epoch(report);
      options.onEpoch?.(report);
    },
    onProgress: (progress) => {
      display?.step(progress);
      options.onProgress?.(progress);
    },
    onWarning: options.onWarning ?? ((m: string) => (display ? display.log(`xpm-torch: ${m}`) : console.warn(`xpm-torch: ${m}`))),
  };
  const run = new binding.LearnRun();
  const stop = (): void => run.cancel();
  const stopHandlers = interruptions(stop, options);
  const model = trainingModel(binding, run);
  let outcome: string;
  try {
    outcome = await binding.learn(JSON.stringify(wire), run, reporter(side, callbacks, stop), foreignCalls(side, callbacks, model));
  } finally {
    stopHandlers();
    display?.finish();
  }
  // The user's own exception, as thrown, whatever the run ended with.
  if (side.thrown) throw side.thrown.error;
  return unwrapOutcome<StoredResult>(outcome);
}


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

/** Finishes a result for the caller. */
function completed(config: LearnerConfig, job: Job, result: StoredResult, cached: boolean): LearnResult {
  return { ...result, jobDir: job.dir, identifier: job.identifier, cached, loaders: loadersOf(config, result) };
}

/** The job as one process owns it: lock, params.json, training, done or failed marker. */
async function runOwned(config: LearnerConfig, job: Job, work: () => Promise<StoredResult>): Promise<LearnResult> {
  const release = acquireLock(job);
  try {
    prepareJobDirectory(config, job);
    const result = await work();
    markDone(job, result);
    return completed(config, job, result, false);
  } catch (error) {
    markFailed(job, error);
    throw error;
  } finally {
    release();
  }
}

/**
 * Starts this script again once per device (strategy `ddp`), waits for the workers and returns
 * what rank 0 stored. Node 0 holds the lock and prepares the job; other nodes wait for it.
 */
async function launch(config: LearnerConfig, job: Job, perNode: number): Promise<LearnResult> {
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
async function asRank(config: LearnerConfig, job: Job, options: LearnOptions, rank: RankInfo): Promise<LearnResult> {
  const launched = process.env[LAUNCHED_ENV] === "1";
  const workerOptions = rank.rank === 0 ? options : { ...options, quiet: true };
  if (rank.rank === 0 && !launched) return runOwned(config, job, () => train(config, job, workerOptions));
  if (rank.rank !== 0 && !launched) await waitForParams(job, rank.rank);
  const result = await train(config, job, workerOptions);
  if (rank.rank === 0) markDone(job, result);
  return completed(config, job, result, false);
}

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
 * @throws ConfigError, TorchError, InternalError, JobLockedError, DistributedError (all XpmTorchError).
 */
export async function learn(config: LearnerConfig, options: LearnOptions = {}): Promise<LearnResult> {
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
  return runOwned(config, job, () => train(config, job, options));
}
