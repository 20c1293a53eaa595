// The layer order of the Rust core (docs/architecture.md, "Layers"): a module may use its own
// layer and those below it, never one above. Reads every file of crates/core/src, test modules
// and test files held to the same order (a test that needs a higher layer, such as a whole run
// through the learner, is an integration test in crates/core/tests), and fails on any `crate::`
// path into a higher layer.
//
//   node scripts/check-layers.mjs [SRC_DIR]

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Lowest first. Each top-level module of the core belongs to exactly one layer. */
export const LAYERS = [
  ["error"],
  ["fsutil", "ffi"],
  ["config"],
  ["rng", "runtime", "text", "logging"],
  ["data"],
  ["models"],
  ["losses"],
  ["optim", "batching"],
  ["distributed"],
  ["learner"],
];

/** What the crate root re-exports, by the module that defines it. */
const ROOT_ITEMS = { Error: "error", Result: "error" };

const layerOf = new Map(LAYERS.flatMap((mods, i) => mods.map((m) => [m, i])));

/** The file's lines, without their `//` comments. */
function codeLines(text) {
  return text.split("\n").map((line) => line.replace(/\/\/.*$/, ""));
}

/** The top-level modules named by `crate::` paths on a line, `crate::{a::x, b}` included. */
function targets(line) {
  const found = [];
  const re = /\bcrate::(\{|[A-Za-z_][A-Za-z0-9_]*)/g;
  let m;
  while ((m = re.exec(line))) {
    if (m[1] !== "{") {
      found.push(m[1]);
      continue;
    }
    let depth = 0;
    let item = "";
    for (let i = m.index + m[0].length - 1; i < line.length; i++) {
      const ch = line[i];
      if (ch === "{") {
        depth++;
        if (depth === 1) continue;
      }
      if (ch === "}") depth--;
      if (depth === 0) break;
      if (depth === 1 && ch === ",") {
        found.push(item.trim().split("::")[0]);
        item = "";
      } else if (depth >= 1) item += ch;
    }
    if (item.trim()) found.push(item.trim().split("::")[0]);
  }
  return found.map((name) => ROOT_ITEMS[name] ?? name).filter((name) => name && name !== "self");
}

function* rustFiles(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* rustFiles(path);
    else if (entry.endsWith(".rs")) yield path;
  }
}

/** Every `crate::` use into a higher layer, and every top-level module no layer names. */
export function layerViolations(srcDir) {
  const problems = [];
  for (const file of rustFiles(srcDir)) {
    const rel = relative(srcDir, file);
    const own = rel.split(sep)[0].replace(/\.rs$/, "");
    if (own === "lib") continue;
    const ownLayer = layerOf.get(own);
    if (ownLayer === undefined) {
      problems.push(`${rel}: module \`${own}\` is in no layer (scripts/check-layers.mjs, LAYERS)`);
      continue;
    }
    codeLines(readFileSync(file, "utf8")).forEach((line, i) => {
      for (const target of targets(line)) {
        const layer = layerOf.get(target);
        if (layer !== undefined && layer > ownLayer) {
          problems.push(`${rel}:${i + 1}: \`${own}\` (layer ${ownLayer}) uses \`crate::${target}\` (layer ${layer}, above it)`);
        }
      }
    });
  }
  return problems;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const src = process.argv[2] ?? join(fileURLToPath(new URL("..", import.meta.url)), "crates", "core", "src");
  const problems = layerViolations(src);
  if (problems.length > 0) {
    console.error(`The core's layers (docs/architecture.md) are broken in ${problems.length} place(s):`);
    for (const p of problems) console.error(`  ${p}`);
    process.exit(1);
  }
  console.log(`core layers: ${LAYERS.map((l) => l.join("/")).join(" → ")}: no upward import`);
}
