// Which tasks a task needs first: the producers of the outputs it uses, in its parameters or its
// initialisation tasks. Using a Learner's loader in another job makes that job wait for it.
import { configClassOf } from "../config/class.js";
import { initTasksOf, producerOf } from "../config/identifier-marks.js";

/** The distinct tasks whose outputs `task` uses, in the order they are met. */
export function dependenciesOf(task: object): object[] {
  const found = new Set<object>();
  const seen = new Set<object>();
  const visitValue = (value: unknown): void => {
    if (typeof value !== "object" || value === null || seen.has(value)) return;
    seen.add(value);
    if (configClassOf(value)) {
      const producer = producerOf(value);
      // The producer's own inputs are its dependencies, not this task's.
      if (producer) found.add(producer);
      else for (const child of Object.values(value)) visitValue(child);
      initTasksOf(value).forEach(visitValue);
      return;
    }
    const children = value instanceof Set || Array.isArray(value) ? [...value] : value instanceof Map ? [...value.values()] : Object.values(value);
    children.forEach(visitValue);
  };
  visitValue(task);
  return [...found];
}

/**
 * A chain of dependencies from `task` back to itself, if there is one (each step a producer of an
 * output the previous one uses); undefined when the graph below `task` has no cycle through it.
 */
export function cycleThrough(task: object): object[] | undefined {
  const onPath: object[] = [];
  const done = new Set<object>();
  const walk = (node: object): object[] | undefined => {
    for (const dependency of dependenciesOf(node)) {
      if (dependency === task) return [...onPath, node, task];
      if (done.has(dependency) || onPath.includes(dependency)) continue;
      onPath.push(node);
      const cycle = walk(dependency);
      onPath.pop();
      if (cycle) return cycle;
      done.add(dependency);
    }
    return undefined;
  };
  return walk(task);
}
