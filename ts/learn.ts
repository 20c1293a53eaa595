import { existsSync } from "node:fs";

import type { ConfigOf } from "./config/class.js";
import { CheckpointSettings } from "./config/classes/learner.js";
import { ModuleLoader } from "./config/classes/module.js";
import { ValidationSettings } from "./config/classes/validation.js";
import { markAsOutputOf } from "./config/identity.js";
import type { Learner } from "./config/classes/learner.js";
import { TYPE_KEY, configClassOf } from "./config/class.js";
import { JS_DATASET, JS_HOOK, JS_LISTENER, JS_SAMPLER, type Wire, toWire } from "./config/wire.js";
import { InMemoryLtrDataset } from "./config/classes/builtin.js";
import {
  type DimsProviderBehaviour,
  RecordStream,
  type SamplerKind,
  dimsProviderBehaviour,
  packRecords,
  packedDataset,
  samplerBehaviour,
  unpackRecords,
} from "./samplers.js";
import { type HookBehaviour, type HookState, hookBehaviour } from "./hooks.js";
import { ConfigError, DistributedError, type NativeErrorPayload, fromNative } from "./errors.js";
import { type ListenerBehaviour, type ListenerState, listenerBehaviour, toReply } from "./listeners.js";
import { type NativeBinding, loadNative } from "./native.js";
import { type ProgressDisplay, createProgressDisplay } from "./progress/display.js";
import { LAUNCHED_ENV, type RankInfo, launchWorkers, processesPerNode, rankFromEnvironment, usesDdp } from "./distributed.js";
import { generatePaths } from "./workspace/generated.js";
import { type Job, acquireLock, defaultWorkspace, jobOf, markDone, markFailed, prepareJobDirectory, storedResult } from "./workspace/job.js";

/** A Learner configuration, as `Learner.C({...})` returns it. */
export type LearnerConfig = ConfigOf<typeof Learner>;

/** What one epoch produced. */
export interface EpochReport {
  /** Epoch number, from 1. */
  readonly epoch: number;
  /** Global step count at the end of the epoch. */
  readonly step: number;
  /** Mean over the epoch's records of the weighted sum of losses. */
  readonly loss: number;
  /**
   * Every training metric of the epoch, as logged under `train/` in TensorBoard: each loss by
   * its name (`pair-hinge`), `accuracy`, `gradient/scheduler/<optimizer>/<group>`,
   * `iter_per_seconds`.
   */
  readonly train: Readonly<Record<string, number>>;
  /** Listener metrics by tag, e.g. `heldout/ndcg@10`. */
  readonly metrics: Readonly<Record<string, number>>;
  /** Optimizer steps per second during the epoch. */
  readonly stepsPerSecond: number;
}

/** Progress inside the run. */
export interface StepProgress {
  readonly epoch: number;
  readonly step: number;
  readonly totalSteps: number;
  /** The mean loss of the epoch's steps so far (absent on some events). */
  readonly runningLoss?: number;
}

/** A listener's best value of a metric and the model saved then. */
export interface BestCheckpoint {
  readonly epoch: number;
  readonly value: number;
  /** The weights (safetensors) of that epoch, when kept. */
  readonly model?: string;
}

/** A loader of a saved model, marked as an output of the Learner that trained it. */
export type ModuleLoaderConfig = ConfigOf<typeof ModuleLoader>;

/** Loaders of every model the run kept (each file exists on disk). */
export interface LearnerLoaders {
  readonly learned_model: ModuleLoaderConfig | null;
  /** By epoch. */
  readonly checkpoints: Readonly<Record<string, ModuleLoaderConfig>>;
  /** By listener id, then metric. */
  readonly listeners: Readonly<Record<string, Readonly<Record<string, ModuleLoaderConfig>>>>;
}

