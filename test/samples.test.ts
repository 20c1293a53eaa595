// The samples of test/helpers/samples.ts: one per concrete class of the registry, each derived
// away from its defaults except where OVERRIDES writes a value by hand; a class whose values
// cannot be derived fails here until it has its overrides.
import { isDeepStrictEqual } from "node:util";

import { describe, expect, it } from "vitest";

import { type AnyConfigClass, configClassOf, defineConfig } from "../ts/config/class.js";
import { param } from "../ts/config/declare.js";
import { bool, float, int, list, literal, str } from "../ts/config/types.js";
import { OVERRIDES, SAMPLES, sampleFor } from "./helpers/samples.js";

/** The parameters of `sample` equal to their default, but for those written by hand. */
function atDefault(sample: Record<string, unknown>, byHand: readonly string[] = []): string[] {
  const cls = configClassOf(sample)!;
  return Object.entries(cls.params)
    .filter(([name, { spec }]) => spec.makeDefault && spec.kind !== "constant" && !byHand.includes(name))
    .filter(([name, { spec }]) => isDeepStrictEqual(sample[name], spec.makeDefault!()))
    .map(([name]) => name);
}

describe("the configuration samples", () => {
  it.each(Object.keys(SAMPLES))("%s: builds, every derived parameter away from its default", (typeId) => {
    const sample = SAMPLES[typeId]!() as Record<string, unknown>;
    expect(configClassOf(sample)?.typeId).toBe(typeId);
    expect(atDefault(sample, Object.keys(OVERRIDES[typeId]?.() ?? {}))).toEqual([]);
  });

  it("derive a new class's values from its parameters, away from their defaults", () => {
    const Fresh = defineConfig("tests.samples.Fresh", {
      count: param(int((s) => s.min(1))).default(2),
      rate: param(float((s) => s.gt(0).lt(1))).default(0.25),
      on: param(bool()).default(false),
      mode: param(literal(["a", "b"])).default("a"),
      sizes: param(list(int())).default([2]),
      name: param(str()),
    });
    const sample = sampleFor(Fresh as unknown as AnyConfigClass) as Record<string, unknown>;
    expect(configClassOf(sample)).toBe(Fresh);
    expect(atDefault(sample)).toEqual([]);
  });

  it("fail for a class with a value they cannot derive, naming it", () => {
    const Patterned = defineConfig("tests.samples.Patterned", { code: param(str((s) => s.regex(/^[0-9]{4}$/))) });
    expect(() => sampleFor(Patterned as unknown as AnyConfigClass)).toThrow(
      "tests.samples.Patterned.code: no value to derive, write one in OVERRIDES (test/helpers/samples.ts)",
    );
  });
});
