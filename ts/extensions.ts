// Extension points: configuration classes whose behaviour is written in TypeScript and that the
// core calls back during a run (listeners, hooks, samplers, dims providers, in-memory datasets).
// One registry holds them all, so the bridge (ts/run/bridge.ts) sends every such object to the core
// as the same stand-in and routes every call about it here, with no code of its own per kind.
import { lookupByClass } from "./config/class.js";
import type { ListenerModel } from "./model.js";
import type { ForeignReply } from "./native.js";

/** A call of the core about one object written in TypeScript. */
export interface CoreCall {
  /** The request's JSON (it always holds the object's `key`). */
  readonly request: Readonly<Record<string, unknown>>;
  /** Arrays the core handed over with it (records, for a dims provider), by name. */
  readonly floats?: Readonly<Record<string, Float32Array>>;
  readonly ints?: Readonly<Record<string, Int32Array>>;
  /** The model being trained, which a listener may score with while the core waits. */
  readonly model: ListenerModel;
}

/** How one object answers the core's calls during one run. */
export type Answer = (call: CoreCall) => ForeignReply | Promise<ForeignReply>;

/** A kind of object whose behaviour `B` is written in TypeScript and called by the core. */
export interface Extension<B> {
  /** What the kind is called in messages (`listener`, `sampler`, ...). */
  readonly name: string;
  /**
   * What the core must know of a behaviour to build its part, sent as the stand-in's `kind`
   * (a sampler's record kind, a hook's `step` or `initialization`, ...).
   */
  kindOf(behaviour: B): string;
  /**
   * The answers to the core's calls about `config` in a run seeded with `seed`; made once per
   * run, when the configuration is sent, so it may hold the run's state (a sampler's stream).
   */
  answerer(config: object, behaviour: B, seed: number): Answer;
}

/** The extension and behaviour a class was registered with. */
export interface Registered {
  readonly extension: Extension<unknown>;
  readonly behaviour: unknown;
}

const registry = new WeakMap<object, Registered>();

/**
 * Registers the behaviour of the configuration class `cls` (and of its subclasses) as one of
 * `extension`: its configurations then reach the core as stand-ins and the core's calls about
 * them are answered by `extension.answerer`. A `defineX` helper calls it after `defineConfig`.
 */
export function registerBehaviour<B>(cls: object, extension: Extension<B>, behaviour: B): void {
  registry.set(cls, { extension: extension as Extension<unknown>, behaviour });
}

/** The extension and behaviour of a configuration's class (or its nearest ancestor's), if any. */
export function registeredBehaviour(config: object): Registered | undefined {
  return lookupByClass(registry, config);
}
