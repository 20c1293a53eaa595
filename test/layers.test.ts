// The Rust core's layer order (scripts/check-layers.mjs, docs/architecture.md "Layers of the
// core"): the real sources have no upward import, and the checker finds one when there is.
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterEach, describe, expect, it } from "vitest";

import { LAYERS, layerViolations } from "../scripts/check-layers.mjs";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CORE_SRC = join(ROOT, "crates", "core", "src");

const layerOf = (module: string): number => LAYERS.findIndex((layer) => layer.includes(module));

/** The file defining a top-level module of `src`: `m/mod.rs` or `m.rs`, relative to `src`. */
function moduleFile(src: string, module: string): string {
  const file = [join(module, "mod.rs"), `${module}.rs`].find((f) => existsSync(join(src, f)));
  if (!file) throw new Error(`no file defines module \`${module}\` in ${src}`);
  return file;
}

/** Appends `code` to a file of `src` and returns the (1-based) line its first line lands on. */
function append(src: string, file: string, code: string): number {
  const path = join(src, file);
  const text = readFileSync(path, "utf8");
  const separator = text.endsWith("\n") ? "" : "\n";
  appendFileSync(path, `${separator}${code}`);
  return (text + separator).split("\n").length;
}

describe("the core's layers", () => {
  const copies: string[] = [];
  afterEach(() => {
    for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A copy of the core's sources, and the violations it already has. */
  function copyOfCore(): { src: string; before: Set<string> } {
    const src = join(mkdtempSync(join(tmpdir(), "xpm-layers-")), "src");
    copies.push(dirname(src));
    cpSync(CORE_SRC, src, { recursive: true });
    return { src, before: new Set(layerViolations(src)) };
  }

  const added = (src: string, before: Set<string>): string[] => layerViolations(src).filter((p) => !before.has(p));

  // Low and high: a configuration module may not know the learner that runs it.
  const low = "config";
  const high = "learner";

  it("names each top-level module in one layer, and config below learner", () => {
    const modules = LAYERS.flat();
    expect(new Set(modules).size).toBe(modules.length);
    expect(layerOf(low)).toBeGreaterThanOrEqual(0);
    expect(layerOf(low)).toBeLessThan(layerOf(high));
  });

  it("finds no upward import in crates/core/src", () => {
    expect(layerViolations(CORE_SRC)).toEqual([]);
  });

  it("reports an upward import in a production file, with its file and line", () => {
    const { src, before } = copyOfCore();
    const file = moduleFile(src, low);
    const line = append(src, file, `use crate::${high}::Learner;\n`);
    expect(added(src, before)).toEqual([
      `${file}:${line}: \`${low}\` (layer ${layerOf(low)}) uses \`crate::${high}\` (layer ${layerOf(high)}, above it)`,
    ]);
  });

  it("reports an upward import inside braces, `crate::{a, b::c}`", () => {
    const { src, before } = copyOfCore();
    const file = moduleFile(src, low);
    const line = append(src, file, `use crate::{error::Error, ${high}::Learner};\n`);
    expect(added(src, before)).toEqual([expect.stringMatching(new RegExp(`^${literal(file)}:${line}: .*crate::${high}\``))]);
  });

  const testModule = (attribute: string): string =>
    `${attribute}mod tests {\n    use crate::${high}::Learner;\n\n    fn uses() {\n        let _ = crate::${high}::Learner::default;\n    }\n}\n`;

  it("holds a #[cfg(test)] module to the same order, as the same module without it", () => {
    for (const attribute of ["#[cfg(test)]\n", ""]) {
      const { src, before } = copyOfCore();
      const line = append(src, moduleFile(src, low), testModule(attribute));
      const first = line + (attribute ? 1 : 0);
      expect(added(src, before).map((p) => Number(p.split(":")[1]))).toEqual([first + 1, first + 4]);
    }
  });

  it("holds test files to the same order", () => {
    const { src, before } = copyOfCore();
    for (const name of ["tests.rs", "upward_tests.rs"]) {
      const file = join(low, name);
      appendFileSync(join(src, file), `use crate::${high}::Learner;\n`);
      expect(added(src, before)).toContainEqual(
        `${file}:1: \`${low}\` (layer ${layerOf(low)}) uses \`crate::${high}\` (layer ${layerOf(high)}, above it)`,
      );
    }
  });
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
