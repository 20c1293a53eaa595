// The JavaScript side of a run: the parts of a Learner written in TypeScript, replaced by
// stand-ins in the configuration the core reads, and the two channels the core uses to reach
// them (see docs/architecture.md): reports nobody waits on, and foreign calls answered by a
// Promise the training thread waits on.
import { TYPE_KEY, configClassOf } from "./config/class.js";
import { InMemoryLtrDataset } from "./config/classes/builtin.js";
import { ModuleLoader } from "./config/classes/module.js";
import { initTasksOf } from "./config/identity.js";
import { JS_DATASET, JS_HOOK, JS_LISTENER, JS_SAMPLER, type Wire, toWire } from "./config/wire.js";
import { type HookBehaviour, type HookState, hookBehaviour } from "./hooks.js";
import type { EpochReport, StepProgress } from "./learn-types.js";
import { ConfigError, unwrapOutcome } from "./errors.js";
import { type ListenerBehaviour, type ListenerModel, type ListenerState, listenerBehaviour, toReply } from "./listeners.js";
import { scoreRows } from "./model.js";
import type { ForeignCall, ForeignReply, LearnRun, NativeBinding } from "./native.js";
import {
  type DimsProviderBehaviour,
  type Packed,
  RecordStream,
  type SamplerKind,
  dimsColumns,
  dimsProviderBehaviour,
  packRecords,
  packedDataset,
  samplerBehaviour,
  unpackRecords,
} from "./samplers.js";

