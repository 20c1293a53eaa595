import { type ClassOptions, type ConfigClass, defineConfig } from "./config/class.js";
import { LearnerListener } from "./config/classes/learner.js";
import type { Params, ValuesOf } from "./config/declare.js";
import type { Config } from "./config/class.js";
import { type Extension, registerBehaviour } from "./extensions.js";
import type { ListenerModel } from "./model.js";

export type { ListenerModel } from "./model.js";

/** A listener's vote: training stops when one says STOP and none says DONT_STOP. */
export type ListenerDecision = "NO_DECISION" | "STOP" | "DONT_STOP";

/** What a listener sees after an epoch. */
export interface ListenerState {
  /** The model being trained. */
  readonly model: ListenerModel;
  /** The epoch that just ended, from 1. */
  readonly epoch: number;
  /** The global step. */
  readonly step: number;
  /** The epoch's training metrics (`pair-hinge`, `accuracy`, learning rates, ...). */
  readonly train: Readonly<Record<string, number>>;
}

/** A listener's full answer: its vote, metrics to log under their tags, and its output. */
export interface ListenerReply {
  readonly status: ListenerDecision;
  readonly metrics?: Readonly<Record<string, number>>;
  /** What `learn()` reports for this listener (its last answer's). */
  readonly output?: unknown;
}

type ListenerParams<P extends Params> = (typeof LearnerListener)["params"] & P;

/** The behaviour of a listener written in TypeScript. */
export interface ListenerBehaviour<V> {
  /** Called after every epoch, awaited before training goes on. */
  call(self: V, state: ListenerState): ListenerDecision | ListenerReply | Promise<ListenerDecision | ListenerReply>;
}

/** Listeners: the core calls `{ key, state }` after every epoch and reads the reply's vote. */
const listeners: Extension<ListenerBehaviour<object>> = {
  name: "listener",
  kindOf: () => "listener",
  answerer: (config, behaviour) => async ({ request, model }) => {
    const state = request.state as Omit<ListenerState, "model">;
    const reply = toReply(await behaviour.call(config, { ...state, model }));
    return { json: JSON.stringify({ ...reply, output: reply.output ?? null }) };
  },
};

/**
 * Declares a listener class whose behaviour is written in TypeScript. The Rust loop calls it
 * after every epoch and waits for its answer. Its parameters take part in the experiment's
 * identifier like any other listener's.
 */
export function defineListener<const Id extends string, P extends Params>(
  typeId: Id,
  params: P,
  behaviour: ListenerBehaviour<Config<Id, ValuesOf<ListenerParams<P>>>>,
  options: Omit<ClassOptions<ListenerParams<P>>, "extends"> = {},
): ConfigClass<Id, ListenerParams<P>> {
  const cls = defineConfig(typeId, params, { ...options, extends: LearnerListener } as never) as unknown as ConfigClass<Id, ListenerParams<P>>;
  registerBehaviour(cls, listeners, behaviour as ListenerBehaviour<object>);
  return cls;
}

/** Normalises what a behaviour returned. */
function toReply(answer: ListenerDecision | ListenerReply): ListenerReply {
  return typeof answer === "string" ? { status: answer } : answer;
}
