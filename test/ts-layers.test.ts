// The TypeScript side's layer order (scripts/check-ts-layers.mjs, docs/architecture.md "Layers of
// the TypeScript side"): ts/ has no upward import and no import cycle, and the checker finds each
// kind of import that breaks the order, a cycle, and a file in no layer.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { LAYERS, importsOf, tsLayerProblems } from "../scripts/check-ts-layers.mjs";
import { repoRoot } from "./helpers/node.js";

const TS = join(repoRoot, "ts");
const SCRIPT = join(repoRoot, "scripts", "check-ts-layers.mjs");

const layerOf = (name: string): number => LAYERS.findIndex((layer) => layer.includes(name));

/** `node scripts/check-ts-layers.mjs [dir]`. */
function check(dir?: string) {
  return spawnSync(process.execPath, [SCRIPT, ...(dir ? [dir] : [])], { encoding: "utf8" });
}

describe("the TypeScript side's layers", () => {
  const trees: string[] = [];
  afterEach(() => {
    for (const dir of trees.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A tree of sources: file (relative, `/`-separated) → text. */
  function tree(files: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), "xpm-ts-layers-"));
    trees.push(dir);
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    return dir;
  }

  it("places each entry of ts/ in one layer, and names only entries that exist", () => {
    const names = LAYERS.flat();
    expect(new Set(names).size).toBe(names.length);
    const entries = new Set(readdirSync(TS).map((entry) => entry.replace(/\.ts$/, "")));
    expect([...entries].filter((entry) => layerOf(entry) < 0)).toEqual([]);
    expect(names.filter((name) => !entries.has(name))).toEqual([]);
    // The job module lies under the run machinery, which lies under the experiments.
    expect(layerOf("workspace")).toBeLessThan(layerOf("run"));
    expect(layerOf("run")).toBeLessThan(layerOf("experiment"));
  });

  it("finds no upward import and no cycle in ts/", () => {
    expect(tsLayerProblems(TS)).toEqual([]);
    const run = check();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("no upward import, no cycle");
  });

  it("reads every form of import, and skips those in comments", () => {
    const text = [
      'import { a } from "./a.js";',
      'import type { B } from "../b.js";',
      "import {",
      "  c,",
      '} from "./c.js";',
      'export * as d from "./d.js";',
      'import "./e.js";',
      'const f = await import("./f.js");',
      'type G = typeof import("./g.js");',
      '// import { h } from "./h.js";',
      '/* import("./i.js") */',
      'import { z } from "zod";',
    ].join("\n");
    expect(importsOf(text)).toEqual([
      { spec: "./a.js", line: 1 },
      { spec: "../b.js", line: 2 },
      { spec: "./c.js", line: 5 },
      { spec: "./d.js", line: 6 },
      { spec: "./e.js", line: 7 },
      { spec: "./f.js", line: 8 },
      { spec: "./g.js", line: 9 },
    ]);
  });

  it("reports upward imports (type-only, dynamic, re-exports), a file in no layer and a cycle", () => {
    const dir = tree({
      "workspace/job.ts": [
        'import type { Launch } from "../run/launch.js";',
        "export const job = 1;",
        'export const later = () => import("../cli/main.js");',
      ].join("\n"),
      "run/launch.ts": 'import { errors } from "../errors.js";\nexport type Launch = typeof errors;\n',
      "errors.ts": "export const errors = 1;\n",
      "cli/main.ts": "export const main = 1;\n",
      "report/job.ts": 'export * from "../experiment/scheduler.js";\n',
      "experiment/scheduler.ts": "export const scheduler = 1;\n",
      "config/a.ts": 'import { b } from "./b.js";\nexport const a = () => b;\n',
      "config/b.ts": '// b needs a:\nimport {\n  a,\n} from "./a.js";\nexport const b = () => a;\n',
      "elsewhere/x.ts": "export const x = 1;\n",
    });
    const expected = [
      "elsewhere/x.ts: `elsewhere` is in no layer (scripts/check-ts-layers.mjs, LAYERS)",
      `report/job.ts:1 imports experiment/scheduler.ts (layer ${layerOf("experiment")}) from layer ${layerOf("report")}`,
      `workspace/job.ts:1 imports run/launch.ts (layer ${layerOf("run")}) from layer ${layerOf("workspace")}`,
      `workspace/job.ts:3 imports cli/main.ts (layer ${layerOf("cli")}) from layer ${layerOf("workspace")}`,
      "import cycle: config/a.ts:1 → config/b.ts:4 → config/a.ts",
    ];
    expect(tsLayerProblems(dir)).toEqual(expected);
    const run = check(dir);
    expect(run.status).toBe(1);
    for (const problem of expected) expect(run.stderr).toContain(problem);
  });

  it("reports the shortest cycle through three files, a self-import, and an import of no file", () => {
    const dir = tree({
      "run/a.ts": 'import { b } from "./b.js";\nexport const a = 1;\n',
      "run/b.ts": 'import { c } from "./c.js";\nexport const b = 1;\n',
      "run/c.ts": 'import { a } from "./a.js";\nexport const c = 1;\n',
      "run/d.ts": 'import type { D } from "./d.js";\nimport { gone } from "./gone.js";\nexport type D = number;\n',
    });
    expect(tsLayerProblems(dir)).toEqual([
      "run/d.ts:2: imports ./gone.js, which is no file",
      "import cycle: run/a.ts:1 → run/b.ts:1 → run/c.ts:1 → run/a.ts",
      "import cycle: run/d.ts:1 → run/d.ts",
    ]);
  });

  it("resolves an import of a CommonJS module to its declarations, as those napi-rs generates for the addon", () => {
    const dir = tree({
      "ts/native.ts": 'import type * as Addon from "../binding.cjs";\nexport type Binding = typeof Addon;\n',
      "binding.d.cts": "export declare function learn(): void;\n",
    });
    expect(tsLayerProblems(join(dir, "ts"))).toEqual([]);
  });
});
