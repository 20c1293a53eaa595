// The JavaScript side of a run: the parts of a Learner written in TypeScript, replaced by
// stand-ins in the configuration the core reads, and the two channels the core uses to reach
// them (see docs/architecture.md): reports nobody waits on, and foreign calls answered by a
// Promise the training thread waits on.
import { TYPE_KEY, configClassOf } from "../config/class.js";
import { ModuleLoader } from "../config/classes/module.js";
import { initTasksOf } from "../config/identifier-marks.js";
import { JS_OBJECT, type Wire, toWire } from "../config/wire.js";
import { ConfigError, unwrapOutcome } from "../errors.js";
import { type Answer, registeredBehaviour } from "../extensions.js";
import type { EpochReport, RunStart, StepProgress, ValidationProgress } from "../learn-types.js";
import { type ListenerModel, scoreRows } from "../model.js";
import type { ForeignCall, ForeignReply, LearnRun, NativeBinding } from "../native.js";

/** One object written in TypeScript in a run: what it is (for messages) and its answers. */
interface Part {
  readonly what: string;
  readonly answer: Answer;
}

/** What runs on the JavaScript side of one run: its objects written in TypeScript, by key. */
export interface JsSide {
  readonly parts: Map<string, Part>;
  /** The Learner's seed, given to samplers. */
  readonly seed: number;
  /** What the user's code threw first, rethrown as it is by `learn()`. */
  thrown?: { readonly error: unknown };
}

export function emptySide(seed: number): JsSide {
  return { parts: new Map(), seed };
}

/**
 * Stand-ins for what is written in TypeScript, registered in `side` as they are met: every one
 * of the same shape (see `registerBehaviour` in ts/extensions.ts and `JsObjectConfig` in the core).
 */
function standIns(side: JsSide): (config: object, params: () => Wire) => Wire | undefined {
  return (config, params): Wire | undefined => {
    const registered = registeredBehaviour(config);
    if (!registered) return undefined;
    const { extension, behaviour } = registered;
    const typeId = configClassOf(config)?.typeId ?? "";
    const key = `${side.parts.size}:${typeId}`;
    side.parts.set(key, { what: `${extension.name} ${typeId}`, answer: extension.answerer(config, behaviour, side.seed) });
    return { [TYPE_KEY]: JS_OBJECT, key, class: typeId, kind: extension.kindOf(behaviour), params: params() };
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

/** What of the run is written in TypeScript (what the core cannot run without Node). */
export function javaScriptParts(side: JsSide): string[] {
  return [...side.parts.values()].map((part) => part.what);
}

/** What the user gave `learn()` that the bridge calls. */
export interface RunCallbacks {
  readonly onEpoch?: (report: EpochReport) => void;
  readonly onProgress?: (progress: StepProgress) => void;
  readonly onStart?: (start: RunStart) => void;
  readonly onValidation?: (progress: ValidationProgress) => void;
  readonly onWarning: (message: string) => void;
}

/** The end of an epoch goes to `onEpoch`; every other call is about an object, by its key. */
async function dispatch(side: JsSide, callbacks: RunCallbacks, model: ListenerModel, call: ForeignCall): Promise<ForeignReply> {
  const request = JSON.parse(call.json) as Record<string, unknown>;
  if (call.kind === "epoch") {
    callbacks.onEpoch?.(request as unknown as EpochReport);
    return {};
  }
  const key = request.key;
  const part = typeof key === "string" ? side.parts.get(key) : undefined;
  if (!part) throw new Error(`the core made a ${JSON.stringify(call.kind)} call about ${JSON.stringify(key)}, no TypeScript object of this run`);
  return part.answer({ request, floats: call.floats, ints: call.ints, model });
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

type Report =
  | { kind: "start"; start: RunStart }
  | { kind: "step"; progress: StepProgress }
  | { kind: "validation"; progress: ValidationProgress }
  | { kind: "warning"; message: string };

function deliver(callbacks: RunCallbacks, report: Report): void {
  switch (report.kind) {
    case "start":
      return callbacks.onStart?.(report.start);
    case "step":
      return callbacks.onProgress?.(report.progress);
    case "validation":
      return callbacks.onValidation?.(report.progress);
    case "warning":
      return callbacks.onWarning(report.message);
  }
}

/**
 * The function the core reports to without waiting. A throwing `onProgress`, `onValidation` or `onWarning`
 * must not become an uncaught exception that kills the process: it is kept in `side.thrown`
 * and `stop` ends the run.
 */
export function reporter(side: JsSide, callbacks: RunCallbacks, stop: () => void): (text: string) => void {
  return (text) => {
    // After a callback failed the run is stopping: no more of the user's callbacks.
    if (side.thrown) return;
    try {
      deliver(callbacks, JSON.parse(text) as Report);
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
