// A value rule is declared once, on a class's zod type; the core reads it from the JSON Schema
// the classes emit (crates/core/src/config/schema.json) and must refuse a bad value with the
// message TypeScript gives. Every rule of every class with a contract sample is broken here
// through both entries — the class's C() and the core's reading of wire JSON — and the two
// refusals compared; then the cross-field rules the core also checks, from a table.
import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { configClassOf } from "../ts/config/class.js";
import * as c from "../ts/config/classes/index.js";
import { configJsonSchema } from "../ts/config/json-schema.js";
import { type Wire, toWire } from "../ts/config/wire.js";
import { ConfigError, unwrapOutcome } from "../ts/errors.js";
import { loadNative } from "../ts/native.js";
import { SAMPLES, rebuilt } from "./helpers/samples.js";

type Schema = Record<string, unknown>;
type Values = Record<string, unknown>;

const { binding } = loadNative();
const defs = configJsonSchema().$defs as Record<string, { properties: Record<string, Schema> }>;

/** A refusal as `{where, message}`, `where` being the path below the refused object. */
interface Refusal {
  where: string;
  message: string;
}

function refusal(run: () => unknown): Refusal {
  try {
    run();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const dot = error.path.indexOf(".");
    return { where: dot < 0 ? "" : error.path.slice(dot + 1), message: error.message.slice(error.path.length + 2) };
  }
  throw new Error("accepted");
}

/** A value as the wire carries it (configurations as objects, sets as arrays). */
function wireOf(value: unknown): Wire {
  if (configClassOf(value)) return toWire(value as object);
  if (value instanceof Set || Array.isArray(value)) return [...value].map(wireOf);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wireOf(v)]));
  return value as Wire;
}

/** Both refusals of `changes` applied to the sample of `typeId`. */
function bothRefusals(typeId: string, changes: Values): { typescript: Refusal; core: Refusal } {
  const wire = { ...(toWire(SAMPLES[typeId]!()) as Record<string, Wire>), ...(wireOf(changes) as Record<string, Wire>) };
  const built = rebuilt(typeId, changes);
  return {
    typescript: refusal(() => {
      if ("error" in built) throw built.error;
    }),
    core: refusal(() => unwrapOutcome(binding.readConfig(JSON.stringify(wire)))),
  };
}

/** A value breaking each rule `schema` states (nested in a list or dict as the schema is). */
function badValues(schema: Schema): unknown[] {
  if (schema.type === "array" && schema.items) {
    // A list of fixed length keeps it, its other items valid (from the default), to break an
    // item's rule; and breaks the length itself with one item too few.
    const fixed = typeof schema.minItems === "number" && schema.minItems === schema.maxItems ? schema.minItems : undefined;
    const valid = Array.isArray(schema.default) ? (schema.default as unknown[]) : [];
    const items = badValues(schema.items as Schema).map((bad) => (fixed ? [bad, ...valid.slice(1, fixed)] : [bad]));
    return fixed && valid.length === fixed ? [...items, valid.slice(1)] : items;
  }
  if (schema.type === "object" && typeof schema.additionalProperties === "object") {
    return badValues(schema.additionalProperties as Schema).map((bad) => ({ k: bad }));
  }
  const step = schema.type === "integer" ? 1 : 0.5;
  const bad: unknown[] = [];
  if (typeof schema.minimum === "number") bad.push(schema.minimum - step);
  if (typeof schema.exclusiveMinimum === "number") bad.push(schema.exclusiveMinimum);
  if (typeof schema.maximum === "number") bad.push(schema.maximum + step);
  if (typeof schema.exclusiveMaximum === "number") bad.push(schema.exclusiveMaximum);
  if (schema.minLength === 1) bad.push("");
  if (typeof schema.pattern === "string") bad.push("no-such-format");
  if (Array.isArray(schema.enum)) bad.push("no-such-option");
  return bad;
}

const ruleCases = Object.keys(SAMPLES)
  .filter((typeId) => typeId in defs)
  .flatMap((typeId) =>
    Object.entries(defs[typeId]!.properties).flatMap(([name, schema]) =>
      badValues(schema).map((bad) => ({ typeId, name, bad, label: `${typeId}.${name} = ${JSON.stringify(bad)}` })),
    ),
  );

