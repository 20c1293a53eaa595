import { join } from "node:path";

import { ConfigError } from "../errors.js";
import { configClassOf } from "../config/class.js";
import type { GeneratedPaths } from "../config/identifiers.js";

/**
 * Where each generated path of a task's tree goes (identifiers.md §11.2): the task's own under
 * the job directory, a nested configuration's under `out/<arg>/<index or key>/…`, following
 * the first route that reaches it, arguments in declaration order.
 */
export function generatePaths(task: object, jobDir: string): GeneratedPaths {
  const paths = new Map<object, Map<string, string>>();
  const visited = new Set<object>();

  const visitConfig = (config: object, dir: string, route: string): void => {
    if (visited.has(config)) return;
    visited.add(config);
    const cls = configClassOf(config);
    if (!cls) return;
    const own = new Map<string, string>();
    for (const [name, { spec }] of Object.entries(cls.params)) {
      if (spec.kind === "generated" && spec.generatedPath !== undefined) own.set(name, join(dir, spec.generatedPath));
    }
    if (own.size > 0) paths.set(config, own);
    const record = config as Record<string, unknown>;
    for (const name of Object.keys(cls.params)) {
      visitValue(record[name], config === task ? join(jobDir, "out", name) : join(dir, name), `${route}.${name}`);
    }
  };

  const visitValue = (value: unknown, dir: string, route: string): void => {
    if (typeof value !== "object" || value === null) return;
    if (configClassOf(value)) return visitConfig(value, dir, route);
    if (Array.isArray(value)) return value.forEach((v, i) => visitValue(v, join(dir, String(i)), `${route}[${i}]`));
    if (value instanceof Set) {
      for (const element of value) {
        if (typeof element === "object" && element !== null && containsGenerated(element)) {
          throw new ConfigError(route, "a configuration with generated paths cannot sit in a set (it has no path of its own)");
        }
      }
      return;
    }
    for (const [k, v] of Object.entries(value)) visitValue(v, join(dir, k), `${route}.${k}`);
  };

  visitConfig(task, jobDir, configClassOf(task)?.name.toLowerCase() ?? "task");
  return paths;
}

function containsGenerated(value: object, seen = new Set<object>()): boolean {
  if (seen.has(value)) return false;
  seen.add(value);
  const cls = configClassOf(value);
  if (cls && Object.values(cls.params).some(({ spec }) => spec.kind === "generated")) return true;
  const children = value instanceof Set || Array.isArray(value) ? [...value] : Object.values(value);
  return children.some((c) => typeof c === "object" && c !== null && containsGenerated(c, seen));
}
