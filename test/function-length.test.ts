// No production function of the Rust crates over MAX_LINES lines (scripts/check-function-length.mjs,
// run by `npm run lint`): the real sources pass, and the checker finds a long one where it is.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { MAX_LINES, functionLengthViolations, longFunctions } from "../scripts/check-function-length.mjs";

const CRATES = join(dirname(dirname(fileURLToPath(import.meta.url))), "crates");

/** A rustfmt-shaped function of `lines` lines in all, at `indent`. */
function rustFunction(name: string, lines: number, indent = ""): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `${indent}    let x${i} = ${i};`);
  return [`${indent}pub fn ${name}() {`, ...body, `${indent}}`].join("\n");
}

describe("function lengths of the Rust crates", () => {
  it("no production function is longer than the limit", () => {
    expect(functionLengthViolations(CRATES)).toEqual([]);
  });

  it("finds a function one line over the limit, with its line, and not one at the limit", () => {
    const text = ["//! A module.", "", rustFunction("short", MAX_LINES), "", rustFunction("long", MAX_LINES + 1)].join("\n");
    expect(longFunctions(text)).toEqual([{ name: "long", line: MAX_LINES + 4, length: MAX_LINES + 1 }]);
  });

  it("measures methods at their own indent and skips the test module", () => {
    const method = ["impl A {", rustFunction("method", MAX_LINES + 5, "    "), "}"].join("\n");
    expect(longFunctions(method).map((f) => f.name)).toEqual(["method"]);
    const inTests = ["#[cfg(test)]", "mod tests {", rustFunction("fixture", MAX_LINES + 5, "    "), "}"].join("\n");
    expect(longFunctions(inTests)).toEqual([]);
  });
});