/** What runs on the JavaScript side of one run: listeners by id, hooks, samplers and datasets by key. */
export interface JsSide {
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

export function emptySide(seed: number): JsSide {
  return { listeners: new Map(), hooks: new Map(), samplers: new Map(), datasets: new Map(), providers: new Map(), seed };
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

/**
 * The Learner as the core reads it, with stand-ins registered in `side`: its parameters, then its
 * initialisation tasks (see `setInitTasks`) under `__init_tasks__`, which must be ModuleLoaders.
 */
export function learnerWireOf(config: object, paths: Parameters<typeof toWire>[1], side: JsSide): Wire {
  const wire = toWire(config, paths, standIns(side)) as { [key: string]: Wire };
  const tasks = initTasksOf(config);
  tasks.forEach((task, i) => {
    if (configClassOf(task) !== ModuleLoader) {
      throw new ConfigError(`learner.__init_tasks__[${i}]`, `is a ${configClassOf(task)?.typeId}: a Learner runs ModuleLoader initialisation tasks only`);
    }
  });
  if (tasks.length > 0) wire.__init_tasks__ = tasks.map((task) => toWire(task, paths, standIns(side)));
  return wire;
}

/** Every stand-in's key: what the core cannot run without Node. */
export function javaScriptParts(side: JsSide): string[] {
  return [side.listeners, side.hooks, side.samplers, side.datasets, side.providers].flatMap((m) => [...m.keys()]);
}

type DataRequest =
  | { kind: "dataset"; key: string }
  | { kind: "records"; key: string; start: number; count: number; rank: number; world: number }
  | { kind: "dims"; key: string; records: Record<string, unknown>; batch_size_variable: string }
  | { kind: "probe"; key: string; dims: Record<string, number> };

/** What the user gave `learn()` that the bridge calls. */
export interface RunCallbacks {
  readonly onEpoch?: (report: EpochReport) => void;
  readonly onProgress?: (progress: StepProgress) => void;
  readonly onWarning: (message: string) => void;
}

const packedReply = (packed: Packed): ForeignReply => ({ json: JSON.stringify(packed.json), floats: packed.floats, ints: packed.ints });

function must<T>(found: T | undefined, what: string, key: string): T {
  if (found === undefined) throw new Error(`no TypeScript ${what} with key ${JSON.stringify(key)}`);
  return found;
}

/** Records of a TypeScript sampler, the arrays of an in-memory dataset, or a dims provider's answer. */
async function answerData(side: JsSide, request: DataRequest, call: ForeignCall): Promise<ForeignReply> {
  if (request.kind === "dataset") {
    const config = side.datasets.get(request.key);
    const packed = config && packedDataset(config);
    if (!packed) throw new Error(`no arrays for in-memory dataset ${JSON.stringify(request.key)}: create it with inMemoryLtrDataset({...})`);
    return packedReply(packed);
  }
  if (request.kind === "dims" || request.kind === "probe") {
    const provider = must(side.providers.get(request.key), "dims provider", request.key);
    if (request.kind === "probe") {
      const records = provider.behaviour.buildProbeBatch(provider.config, request.dims);
      return packedReply(packRecords(provider.behaviour.kind, [...records]));
    }
    const records = unpackRecords({ json: request.records, floats: call.floats, ints: call.ints });
    const dims = provider.behaviour.recordDims(provider.config, records as never);
    return { json: JSON.stringify(dimsColumns(provider.behaviour, dims, records.length, request.batch_size_variable)) };
  }
  const sampler = must(side.samplers.get(request.key), "sampler", request.key);
  const records = await sampler.stream.take(request.start, request.count, request.rank, request.world);
  return packedReply(packRecords(sampler.kind, records));
}

async function dispatch(side: JsSide, callbacks: RunCallbacks, model: ListenerModel, call: ForeignCall): Promise<ForeignReply> {
  const request = JSON.parse(call.json) as Record<string, unknown>;
  switch (call.kind) {
    case "epoch":
      callbacks.onEpoch?.(request as unknown as EpochReport);
      return {};
    case "listener": {
      const { id, state } = request as { id: string; state: Omit<ListenerState, "model"> };
      const listener = must(side.listeners.get(id), "listener", id);
      const reply = toReply(await listener.behaviour.call(listener.config, { ...state, model }));
      return { json: JSON.stringify({ ...reply, output: reply.output ?? null }) };
    }
    case "hook": {
      const { key, phase, progress } = request as { key: string; phase: "before" | "after"; progress: HookState };
      const hook = must(side.hooks.get(key), "hook", key);
      await hook.behaviour[phase]?.(hook.config, progress);
      return {};
    }
    case "data":
      return answerData(side, request as unknown as DataRequest, call);
    default:
      throw new Error(`the core made an unknown call ${JSON.stringify(call.kind)}`);
  }
}

/**
 * The function the core calls and waits on. It always resolves: an exception of the user's code
 * is kept in `side.thrown` (to be rethrown by `learn()` as it is) and the core is told the run
 * failed, so the training thread stops instead of waiting forever.
 */
export function foreignCalls(side: JsSide, callbacks: RunCallbacks, model: ListenerModel): (call: ForeignCall) => Promise<ForeignReply> {
  return async (call) => {
    try {
      return await dispatch(side, callbacks, model, call);
    } catch (error) {
      side.thrown ??= { error };
      return { failed: error instanceof Error ? error.message : String(error) };
    }
  };
}

type Report = { kind: "step"; progress: StepProgress } | { kind: "warning"; message: string };

/**
 * The function the core reports to without waiting. A throwing `onProgress` or `onWarning`
 * must not become an uncaught exception that kills the process: it is kept in `side.thrown`
 * and `stop` ends the run.
 */
export function reporter(side: JsSide, callbacks: RunCallbacks, stop: () => void): (text: string) => void {
  return (text) => {
    // After a callback failed the run is stopping: no more of the user's callbacks.
    if (side.thrown) return;
    try {
      const report = JSON.parse(text) as Report;
      if (report.kind === "warning") callbacks.onWarning(report.message);
      else callbacks.onProgress?.(report.progress);
    } catch (error) {
      side.thrown = { error };
      stop();
    }
  };
}

/**
 * The model `run` trains, for its TypeScript listeners: scoring requests go to the training
 * thread, which serves them while it waits for the listener (see crates/node-binding/src/bridge.rs).
 */
export function trainingModel(binding: NativeBinding, run: LearnRun): ListenerModel {
  return {
    async score(records) {
      if (records.length === 0) return new Float32Array(0);
      return Float32Array.from(unwrapOutcome<number[]>(await binding.scoreDuringRun(run, scoreRows(records))));
    },
  };
}
