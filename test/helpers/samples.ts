// One configuration of every buildable class of the registry, with every parameter away from its
// default, for the contract, params.json and value-rule tests. Values are derived from each
// parameter's type and zod rules; OVERRIDES holds only those a class needs specifically (a
// formula, names that must match, cross-field rules), and test/samples.test.ts fails when a new
// class cannot be sampled.
import { isDeepStrictEqual } from "node:util";

import { z } from "zod";

import { TYPE_KEY, type AnyConfigClass, classById, configClassOf, isSubclass, registeredClasses } from "../../ts/config/class.js";
import * as c from "../../ts/config/classes/index.js";
import type { ParamSpec } from "../../ts/config/declare.js";
import { sealedSet } from "../../ts/config/types.js";
import { toWire } from "../../ts/config/wire.js";
import { ConfigError } from "../../ts/errors.js";
import type { ValueType } from "../../ts/identity/values.js";

type Values = Record<string, unknown>;
type Buildable = AnyConfigClass & { C(values: Values): object };

const probes = () =>
  c.BatchDimsProvider.C({
    probe_dims: sealedSet(
      c.ProbePoint.C({ values: { n: 1, l: 64 } }),
      c.ProbePoint.C({ values: { n: 2, l: 128 } }),
      c.ProbePoint.C({ values: { n: 4, l: 64 } }),
    ),
  });
const fileFormat = (format: "tsv" | "jsonl") => ({ format });

/** The values a class needs specifically, by type id; the others are derived. */
export const OVERRIDES: Readonly<Record<string, () => Values>> = {
  "xpm_torch.batchers.PredictiveBatcher": () => ({
    formula: "c + b*n*l + a*n*l**2",
    coefficient_names: ["a", "b", "c"],
    variable_names: ["n", "l"],
    batch_size_variable: "n",
    dims_provider: probes(),
    packer: c.AdaptivePacker.C({ sort_by: "l" }),
  }),
  "xpm_torch.batchers.BatchDimsProvider": () => ({ probe_dims: probes().probe_dims }),
  "xpm_torch.trainers.LossTrainer": () => ({ hooks: [c.HingeLoss.C({ weight: 0.5, margin: 2 }), c.PairwiseCrossEntropyLoss.C({ weight: 0.25 })] }),
  // Early stopping counts validations: a multiple of the interval.
  "xpm_torch.trainers.validation.TrainerValidationLoss": () => ({ warmup: 2, validation_interval: 2, early_stop: 4 }),
  "xpm_torch.optim.Adam": () => ({ betas: [0.5, 0.9] }),
  "xpm_torch.optim.AdamW": () => ({ betas: [0.7, 0.99] }),
  "xpm_torch.listeners.RankingValidationListener": () => ({
    warmup: 1,
    validation_interval: 2,
    early_stop: 4,
    metrics: { "ndcg@5": true, mrr: false, pairwise_accuracy: true, map: false, "precision@3": false, "recall@3": false, "err@5": true },
  }),
  "xpm_torch.module.MultipleModel": () => ({
    models: { scorer: c.DRMM.C({ vocab_size: 300, dim: 12, bins: 11, hidden_dims: [6] }), head: c.Linear.C({ input_dim: 3 }) },
    scorer: "scorer",
  }),
  // A local directory (path) takes no revision: that is for a model of the Hub.
  "xpm_torch.models.HFEncoder": () => ({ revision: undefined }),
  // heads divides dim.
  "xpm_torch.models.TransformerCrossEncoder": () => ({ dim: 16, heads: 4 }),
  // test/value-rules.integration.test.ts breaks min_length ≥ query_length with query_length 6.
  "xpm_torch.data.SyntheticTokenTriplets": () => ({ query_length: 3, min_length: 5, max_length: 20 }),
  "xpm_torch.data.TokenTripletFile": () => fileFormat("tsv"),
  "xpm_torch.data.TextTripletFile": () => fileFormat("jsonl"),
  "xpm_torch.data.TextPairFile": () => fileFormat("jsonl"),
  // What test/params-json.test.ts reads in a Learner: a set (the predictive batcher's), a float
  // with no fraction (the hinge margin), ints, and two listeners with their generated paths.
  "xpm_torch.learner.Learner": () => ({
    trainer: sample(c.LossTrainer, { batcher: sample(c.PredictiveBatcher) }),
    max_epochs: 12,
    checkpoint_interval: 3,
    listeners: [sample(c.TrainerValidationLoss, { id: "val" }), sample(c.RankingValidationListener, { id: "acc" })],
  }),
  // An explicit learning rate needs relative_step off, and warmup_init needs it on.
  "xpm_torch.optim.Adafactor": () => ({ lr: 0.01, relative_step: false, warmup_init: false, eps: [1e-20, 1e-2] }),
};

