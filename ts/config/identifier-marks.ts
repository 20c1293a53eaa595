// The marks a configuration object carries beyond its values, which enter identifiers as in
// experimaestro: the task it is an output of, its initialisation tasks, and meta.
import { configClassOf } from "./class.js";

const metaMarks = new WeakMap<object, boolean>();
const producers = new WeakMap<object, object>();

/**
 * Marks `config` as an output of the task `task` (experimaestro's `dep`): its identifier then
 * depends on the task's.
 */
export function markAsOutputOf<C extends object>(config: C, task: object): C {
  if (!configClassOf(config) || !configClassOf(task)) throw new TypeError("markAsOutputOf() takes configuration objects");
  if (config === task) throw new TypeError("a task cannot be its own output");
  producers.set(config, task);
  return config;
}

/** The task `config` was marked an output of (see {@link markAsOutputOf}), if any. */
export function producerOf(config: object): object | undefined {
  return producers.get(config);
}

const initTaskLists = new WeakMap<object, readonly object[]>();

/**
 * Gives the task `config` initialisation tasks (experimaestro's `init_tasks` of `submit()`):
 * for a Learner, ModuleLoaders whose weights the fresh model takes before training (a trained
 * Learner's output, a checkpoint). They enter the task's identifier as in Python, after its
 * parameters; an empty list removes them. Returns `config`.
 */
export function setInitTasks<C extends object>(config: C, tasks: readonly object[]): C {
  if (!configClassOf(config) || tasks.some((t) => !configClassOf(t))) throw new TypeError("setInitTasks() takes configuration objects");
  if (tasks.includes(config)) throw new TypeError("a task cannot be its own initialisation task");
  initTaskLists.set(config, [...tasks]);
  return config;
}

/** The initialisation tasks given to `config` by {@link setInitTasks}. */
export function initTasksOf(config: object): readonly object[] {
  return initTaskLists.get(config) ?? [];
}

/**
 * Marks a configuration as meta (`true`: left out of every identifier it appears in) or forces
 * it into identifiers where it sits in an ignored parameter (`false`).
 */
export function setMeta<C extends object>(config: C, mark: boolean): C {
  if (!configClassOf(config)) throw new TypeError("setMeta() takes a configuration object");
  metaMarks.set(config, mark);
  return config;
}

/** The mark {@link setMeta} gave `config`, or null when it has none. */
export function metaMarkOf(config: object): boolean | null {
  return metaMarks.get(config) ?? null;
}