/** What `learn()` resolves to: the Learner's output and the run's history. */
export interface LearnResult {
  readonly epochs: readonly EpochReport[];
  /** Each listener's result by id: for validation listeners, the best of each metric. */
  readonly listeners: Readonly<Record<string, unknown>>;
  /** The final model's weights (safetensors). */
  readonly learned_model: string | null;
  /** The model weights of each checkpointed epoch. */
  readonly checkpoints: Readonly<Record<string, string>>;
  /** Why training ended before `max_epochs`, if it did. */
  readonly stopped: string | null;
  /** The checkpoint this run continued from, when it resumed an interrupted job. */
  readonly resumed_from: string | null;
  /** What went wrong without stopping the run (damaged checkpoints that were skipped, ...). */
  readonly warnings: readonly string[];
  /** The job directory (holds params.json, logs, checkpoints). */
  readonly jobDir: string;
  /** The task's identifier. */
  readonly identifier: string;
  /** True when the job had already finished and its stored result was returned. */
  readonly cached: boolean;
  /** Loaders of the kept models, as configurations (for evaluation tasks, exports, ...). */
  readonly loaders: LearnerLoaders;
}

export interface LearnOptions {
  /** Where jobs go; default `XPM_TORCH_WORKSPACE`, else `./xpm-workspace`. */
  readonly workspace?: string;
  /** Called after every epoch. */
  readonly onEpoch?: (report: EpochReport) => void;
  /** Called as steps complete (at most every 100 ms). */
  readonly onProgress?: (progress: StepProgress) => void;
  /** Called for problems that do not stop the run; by default they are printed to stderr. */
  readonly onWarning?: (message: string) => void;
  /** Stops the run after its current step, writing a checkpoint first (InterruptedError). */
  readonly signal?: AbortSignal;
  /**
   * While training, SIGINT and SIGTERM stop the run the same way instead of killing the
   * process (default true); a second signal exits at once.
   */
  readonly handleSignals?: boolean;
  /**
   * No progress display. By default `learn()` shows one on stderr: a bar with epoch, step,
   * steps/s, ETA and running loss on a terminal, a plain line every 10 s (and a last one)
   * elsewhere.
   */
  readonly quiet?: boolean;
  /** A display to drive instead of the default one (see `createProgressDisplay`). */
  readonly progress?: ProgressDisplay;
}

type NativeEvent =
  | { kind: "step"; progress: StepProgress }
  | { kind: "epoch"; report: EpochReport }
  | { kind: "warning"; message: string }
  | { kind: "listener"; replyId: number; id: string; state: ListenerState }
  | { kind: "hook"; replyId: number; key: string; phase: "before" | "after"; progress: HookState }
  | { kind: "data"; replyId: number; request: DataRequest };
type DataRequest =
  | { kind: "dataset"; key: string }
  | { kind: "records"; key: string; start: number; count: number; rank: number; world: number }
  | { kind: "dims"; key: string; records: Record<string, unknown> }
  | { kind: "probe"; key: string; dims: Record<string, number> };
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

/** Parses an outcome the binding resolved with, throwing the typed error of a failed job. */
export function unwrapOutcome<T>(json: string): T {
  const outcome = JSON.parse(json) as { ok: true; output: T } | { ok: false; error: NativeErrorPayload };
  if (!outcome.ok) throw fromNative(outcome.error);
  return outcome.output;
}

let nextRunId = 1;

/** Connects the abort signal and, unless disabled, SIGINT/SIGTERM to the run; returns the undo. */
function interruptions(binding: NativeBinding, runId: number, options: LearnOptions): () => void {
  const stop = (): void => {
    binding.cancelLearn(runId);
  };
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop();
  let signals = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) process.exit(name === "SIGINT" ? 130 : 143);
    console.error(`xpm-torch: ${name}: finishing the current step and writing a checkpoint (again to quit at once)`);
    stop();
  };
  const handle = options.handleSignals ?? true;
  if (handle) {
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }
  return () => {
    options.signal?.removeEventListener("abort", stop);
    if (handle) {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  };
}

