import { describe, expect, it } from "vitest";

import { registeredClasses } from "../ts/config/class.js";
import "../ts/config/classes/index.js";
import { toWire } from "../ts/config/wire.js";
import { ConfigError } from "../ts/errors.js";
import { unwrapOutcome } from "../ts/learn.js";
import { loadNative } from "../ts/native.js";
import { SAMPLES, UNBUILDABLE } from "./helpers/samples.js";

const { binding } = loadNative();
const readBack = (wire: unknown): unknown => unwrapOutcome(binding.readConfig(JSON.stringify(wire)));

describe("the configuration contract between TypeScript and Rust", () => {
  it("has a sample for every buildable class", () => {
    const buildable = registeredClasses()
      .filter((cls) => !cls.options.abstract && !(cls.typeId in UNBUILDABLE))
      .map((cls) => cls.typeId)
      .sort();
    expect(Object.keys(SAMPLES).sort()).toEqual(buildable);
  });

  it.each(Object.keys(SAMPLES))("Rust reads %s back with identical values", (typeId) => {
    const wire = toWire(SAMPLES[typeId]!());
    expect(readBack(wire)).toEqual(wire);
  });

  it("rejects unknown fields with their path", () => {
    const wire = toWire(SAMPLES["xpm_torch.learner.Learner"]!()) as Record<string, Record<string, unknown>>;
    const broken = { ...wire, trainer: { ...wire.trainer, batch_sizes: 3 } };
    expect(() => readBack(broken)).toThrow(ConfigError);
    expect(() => readBack(broken)).toThrow(/^config\.trainer\.batch_sizes: unknown field `batch_sizes`/);
  });
});
