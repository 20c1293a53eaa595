// docs/architecture.md stays true: every repository path it names exists, and its table of the
// core's layers is scripts/check-layers.mjs's LAYERS, in order.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { LAYERS } from "../scripts/check-layers.mjs";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const DOC = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");

// Relative imports in code blocks (`../../ts/x.js`) name compiled modules, not sources: skipped.
const PATH = /(?<![\w./])(?:ts|test|crates|scripts|docs|benchmarks)\/[\w./*-]*[\w*]/g;

/** Whether a path, possibly ending in a `*.ext` glob, names something in the repository. */
function exists(path: string): boolean {
  const glob = /^(.*)\/\*(\.\w+)$/.exec(path);
  if (!glob) return existsSync(join(ROOT, path));
  const [, dir = "", ext = ""] = glob;
  return existsSync(join(ROOT, dir)) && readdirSync(join(ROOT, dir)).some((f) => f.endsWith(ext));
}

/** The modules of each row of the "Layers of the core" table, in the table's order. */
function documentedLayers(): string[][] {
  const section = DOC.split(/^## /m).find((s) => s.startsWith("Layers of the core"));
  if (!section) throw new Error('docs/architecture.md has no section "Layers of the core"');
  return section
    .split("\n")
    .filter((line) => /^\| \d+ \|/.test(line))
    .map((line) => [...(line.split("|")[2] ?? "").matchAll(/`(\w+)`/g)].map((m) => m[1] ?? ""));
}

describe("docs/architecture.md", () => {
  it("names only paths that exist", () => {
    const paths = [...new Set(DOC.match(PATH) ?? [])];
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !exists(p))).toEqual([]);
  });

  it("lists the core's layers as scripts/check-layers.mjs does, lowest first", () => {
    expect(documentedLayers()).toEqual(LAYERS.map((layer) => [...layer]));
  });
});