describe("value rules: one declaration, one message", () => {
  it("the core reads the schema the classes emit now (npm run build rewrites it)", () => {
    const checkedIn = readFileSync(new URL("../crates/core/src/config/schema.json", import.meta.url), "utf8");
    expect(JSON.parse(checkedIn)).toEqual(configJsonSchema());
  });

  it("covers bounds, lengths, patterns and enumerations", () => {
    const labels = ruleCases.map((r) => r.label);
    expect(ruleCases.length).toBeGreaterThan(100);
    for (const expected of [
      "xpm_torch.learner.Learner.max_epochs = 0",
      "xpm_torch.models.MLP.dropout = 1",
      "xpm_torch.models.MLP.hidden_dims = [0]",
      "xpm_torch.optim.Adam.lr = 0",
      'xpm_torch.data.TextPairFile.format = "no-such-format"',
      'xpm_torch.models.MLP.activation = "no-such-option"',
      'xpm_torch.batchers.PredictiveBatcher.coefficient_names = [""]',
      'xpm_torch.batchers.ProbePoint.values = {"k":0}',
      "xpm_torch.optim.Adam.betas = [0.999]",
      "xpm_torch.optim.Adam.betas = [-0.5,0.999]",
    ]) {
      expect(labels).toContain(expected);
    }
  });

  it.each(ruleCases)("$label: refused alike by the class and by the core", ({ typeId, name, bad }) => {
    const { typescript, core } = bothRefusals(typeId, { [name]: bad });
    expect(typescript.where.startsWith(name)).toBe(true);
    expect(typescript.message).toMatch(/^must (be|not|match|hold) /);
    expect(core).toEqual(typescript);
  });

  it("words each kind of rule in one format", () => {
    expect(bothRefusals("xpm_torch.trainers.LossTrainer", { batch_size: 0 }).core).toEqual({ where: "batch_size", message: "must be ≥ 1, got 0" });
    expect(bothRefusals("xpm_torch.optim.Adam", { lr: 0 }).core).toEqual({ where: "lr", message: "must be > 0, got 0" });
    expect(bothRefusals("xpm_torch.optim.Adam", { betas: [0.9, 1] }).core).toEqual({ where: "betas[1]", message: "must be < 1, got 1" });
    expect(bothRefusals("xpm_torch.optim.Adafactor", { decay_rate: 0.5 }).typescript).toEqual({ where: "decay_rate", message: "must be ≤ 0, got 0.5" });
    expect(bothRefusals("xpm_torch.models.BiEncoder", { pooling: "max" }).typescript).toEqual({ where: "pooling", message: 'must be one of "mean", "cls", got "max"' });
    expect(bothRefusals("xpm_torch.data.TextTripletFile", { format: "csv" }).core).toEqual({ where: "format", message: 'must match /^(tsv|jsonl)$/, got "csv"' });
    expect(bothRefusals("xpm_torch.data.TextTripletFile", { id: "" }).core).toEqual({ where: "id", message: "must not be empty" });
  });
});

describe("cross-field rules the core also checks: the same message", () => {
  const model = () => c.Linear.C({ input_dim: 3 });
  const listener = () => (SAMPLES["xpm_torch.learner.Learner"]!() as { listeners: readonly object[] }).listeners[0]!;
  const cases: { typeId: string; changes: Values; where: string }[] = [
    { typeId: "xpm_torch.learner.Learner", changes: { optimizers: [] }, where: "optimizers" },
    { typeId: "xpm_torch.learner.Learner", changes: { listeners: [listener(), listener()] }, where: "listeners[1].id" },
    { typeId: "xpm_torch.models.TransformerCrossEncoder", changes: { dim: 16, heads: 3 }, where: "heads" },
    { typeId: "xpm_torch.module.MultipleModel", changes: { models: {} }, where: "models" },
    { typeId: "xpm_torch.module.MultipleModel", changes: { models: { "a.b": model() }, scorer: "a.b" }, where: "models" },
    { typeId: "xpm_torch.module.MultipleModel", changes: { models: { b: model(), a: model() }, scorer: "c" }, where: "scorer" },
    { typeId: "xpm_torch.optim.Adafactor", changes: { lr: 0.1, relative_step: true }, where: "lr" },
    { typeId: "xpm_torch.optim.Adafactor", changes: { lr: undefined, relative_step: false }, where: "lr" },
    { typeId: "xpm_torch.optim.Adafactor", changes: { warmup_init: true }, where: "warmup_init" },
    { typeId: "xpm_torch.data.SyntheticTokenTriplets", changes: { vocab_size: 16, query_length: 5 }, where: "query_length" },
    { typeId: "xpm_torch.data.SyntheticTokenTriplets", changes: { query_length: 6 }, where: "min_length" },
    { typeId: "xpm_torch.data.SyntheticTokenTriplets", changes: { max_length: 4 }, where: "max_length" },
  ];

  it.each(cases)("$typeId $where: $changes", ({ typeId, changes, where }) => {
    const { typescript, core } = bothRefusals(typeId, changes);
    expect(typescript.where).toBe(where);
    expect(core).toEqual(typescript);
  });
});
