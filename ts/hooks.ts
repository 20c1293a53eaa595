import { type ClassOptions, type Config, type ConfigClass, defineConfig, lookupByClass } from "./config/class.js";
import { InitializationTrainingHook, StepTrainingHook } from "./config/classes/hooks.js";
import type { Params, ValuesOf } from "./config/declare.js";

/** Where the run is when a hook is called. */
export interface HookState {
  readonly epoch: number;
  readonly step: number;
  readonly totalSteps: number;
}

/** The behaviour of a training hook written in TypeScript. */
export interface HookBehaviour<V> {
  /**
   * `step`: around each optimizer step (the loop waits for each call: slower, use sparingly);
   * `initialization`: before the run is built and after it is built (and restored).
   */
  readonly kind: "step" | "initialization";
  before?(self: V, state: HookState): void | Promise<void>;
  after?(self: V, state: HookState): void | Promise<void>;
}

const behaviours = new WeakMap<object, HookBehaviour<never>>();

/**
 * Declares a training hook class whose behaviour is written in TypeScript; put its
 * configurations in a trainer's `hooks`. Its parameters enter identifiers like any other hook's.
 */
export function defineHook<const Id extends string, P extends Params>(
  typeId: Id,
  params: P,
  behaviour: HookBehaviour<Config<Id, ValuesOf<P>>>,
  options: Omit<ClassOptions<P>, "extends"> = {},
): ConfigClass<Id, P> {
  const parent = behaviour.kind === "step" ? StepTrainingHook : InitializationTrainingHook;
  const cls = defineConfig(typeId, params, { ...options, extends: parent } as never) as unknown as ConfigClass<Id, P>;
  behaviours.set(cls, behaviour as HookBehaviour<never>);
  return cls;
}

/** The TypeScript behaviour of a hook configuration, if it has one. */
export function hookBehaviour(config: object): HookBehaviour<object> | undefined {
  return lookupByClass(behaviours, config) as HookBehaviour<object> | undefined;
}
