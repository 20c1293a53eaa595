// The layer order of the TypeScript side (docs/architecture.md, "Layers of the TypeScript side"):
// a module of ts/ may import its own layer and those below it, never one above, and no file may
// import itself back through others. Reads every .ts file under ts/ and fails on any relative
// import (static, `export … from`, dynamic `import("…")`, type-only ones included) into a higher
// layer, on any import cycle between files, and on a top-level folder or file in no layer.
//
//   node scripts/check-ts-layers.mjs [SRC_DIR]

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Lowest first. Each entry of ts/ (a folder, or a file without its `.ts`) belongs to exactly one
 * layer; `cli` is both the folder of commands and `cli.ts`, the bin script that starts them.
 */
export const LAYERS = [
  ["errors", "paths"],
  ["hub"],
  ["identity"],
  ["config"],
  ["workspace"],
  ["report"],
  ["libtorch", "native"],
  ["model", "extensions", "listeners", "hooks", "samplers", "dims-providers"],
  ["progress"],
  ["learn-types"],
  ["run"],
  ["learn", "job-summary", "demo-config", "demo"],
  ["experiment"],
  ["index"],
  ["cli"],
];

const layerOf = new Map(LAYERS.flatMap((names, i) => names.map((name) => [name, i])));

/** The layer name of a file of `srcDir`: its top-level folder, or its own name without `.ts`. */
function topLevel(rel) {
  return rel.split("/")[0].replace(/\.[cm]?ts$/, "");
}

function* tsFiles(dir) {
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* tsFiles(path);
    else if (/\.[cm]?ts$/.test(entry) && !entry.endsWith(".d.ts")) yield path;
  }
}

/** `text` with its comments blanked (newlines kept, so that offsets keep their line). */
function withoutComments(text) {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    const next = text[i + 1];
    if (ch === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") {
        out += " ";
        i++;
      }
    } else if (ch === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (ch === '"' || ch === "'" || ch === "`") {
      // A string runs to its unescaped quote; a template's `${…}` is read as part of it.
      let j = i + 1;
      while (j < text.length && text[j] !== ch && !(ch !== "`" && text[j] === "\n")) j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

const IMPORTS = [
  /\b(?:import|export)\s+(?:type\s+)?[\w$*{},\s]*?\bfrom\s*(["'])([^"'\n]+)\1/g, // import … from, export … from
  /\bimport\s*(["'])([^"'\n]+)\1/g, // import "x" (for its effects)
  /\bimport\s*\(\s*(["'])([^"'\n]+)\1\s*\)/g, // import("x"), typeof import("x")
];

/** The relative imports of a source: each with its specifier and (1-based) line. */
export function importsOf(text) {
  const code = withoutComments(text);
  const found = [];
  for (const re of IMPORTS) {
    for (const m of code.matchAll(re)) {
      const spec = m[2];
      if (!spec.startsWith(".")) continue;
      const at = m.index + m[0].lastIndexOf(spec);
      found.push({ spec, line: code.slice(0, at).split("\n").length });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

/**
 * The source file a relative specifier names (`./x.js` is `x.ts`, or the declarations `x.d.ts`
 * as napi-rs generates them for the addon), or undefined.
 */
function resolveImport(fromFile, spec) {
  const target = resolve(dirname(fromFile), spec);
  const source = target.replace(/\.js$/, ".ts").replace(/\.mjs$/, ".mts").replace(/\.cjs$/, ".cts");
  const declarations = source.replace(/\.([cm]?)ts$/, ".d.$1ts");
  const candidates = [source, declarations, `${target}.ts`, join(target, "index.ts"), target];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** Every file of `srcDir` (relative, `/`-separated) with the files it imports and where. */
function importGraph(srcDir) {
  const root = resolve(srcDir);
  const rel = (path) => relative(root, path).split(sep).join("/");
  const graph = new Map();
  const unresolved = [];
  for (const file of tsFiles(root)) {
    const edges = [];
    for (const { spec, line } of importsOf(readFileSync(file, "utf8"))) {
      const target = resolveImport(file, spec);
      if (target === undefined) unresolved.push(`${rel(file)}:${line}: imports ${spec}, which is no file`);
      else if (!relative(root, target).startsWith("..")) edges.push({ to: rel(target), line });
    }
    graph.set(rel(file), edges);
  }
  return { graph, unresolved };
}

/** The strongly connected sets of files (Tarjan), those of more than one file or a self-import. */
function cyclicSets(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const sets = [];
  let next = 0;
  const visit = (file) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const { to } of graph.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file), low.get(to)));
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file), index.get(to)));
    }
    if (low.get(file) !== index.get(file)) return;
    const set = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      set.push(member);
    } while (member !== file);
    if (set.length > 1 || (graph.get(file) ?? []).some((e) => e.to === file)) sets.push(set.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return sets.sort((a, b) => a[0].localeCompare(b[0]));
}

/** The shortest cycle through the first file of a strongly connected set: `a.ts:3 → b.ts:7 → a.ts`. */
function cycleThrough(graph, set) {
  const members = new Set(set);
  const start = set[0];
  // Breadth first from `start`: each file with the import that reached it first.
  const reachedBy = new Map();
  const queue = [start];
  while (queue.length > 0 && !reachedBy.has(start)) {
    const file = queue.shift();
    for (const { to, line } of graph.get(file) ?? []) {
      if (!members.has(to) || reachedBy.has(to)) continue;
      reachedBy.set(to, { from: file, line });
      queue.push(to);
    }
  }
  const steps = [];
  let file = start;
  do {
    const { from, line } = reachedBy.get(file);
    steps.unshift(`${from}:${line}`);
    file = from;
  } while (file !== start);
  return `${steps.join(" → ")} → ${start}`;
}

/** Every import into a higher layer, every file in no layer, and every import cycle. */
export function tsLayerProblems(srcDir) {
  const { graph, unresolved } = importGraph(srcDir);
  const problems = [...unresolved];
  for (const [file, edges] of graph) {
    const own = layerOf.get(topLevel(file));
    if (own === undefined) {
      problems.push(`${file}: \`${topLevel(file)}\` is in no layer (scripts/check-ts-layers.mjs, LAYERS)`);
      continue;
    }
    for (const { to, line } of edges) {
      const layer = layerOf.get(topLevel(to));
      if (layer !== undefined && layer > own) problems.push(`${file}:${line} imports ${to} (layer ${layer}) from layer ${own}`);
    }
  }
  for (const set of cyclicSets(graph)) problems.push(`import cycle: ${cycleThrough(graph, set)}`);
  return problems;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const src = process.argv[2] ?? join(fileURLToPath(new URL("..", import.meta.url)), "ts");
  const problems = tsLayerProblems(src);
  if (problems.length > 0) {
    console.error(`The TypeScript layers (docs/architecture.md) are broken in ${problems.length} place(s) of ${src}:`);
    for (const p of problems) console.error(`  ${p}`);
    process.exit(1);
  }
  console.log(`ts layers: ${LAYERS.map((l) => l.join("/")).join(" → ")}: no upward import, no cycle`);
}
