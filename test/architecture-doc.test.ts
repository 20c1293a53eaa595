// docs/architecture.md stays true: every repository path it names exists, and its tables of the
// core's layers and of the TypeScript side's are the LAYERS of scripts/check-layers.mjs and
// scripts/check-ts-layers.mjs, in order.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { LAYERS } from "../scripts/check-layers.mjs";
import { LAYERS as TS_LAYERS } from "../scripts/check-ts-layers.mjs";

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

/** The modules of each row of the layers table of section `title`, in the table's order. */
function documentedLayers(title: string): string[][] {
  const section = DOC.split(/^## /m).find((s) => s.startsWith(title));
  if (!section) throw new Error(`docs/architecture.md has no section "${title}"`);
  return section
    .split("\n")
    .filter((line) => /^\| \d+ \|/.test(line))
    .map((line) => [...(line.split("|")[2] ?? "").matchAll(/`([\w-]+)`/g)].map((m) => m[1] ?? ""));
}

describe("docs/architecture.md", () => {
  it("names only paths that exist", () => {
    const paths = [...new Set(DOC.match(PATH) ?? [])];
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !exists(p))).toEqual([]);
  });

  it("lists the core's layers as scripts/check-layers.mjs does, lowest first", () => {
    expect(documentedLayers("Layers of the core")).toEqual(LAYERS.map((layer) => [...layer]));
  });

  it("lists the TypeScript side's layers as scripts/check-ts-layers.mjs does, lowest first", () => {
    expect(documentedLayers("Layers of the TypeScript side")).toEqual(TS_LAYERS.map((layer) => [...layer]));
  });
});
