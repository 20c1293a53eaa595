// No production function of the Rust crates runs over MAX_LINES lines, signature and closing
// brace included: a longer one is split into named steps. Test files and `#[cfg(test)]` modules
// are exempt. Relies on rustfmt's layout: a function ends at the first `}` at its own indent.
//
//   node scripts/check-function-length.mjs [CRATES_DIR]

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const MAX_LINES = 80;

const FUNCTION = /^(\s*)(pub(\([a-z:]+\))? )?(const )?(async )?(unsafe )?(extern "C" )?fn (\w+)/;

function isTestPath(path) {
  const parts = path.split(sep);
  const name = parts.at(-1) ?? "";
  return (
    name === "tests.rs" || name.endsWith("_tests.rs") || name === "tests_support.rs" ||
    parts.some((p) => p === "tests" || p === "benches" || p === "examples")
  );
}

function* rustFiles(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (entry === "target" || entry === "node_modules") continue;
    if (statSync(path).isDirectory()) yield* rustFiles(path);
    else if (entry.endsWith(".rs")) yield path;
  }
}

/** The functions of `text` longer than `max` lines, before its first `#[cfg(test)]` module. */
export function longFunctions(text, max = MAX_LINES) {
  const lines = text.split("\n");
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === "#[cfg(test)]" && /^\s*(pub(\([a-z]+\))? )?mod /.test(lines[i + 1] ?? "")) break;
    const m = FUNCTION.exec(lines[i]);
    if (!m || lines[i].trimEnd().endsWith(";")) continue;
    const indent = m[1];
    let end = i;
    while (end < lines.length && !(lines[end].startsWith(`${indent}}`) && lines[end].trimEnd().length <= indent.length + 2)) end++;
    const length = end - i + 1;
    if (length > max) found.push({ name: m[8], line: i + 1, length });
  }
  return found;
}

/** Every production function over MAX_LINES lines under `cratesDir`, as `file:line` messages. */
export function functionLengthViolations(cratesDir) {
  const problems = [];
  for (const file of rustFiles(cratesDir)) {
    const rel = relative(cratesDir, file);
    if (isTestPath(rel)) continue;
    for (const f of longFunctions(readFileSync(file, "utf8"))) {
      problems.push(`${rel}:${f.line}: \`${f.name}\` is ${f.length} lines (at most ${MAX_LINES}): split it into named steps`);
    }
  }
  return problems;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const crates = process.argv[2] ?? join(fileURLToPath(new URL("..", import.meta.url)), "crates");
  const problems = functionLengthViolations(crates);
  if (problems.length > 0) {
    console.error(`${problems.length} function(s) of the Rust crates are too long:`);
    for (const p of problems) console.error(`  ${p}`);
    process.exit(1);
  }
  console.log(`Rust functions: none over ${MAX_LINES} lines`);
}
