import { type ClassOptions, type Config, type ConfigClass, defineConfig } from "./config/class.js";
import { InitializationTrainingHook, StepTrainingHook, type TrainingHookKind } from "./config/classes/hooks.js";
import type { Params, ValuesOf } from "./config/declare.js";
import { type Extension, registerBehaviour } from "./extensions.js";

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
  readonly kind: TrainingHookKind;
  before?(self: V, state: HookState): void | Promise<void>;
  after?(self: V, state: HookState): void | Promise<void>;
}

/** Hooks: the core calls `{ key, phase, progress }` before and after what the kind says. */
const hooks: Extension<HookBehaviour<object>> = {
  name: "hook",
  kindOf: (behaviour) => behaviour.kind,
  answerer: (config, behaviour) => async ({ request }) => {
    const { phase, progress } = request as { phase: "before" | "after"; progress: HookState };
    await behaviour[phase]?.(config, progress);
    return {};
  },
};

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
  registerBehaviour(cls, hooks, behaviour as HookBehaviour<object>);
  return cls;
}
