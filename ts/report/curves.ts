import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

import { type Scalar, readScalars } from "./tfevents.js";

/** One logged tag's values by step. */
export interface Curve {
  readonly tag: string;
  readonly points: readonly { readonly step: number; readonly value: number }[];
}

/** Every `*tfevents*` file under `dir`, sorted by path (a run's files sort by creation time). */
export function eventFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...eventFilesUnder(path));
    else if (name.includes("tfevents")) found.push(path);
  }
  return found;
}

/**
 * The curves of `scalars`, tags sorted. A step logged twice (a resumed run logs the steps after
 * its checkpoint again) keeps the value written last.
 */
export function curvesOf(scalars: readonly Scalar[]): Curve[] {
  const byTag = new Map<string, Map<number, number>>();
  for (const { tag, step, value } of scalars) {
    let steps = byTag.get(tag);
    if (!steps) byTag.set(tag, (steps = new Map()));
    steps.set(step, value);
  }
  return [...byTag.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([tag, steps]) => ({
      tag,
      points: [...steps.entries()].sort(([a], [b]) => a - b).map(([step, value]) => ({ step, value })),
    }));
}

/** The curves of every event file under `logdir`. */
export function readCurves(logdir: string): Curve[] {
  return curvesOf(eventFilesUnder(logdir).flatMap((file) => readScalars(file)));
}