/** What runs on the JavaScript side of one run: listeners by id, hooks, samplers and datasets by key. */
interface JsSide {
  readonly listeners: Map<string, { config: object; behaviour: ListenerBehaviour<object> }>;
  readonly hooks: Map<string, { config: object; behaviour: HookBehaviour<object> }>;
  readonly samplers: Map<string, { kind: SamplerKind; stream: RecordStream }>;
  readonly datasets: Map<string, object>;
  readonly providers: Map<string, { config: object; behaviour: DimsProviderBehaviour<object, SamplerKind> }>;
  /** The Learner's seed, given to samplers. */
  readonly seed: number;
  /** What the user's code threw first, rethrown as it is by `learn()`. */
  thrown?: { readonly error: unknown };
}

/** Stand-ins for what is written in TypeScript, registered in `side` as they are met. */
function standIns(side: JsSide): (config: object) => Wire | undefined {
  return (config): Wire | undefined => {
    const typeId = configClassOf(config)?.typeId ?? "";
    const listener = listenerBehaviour(config);
    if (listener) {
      const id = (config as { id: string }).id;
      side.listeners.set(id, { config, behaviour: listener });
      return { [TYPE_KEY]: JS_LISTENER, id, class: typeId };
    }
    const sampler = samplerBehaviour(config);
    if (sampler) {
      const key = `${side.samplers.size}:${typeId}`;
      side.samplers.set(key, { kind: sampler.kind, stream: new RecordStream(config, sampler, side.seed) });
      return { [TYPE_KEY]: JS_SAMPLER, key, class: typeId, kind: sampler.kind };
    }
    const provider = dimsProviderBehaviour(config);
    if (provider) {
      const key = `${side.providers.size}:${typeId}`;
      side.providers.set(key, { config, behaviour: provider });
      const probes = [...(config as { probe_dims: ReadonlySet<object> }).probe_dims].map((p) => toWire(p));
      return { [TYPE_KEY]: "xpm_torch.batchers.BatchDimsProvider", probe_dims: probes, js_key: key };
    }
    if (InMemoryLtrDataset.is(config)) {
      const key = `${side.datasets.size}:${config.id}`;
      side.datasets.set(key, config);
      return { [TYPE_KEY]: JS_DATASET, key };
    }
    const hook = hookBehaviour(config);
    if (hook) {
      const key = `${side.hooks.size}:${typeId}`;
      side.hooks.set(key, { config, behaviour: hook });
      return { [TYPE_KEY]: JS_HOOK, key, class: typeId, kind: hook.kind };
    }
    return undefined;
  };
}

/** Runs a TypeScript listener or hook for the core and always answers, so it never waits forever. */
async function answer(binding: NativeBinding, side: JsSide, event: Extract<NativeEvent, { replyId: number }>): Promise<void> {
  let text: string;
  try {
    if (event.kind === "listener") {
      const listener = side.listeners.get(event.id);
      if (!listener) throw new Error(`no TypeScript listener with id ${JSON.stringify(event.id)}`);
      const reply = toReply(await listener.behaviour.call(listener.config, event.state));
      text = JSON.stringify({ ok: true, reply: { ...reply, output: reply.output ?? null } });
    } else if (event.kind === "data") {
      text = JSON.stringify({ ok: true, reply: await answerData(side, event.request) });
    } else {
      const hook = side.hooks.get(event.key);
      if (!hook) throw new Error(`no TypeScript hook with key ${JSON.stringify(event.key)}`);
      await hook.behaviour[event.phase]?.(hook.config, event.progress);
      text = JSON.stringify({ ok: true, reply: null });
    }
  } catch (error) {
    side.thrown ??= { error };
    text = JSON.stringify({ ok: false, message: error instanceof Error ? error.message : String(error) });
  }
  binding.reply(event.replyId, text);
}

