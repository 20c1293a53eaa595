import fc from "fast-check";
import { describe, expect, it } from "vitest";

import type { AnyConfigClass } from "../ts/config/class.js";
import * as c from "../ts/config/classes/index.js";
import type { ValueType } from "../ts/identity/values.js";
import { ConfigError } from "../ts/errors.js";
import { SAMPLES } from "./helpers/samples.js";

type Buildable = AnyConfigClass & { C(values: object): object };

// Valid inputs: the settable values of the samples, as a user would write them.
function validInput(cls: AnyConfigClass): Record<string, unknown> {
  const sample = SAMPLES[cls.typeId]!() as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(cls.params)
      .filter(([, p]) => p.spec.kind !== "generated" && p.spec.kind !== "constant")
      .map(([name]) => [name, sample[name]]),
  );
}

const CLASSES = [
  c.Learner, c.LossTrainer, c.PredictiveBatcher, c.Adam, c.HingeLoss, c.FabricConfiguration, c.TrainerValidationLoss,
  c.SyntheticLtrDataset, c.MlpScorer, c.ParameterOptimizer, c.LinearWithWarmup, c.ProbePoint, c.AdaptivePacker,
] as unknown as Buildable[];

/** A value that can never be valid for a parameter of this type. */
function wrongValue(type: ValueType, pick: number): unknown {
  const t = type.kind === "optional" ? type.inner : type;
  switch (t.kind) {
    case "int":
    case "float":
      return [Number.NaN, Number.POSITIVE_INFINITY, "12", true, [], {}][pick % 6];
    case "str":
      return [42, null, [], {}][pick % 4];
    case "bool":
      return [1, "true", null][pick % 3];
    case "list":
    case "set":
      return ["not a list", 3, { length: 0 }][pick % 3];
    case "dict":
      return ["not a dict", 3, [1, 2]][pick % 3];
    case "config":
      return [{ __xpmtype__: "xpm_torch.optim.Adam" }, {}, "config", 7][pick % 4];
    default:
      return Symbol("never valid");
  }
}

type Mutation =
  | { kind: "unknown-key"; key: string }
  | { kind: "wrong-type"; param: number; pick: number }
  | { kind: "drop-required"; param: number }
  | { kind: "negative-size"; param: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("unknown-key" as const), key: fc.stringMatching(/^[a-z][a-z_]{0,12}$/) }),
  fc.record({ kind: fc.constant("wrong-type" as const), param: fc.nat(), pick: fc.nat() }),
  fc.record({ kind: fc.constant("drop-required" as const), param: fc.nat() }),
  fc.record({ kind: fc.constant("negative-size" as const), param: fc.nat() }),
);

const SIZES = new Set(["max_epochs", "steps_per_epoch", "batch_size", "num_queries", "docs_per_query", "num_features", "input_dim", "num_warmup_steps", "min_batch_size", "num_nodes", "checkpoint_interval", "validation_interval"]);

/** Applies a mutation; returns the malformed input and the parameter it breaks, or undefined when it does not apply. */
function mutate(cls: Buildable, m: Mutation): { input: Record<string, unknown>; param: string } | undefined {
  const input = validInput(cls);
  const settable = Object.entries(cls.params).filter(([, p]) => p.spec.kind !== "generated" && p.spec.kind !== "constant");
  if (m.kind === "unknown-key") {
    if (m.key in cls.params) return undefined;
    return { input: { ...input, [m.key]: 1 }, param: m.key };
  }
  const candidates =
    m.kind === "drop-required"
      ? settable.filter(([, p]) => !p.spec.makeDefault && !p.spec.optional)
      : m.kind === "negative-size"
        ? settable.filter(([name]) => SIZES.has(name))
        : settable;
  if (candidates.length === 0) return undefined;
  const [name, p] = candidates[m.param % candidates.length]!;
  if (m.kind === "drop-required") {
    const { [name]: _dropped, ...rest } = input;
    return { input: rest, param: name };
  }
  const value = m.kind === "negative-size" ? -1 - (m.param % 5) : wrongValue(p.spec.value.type, m.pick);
  return { input: { ...input, [name]: value }, param: name };
}

describe("malformed configurations", () => {
  it("are all refused by .C() with one ConfigError naming the class, parameter and rule", () => {
    let checked = 0;
    fc.assert(
      fc.property(fc.nat({ max: CLASSES.length - 1 }), mutation, (index, m) => {
        const cls = CLASSES[index]!;
        const broken = mutate(cls, m);
        if (!broken) return;
        checked++;
        let error: unknown;
        try {
          cls.C(broken.input);
        } catch (e) {
          error = e;
        }
        expect(error, `${cls.name} accepted ${m.kind} on ${broken.param}`).toBeInstanceOf(ConfigError);
        const { path, message } = error as ConfigError;
        const root = cls.name.charAt(0).toLowerCase() + cls.name.slice(1);
        expect(path.startsWith(`${root}.${broken.param}`)).toBe(true);
        expect(message.length).toBeGreaterThan(path.length + 2);
      }),
      { numRuns: 400, seed: 2026 },
    );
    expect(checked).toBeGreaterThanOrEqual(200);
  });

  it("builds every valid sample input", () => {
    for (const cls of CLASSES) expect(() => cls.C(validInput(cls))).not.toThrow();
  });
});