/** Classes whose configurations the core never reads: they run experiments in TypeScript. */
export const outsideTheCore = (cls: AnyConfigClass): boolean => cls.typeId.startsWith("xpm_torch.experiments.");

/** The concrete classes that may stand where `typeId` (lowercase) is expected. */
function standIns(typeId: string): AnyConfigClass[] {
  const base = classById(typeId);
  if (!base) throw new Error(`no registered class ${typeId}`);
  return registeredClasses().filter((cls) => !cls.options.abstract && !(cls.typeId in UNBUILDABLE) && isSubclass(cls, base));
}

/** The zod type of the items of a list or set, or of the values of a dict. */
function itemZod(type: z.ZodType): z.ZodType {
  if (type instanceof z.ZodOptional || type instanceof z.ZodReadonly) return itemZod(type.unwrap() as z.ZodType);
  if (type instanceof z.ZodPipe) return itemZod(type.in as z.ZodType);
  if (type instanceof z.ZodUnion) return itemZod((type.options as z.ZodType[]).find((o) => o instanceof z.ZodArray) ?? z.any());
  if (type instanceof z.ZodArray) return type.element as z.ZodType;
  if (type instanceof z.ZodRecord) return type.valueType as z.ZodType;
  return z.any();
}

const unwrapped = (type: z.ZodType): z.ZodType => (type instanceof z.ZodOptional ? unwrapped(type.unwrap() as z.ZodType) : type);

/** Where a value is derived: the parameter (for messages and distinct values) and the classes above. */
interface Place {
  readonly where: string;
  /** The parameter's position in its class: neighbouring parameters get different numbers. */
  readonly index: number;
  readonly name: string;
  readonly stack: readonly string[];
}

/** The first candidate that the zod type accepts and that is not `avoid`. */
function firstValid(candidates: readonly unknown[], type: z.ZodType, avoid: unknown, place: Place): unknown {
  const found = candidates.find((v) => !isDeepStrictEqual(v, avoid) && type.safeParse(v).success);
  if (found === undefined) throw new Error(`${place.where}: no value to derive, write one in OVERRIDES (test/helpers/samples.ts)`);
  return found;
}

const firstOf = (value: unknown): unknown => (Array.isArray(value) || value instanceof Set ? [...value][0] : undefined);

/** A value of `type` accepted by `zod`, other than `avoid` (the default, when the parameter has one). */
function derive(type: ValueType, zod: z.ZodType, avoid: unknown, place: Place): unknown {
  const i = place.index;
  switch (type.kind) {
    case "optional":
      return derive(type.inner, unwrapped(zod), avoid, place);
    case "int":
      return firstValid([i + 2, i + 3, 1, 0, -1, 64], zod, avoid, place);
    case "float":
      return firstValid([(i + 2) / 8, 0.25, 0.5, 0.75, 1.5, -0.5, 2], zod, avoid, place);
    case "bool":
      return avoid !== true;
    case "str": {
      const z0 = unwrapped(zod);
      const choices = z0 instanceof z.ZodEnum ? (z0.options as unknown[]) : [`${place.name}-${i}`];
      return firstValid(choices, zod, avoid, place);
    }
    case "path":
      return firstValid([`/data/${place.name}`], zod, avoid, place);
    // One item, other than the default's first: the list differs from the default.
    case "list":
      return [derive(type.item, itemZod(zod), firstOf(avoid), place)];
    case "set":
      return sealedSet(derive(type.item, itemZod(zod), firstOf(avoid), place));
    case "dict":
      return { [place.name]: derive(type.value, itemZod(zod), undefined, place) };
    case "config":
      return configSample(type.typeId, avoid, place);
    default:
      throw new Error(`${place.where}: no value to derive for a ${type.kind}, write one in OVERRIDES (test/helpers/samples.ts)`);
  }
}