/** Records of a TypeScript sampler, or the arrays of an in-memory dataset, packed for the core. */
async function answerData(side: JsSide, request: DataRequest): Promise<unknown> {
  if (request.kind === "dataset") {
    const config = side.datasets.get(request.key);
    const packed = config && packedDataset(config);
    if (!packed) throw new Error(`no arrays for in-memory dataset ${JSON.stringify(request.key)}: create it with inMemoryLtrDataset({...})`);
    return packed;
  }
  if (request.kind === "dims" || request.kind === "probe") {
    const provider = side.providers.get(request.key);
    if (!provider) throw new Error(`no TypeScript dims provider with key ${JSON.stringify(request.key)}`);
    if (request.kind === "probe") {
      const records = provider.behaviour.buildProbeBatch(provider.config, request.dims);
      return packRecords(provider.behaviour.kind, [...records]);
    }
    const dims = provider.behaviour.computeBatchDims(provider.config, unpackRecords(request.records) as never);
    for (const [name, value] of Object.entries(dims)) {
      if (!Number.isInteger(value) || value < 0) throw new Error(`computeBatchDims gave ${name} = ${value}, not a whole number`);
    }
    return dims;
  }
  const sampler = side.samplers.get(request.key);
  if (!sampler) throw new Error(`no TypeScript sampler with key ${JSON.stringify(request.key)}`);
  const records = await sampler.stream.take(request.start, request.count, request.rank, request.world);
  return packRecords(sampler.kind, records);
}

/**
 * The JSON `learn()` hands the core, with the generated paths (`runs`, `checkpoints`, `out/...`)
 * relative to the job directory: what `xpm-torch-run` runs on a machine without Node.
 * @throws ConfigError when a part of the Learner is written in TypeScript (listeners, hooks,
 * samplers, dims providers) or holds its data in JavaScript (in-memory datasets).
 */
export function coreConfigJson(config: LearnerConfig): string {
  const side: JsSide = { listeners: new Map(), hooks: new Map(), samplers: new Map(), datasets: new Map(), providers: new Map(), seed: config.random.seed };
  const wire = toWire(config, generatePaths(config, ""), standIns(side));
  const inJavaScript = [side.listeners, side.hooks, side.samplers, side.datasets, side.providers].flatMap((m) => [...m.keys()]);
  if (inJavaScript.length > 0) {
    throw new ConfigError("learner", `runs parts in JavaScript (${inJavaScript.join(", ")}): only learn() in Node can run it`);
  }
  return JSON.stringify(wire);
}

async function train(config: LearnerConfig, job: Job, options: LearnOptions): Promise<StoredResult> {
  const { binding } = loadNative();
  const side: JsSide = { listeners: new Map(), hooks: new Map(), samplers: new Map(), datasets: new Map(), providers: new Map(), seed: config.random.seed };
  const display = options.quiet
    ? undefined
    : (options.progress ?? createProgressDisplay(process.stderr, { maxEpochs: config.max_epochs, stepsPerEpoch: config.steps_per_epoch }));
  const wire = toWire(config, job.paths, standIns(side));
  const runId = nextRunId++;
  // A throwing callback must not become an uncaught exception that kills the process: keep the
  // first error, stop the run and raise it from learn() itself.
  const fail = (error: unknown): void => {
    if (side.thrown) return;
    side.thrown = { error };
    binding.cancelLearn(runId);
  };
  const onEvent = (text: string): void => {
    try {
      const event = JSON.parse(text) as NativeEvent;
      if (event.kind === "listener" || event.kind === "hook" || event.kind === "data") void answer(binding, side, event);
      // After a callback failed, the run is stopping: no more of the user's callbacks.
      else if (side.thrown) return;
      else if (event.kind === "epoch") {
        display?.epoch(event.report);
        options.onEpoch?.(event.report);
      } else if (event.kind === "warning") {
        const warn = options.onWarning ?? ((m: string) => (display ? display.log(`xpm-torch: ${m}`) : console.warn(`xpm-torch: ${m}`)));
        warn(event.message);
      } else {
        display?.step(event.progress);
        options.onProgress?.(event.progress);
      }
    } catch (error) {
      fail(error);
    }
  };
  const stopHandlers = interruptions(binding, runId, options);
  let outcome: string;
  try {
    outcome = await binding.learn(JSON.stringify(wire), onEvent, runId);
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