/** A sample of a class standing where `typeId` is expected, preferring one not already above. */
function configSample(typeId: string, avoid: unknown, place: Place): object {
  const candidates = standIns(typeId).filter((cls) => !place.stack.includes(cls.typeId));
  const avoided = avoid === undefined ? undefined : JSON.stringify(toWire(avoid as object));
  for (const cls of candidates) {
    const config = sampleOf(cls, place.stack);
    if (JSON.stringify(toWire(config)) !== avoided) return config;
  }
  throw new Error(`${place.where}: no class to sample for ${typeId}, write one in OVERRIDES (test/helpers/samples.ts)`);
}

const settable = (spec: ParamSpec): boolean => spec.kind !== "generated" && spec.kind !== "constant";

/** A sample of any class, by the rules of SAMPLES; throws, naming the parameter, when one of its
 * values cannot be derived and OVERRIDES has none. */
export function sampleFor(cls: AnyConfigClass): object {
  return sampleOf(cls);
}

/** The sample of `cls` with `changes`. */
function sample(cls: { readonly typeId: string }, changes: Values = {}): object {
  return sampleOf(classById(cls.typeId)!, [], changes);
}

/** A configuration of `cls`: its overrides, and every other parameter derived away from its default. */
function sampleOf(cls: AnyConfigClass, stack: readonly string[] = [], changes: Values = {}): object {
  const given = { ...OVERRIDES[cls.typeId]?.(), ...changes };
  const values: Values = {};
  Object.entries(cls.params).forEach(([name, { spec }], index) => {
    if (!settable(spec)) return;
    const place = { where: `${cls.typeId}.${name}`, index, name, stack: [...stack, cls.typeId] };
    values[name] = name in given ? given[name] : derive(spec.value.type, spec.value.zod, spec.makeDefault?.(), place);
  });
  return (cls as Buildable).C(values);
}

/** Concrete classes that cannot be built yet, and why. */
export const UNBUILDABLE: Record<string, string> = {
  "xpm_torch.data.InMemoryLtrDataset": "its arrays live in JavaScript: the core receives it as a stand-in (xpm_torch.js.JsObject)",
};

/** A sample per buildable class, by type id: every concrete class of the registry the core reads. */
export const SAMPLES: Record<string, () => object> = Object.fromEntries(
  registeredClasses()
    .filter((cls) => !cls.options.abstract && !(cls.typeId in UNBUILDABLE) && !outsideTheCore(cls))
    .map((cls) => [cls.typeId, () => sampleOf(cls)]),
);

/** The values of a configuration as its class's C() takes them back (constants are not settable). */
export function inputOf(config: object): Record<string, unknown> {
  const cls = configClassOf(config)!;
  return Object.fromEntries(Object.entries(config).filter(([k]) => k !== TYPE_KEY && cls.params[k]?.spec.kind !== "constant"));
}

/** The sample of `typeId` rebuilt with `changes` (`undefined` unsets), or the ConfigError refusing it. */
export function rebuilt(typeId: string, changes: Record<string, unknown>): { config: object } | { error: ConfigError } {
  const sample = SAMPLES[typeId]!();
  const cls = configClassOf(sample) as AnyConfigClass & { C(values: Record<string, unknown>): object };
  try {
    return { config: cls.C({ ...inputOf(sample), ...changes }) };
  } catch (error) {
    if (error instanceof ConfigError) return { error };
    throw error;
  }
}
