import { afterEach, describe, expect, expectTypeOf, it, vi } from "vitest";

import { TYPE_KEY, defineConfig, registeredClasses } from "../ts/config/class.js";
import * as c from "../ts/config/classes/index.js";
import { canonicalFormula } from "../ts/config/formula.js";
import { setMeta } from "../ts/config/identifier-marks.js";
import { identifierOf } from "../ts/config/identifiers.js";
import { configJsonSchema } from "../ts/config/json-schema.js";
import { JS_OBJECT } from "../ts/config/wire.js";
import { sealedSet } from "../ts/config/types.js";
import { demoLearner } from "../ts/demo-config.js";
import { processesPerNode, usesDdp } from "../ts/run/distributed.js";
import type { SamplerKind } from "../ts/samplers.js";
import { ConfigError } from "../ts/errors.js";

function heldout(config: ReturnType<typeof demoLearner>) {
  const listener = config.listeners[0];
  if (!c.RankingValidationListener.is(listener)) throw new Error("the demo has a RankingValidationListener");
  return listener;
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

const REQUIRED = Symbol("required");
const GENERATED = Symbol("generated");
const OPTIONAL = Symbol("optional");
const FACTORY = Symbol("factory");
type Expected = Record<string, unknown>;

// The spec's classes, their parameters in order, and defaults (spec/xpm_torch-api.txt).
const SPEC: Record<string, Expected> = {
  "xpm_torch.learner.Learner": {
    random: REQUIRED, trainer: REQUIRED, model: REQUIRED, max_epochs: 1000, steps_per_epoch: 128,
    optimizers: REQUIRED, listeners: REQUIRED, checkpoint_interval: 1, logpath: GENERATED,
    checkpointspath: GENERATED, hooks: [], fabric_config: FACTORY,
  },
  "xpm_torch.learner.LearnerListener": { id: REQUIRED },
  "xpm_torch.learner.CheckpointSettings": { epoch: OPTIONAL },
  "xpm_torch.learner.Strategy": {},
  "xpm_torch.trainers.Trainer": { hooks: [], model: OPTIONAL },
  "xpm_torch.trainers.LossTrainer": { hooks: [], model: OPTIONAL, batcher: FACTORY, sampler: REQUIRED, batch_size: 16, num_workers: 2 },
  "xpm_torch.trainers.multiple.MultipleTrainer": { hooks: [], model: OPTIONAL, trainers: REQUIRED },
  "xpm_torch.trainers.context.TrainingHook": {},
  "xpm_torch.trainers.context.StepTrainingHook": {},
  "xpm_torch.trainers.context.ValidationHook": {},
  "xpm_torch.trainers.context.InitializationTrainingHook": {},
  "xpm_torch.trainers.hooks.LayerFreezer": { selector: REQUIRED },
  "xpm_torch.trainers.hooks.LayerSharer": { source: REQUIRED, target: REQUIRED },
  "xpm_torch.validation.ValidationSettings": { listener: OPTIONAL, key: REQUIRED },
  "xpm_torch.trainers.validation.TrainerValidationLoss": {
    id: REQUIRED, data: REQUIRED, batcher: FACTORY, batch_size: REQUIRED, trainer: REQUIRED, warmup: -1,
    bestpath: GENERATED, info: GENERATED, validation_interval: 1, early_stop: 0,
  },
  "xpm_torch.batchers.Batcher": {},
  "xpm_torch.batchers.PowerAdaptativeBatcher": {},
  "xpm_torch.batchers.PredictiveBatcher": {
    formula: REQUIRED, coefficient_names: REQUIRED, variable_names: REQUIRED, batch_size_variable: "bs",
    memory_fraction: 0.75, extra_overhead_bytes: 0, min_batch_size: 1, dims_provider: REQUIRED, packer: FACTORY,
  },
  "xpm_torch.batchers.BatchDimsProvider": { probe_dims: REQUIRED },
  "xpm_torch.batchers.ProbePoint": { values: REQUIRED },
  "xpm_torch.batchers.MicroBatchPacker": {},
  "xpm_torch.batchers.UniformPacker": {},
  "xpm_torch.batchers.AdaptivePacker": { sort_by: OPTIONAL },
  "xpm_torch.losses.batchwise.BatchwiseLoss": { weight: 1.0 },
  "xpm_torch.losses.batchwise.CrossEntropyLoss": { weight: 1.0 },
  "xpm_torch.losses.batchwise.SoftmaxCrossEntropy": { weight: 1.0 },
  "xpm_torch.losses.pairwise.PairwiseLoss": { weight: 1.0 },
  "xpm_torch.losses.pairwise.CrossEntropyLoss": { weight: 1.0 },
  "xpm_torch.losses.pairwise.HingeLoss": { weight: 1.0, margin: 1.0 },
  "xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss": { weight: 1.0 },
  "xpm_torch.configuration.Strategy": {},
  "xpm_torch.configuration.FabricConfigurationBase": {},
  "xpm_torch.configuration.FabricConfiguration": {
    precision: "32-true", torch_fp32_precision: OPTIONAL, num_nodes: 1, devices: "auto", strategy: "auto", accelerator: "auto",
  },
};
// Parameters of ours, after the spec's.
const EXTENSIONS: Record<string, string[]> = {
  "xpm_torch.learner.Learner": ["checkpoint_keep", "keep_training_state", "validate_at_start", "step_losses"],
  "xpm_torch.configuration.FabricConfiguration": ["num_threads", "deterministic"],
};
const META = [
  "id", "checkpoint_interval", "checkpoint_keep", "batcher", "num_nodes", "devices", "strategy", "accelerator", "num_threads",
  "deterministic", "validate_at_start", "step_losses", "keep_training_state",
];

describe("the spec's configuration classes", () => {
  const byId = new Map(registeredClasses().map((cls) => [cls.typeId, cls]));

  it.each(Object.entries(SPEC))("%s exists with its parameters and defaults", (typeId, expected) => {
    const cls = byId.get(typeId);
    expect(cls, typeId).toBeDefined();
    if (!cls) return;
    expect(Object.keys(cls.params)).toEqual([...Object.keys(expected), ...(EXTENSIONS[typeId] ?? [])]);
    for (const [name, want] of Object.entries(expected)) {
      const spec = cls.params[name]!.spec;
      if (want === GENERATED) expect(spec.kind, name).toBe("generated");
      else if (want === REQUIRED) expect(spec.makeDefault === undefined && !spec.optional, name).toBe(true);
      else if (want === OPTIONAL) expect(spec.optional && spec.makeDefault === undefined, name).toBe(true);
      else if (want === FACTORY) expect(spec.factory, name).toBe(true);
      else expect(spec.makeDefault?.(), name).toEqual(want);
      if (META.includes(name) && !(typeId.includes("batchers") || name === "batch_size")) {
        expect(spec.kind, `${typeId}.${name} is Meta`).toBe("meta");
      }
    }
  });
});

describe("building configurations", () => {
  it("fills defaults, puts the type id first, freezes", () => {
    const adam = c.Adam.C({});
    expect(Object.keys(adam)[0]).toBe(TYPE_KEY);
    expect(adam).toEqual({ [TYPE_KEY]: "xpm_torch.optim.Adam", lr: 1e-3, weight_decay: 0, eps: 1e-8, betas: [0.9, 0.999] });
    expect(Object.isFrozen(adam)).toBe(true);
    expect(() => {
      (adam as { lr: number }).lr = 2;
    }).toThrow(TypeError);
    expect(JSON.stringify(c.Random.C({}))).toBe('{"__xpmtype__":"xpm_torch.base.Random","seed":0}');
  });

  it("infers input and output types", () => {
    expectTypeOf(c.HingeLoss.C).parameter(0).toEqualTypeOf<{ weight?: number; margin?: number }>();
    expectTypeOf(c.HingeLoss.C({}).margin).toEqualTypeOf<number>();
    expectTypeOf(c.MlpScorer.C).parameter(0).toHaveProperty("input_dim").toEqualTypeOf<number>();
    // @ts-expect-error unknown keys are compile errors
    expect(() => c.HingeLoss.C({ margn: 2 })).toThrow(ConfigError);
    // @ts-expect-error wrong types are compile errors
    expect(() => c.HingeLoss.C({ margin: "2" })).toThrow(ConfigError);
  });

  it("names the path and rule of every problem", () => {
    expect(errorOf(() => c.HingeLoss.C({ margn: 2 } as never)).message).toBe("hingeLoss.margn: unknown parameter; did you mean margin?");
    expect(errorOf(() => c.Adam.C({ lr: Number.NaN })).path).toBe("adam.lr");
    expect(errorOf(() => c.Adam.C({ lr: Number.POSITIVE_INFINITY })).path).toBe("adam.lr");
    expect(errorOf(() => c.Adam.C({ betas: [0.9, 1.5] })).path).toBe("adam.betas[1]");
    expect(errorOf(() => c.MlpScorer.C({} as never)).message).toBe("mlpScorer.input_dim: required parameter is missing");
    expect(errorOf(() => c.MlpScorer.C({ input_dim: -3 })).path).toBe("mlpScorer.input_dim");
    expect(errorOf(() => c.Learner.C({ ...demoLearner(), logpath: "/x" } as never)).message).toBe(
      "learner.logpath: is generated from the job directory and cannot be set",
    );
    expect(errorOf(() => c.Trainer.C({})).message).toBe("trainer: Trainer is abstract: build one of its subclasses");
  });

  // As tsc's "Did you mean 'max_epochs'?": the nearest settable parameter, if one is near enough.
  it("suggests the nearest parameter for an unknown one", () => {
    const typo = errorOf(() => c.Learner.C({ ...demoLearner(), max_epoch: 4 } as never));
    expect(typo.message).toBe("learner.max_epoch: unknown parameter; did you mean max_epochs?");
    expect(typo.path).toBe("learner.max_epoch");
    expect(typo.suggestion).toBe("max_epochs");
    expectTypeOf(typo.suggestion).toEqualTypeOf<string | undefined>();
    expect(errorOf(() => c.HingeLoss.C({ Margin: 1 } as never)).suggestion).toBe("margin");
    expect(errorOf(() => c.Adam.C({ weight_decy: 0.1 } as never)).message).toBe("adam.weight_decy: unknown parameter; did you mean weight_decay?");
    // A misspelt required parameter is reported as such, not as the missing one.
    const data = { signal_seed: 1, seed: 1, num_queries: 1, docs_per_query: 2 };
    expect(errorOf(() => c.SyntheticLtrDataset.C({ ...data, num_feature: 2 } as never)).message).toBe(
      "syntheticLtrDataset.num_feature: unknown parameter; did you mean num_features?",
    );
    const far = errorOf(() => c.HingeLoss.C({ temperature: 1 } as never));
    expect(far.message).toBe("hingeLoss.temperature: unknown parameter");
    expect(far.suggestion).toBeUndefined();
    // Generated parameters cannot be set: never suggested.
    expect(errorOf(() => c.Learner.C({ ...demoLearner(), logpth: "/x" } as never)).suggestion).toBeUndefined();
  });

  it("refuses a nested value of the wrong class", () => {
    const error = errorOf(() => c.Learner.C({ ...demoLearner(), model: c.Adam.C({}) as never }));
    expect(error.path).toBe("learner.model");
    expect(error.message).toContain("expected a Module configuration");
  });

  it("runs each class's own rules", () => {
    const config = demoLearner();
    expect(errorOf(() => c.Learner.C({ ...config, optimizers: [] })).message).toBe("learner.optimizers: at least one optimizer is needed");
    const listener = config.listeners[0]!;
    const error = errorOf(() => c.Learner.C({ ...config, listeners: [listener, listener] }));
    expect(error.message).toBe(`learner.listeners[1].id: "heldout" is already the id of listeners[0]`);
    const data = c.SyntheticLtrDataset.C({ signal_seed: 1, seed: 1, num_queries: 1, docs_per_query: 2, num_features: 2 });
    const trainer = c.LossTrainer.C({ sampler: c.PairwiseSampler.C({ dataset: data }), hooks: [c.HingeLoss.C({})] });
    expect(errorOf(() => c.TrainerValidationLoss.C({ id: "v", data, batch_size: 4, trainer, validation_interval: 2, early_stop: 3 })).message).toBe(
      "trainerValidationLoss.early_stop: must be a multiple of validation_interval (2), or 0",
    );
    expect(errorOf(() => c.LossTrainer.C({ sampler: c.PairwiseSampler.C({ dataset: data }) })).path).toBe("lossTrainer.hooks");
  });
});

describe("the PredictiveBatcher", () => {
  const probes = (...points: Record<string, number>[]) =>
    c.BatchDimsProvider.C({ probe_dims: sealedSet(...points.map((values) => c.ProbePoint.C({ values }))) });
  const base = {
    coefficient_names: ["a", "b", "c"],
    variable_names: ["bs", "l"],
    dims_provider: probes({ bs: 1, l: 64 }, { bs: 2, l: 128 }, { bs: 4, l: 64 }),
  };

  it("keeps formulas as written, so equivalent texts have different identifiers (as in Python)", () => {
    const one = c.PredictiveBatcher.C({ ...base, formula: "a*bs*l**2 + b*bs*l + c" });
    const two = c.PredictiveBatcher.C({ ...base, formula: "c+l*b*bs +  bs*l**2*a" });
    expect(two.formula).toBe("c+l*b*bs +  bs*l**2*a");
    expect(identifierOf(two)).not.toBe(identifierOf(one));
    expect(canonicalFormula("2*a*l - b*bs", new Set(["a", "b"]), new Set(["bs", "l"]))).toBe("a*2*l + b*-1*bs");
  });

  it("rejects undeclared symbols, non-linear coefficients and bad probes", () => {
    const at = (formula: string) => errorOf(() => c.PredictiveBatcher.C({ ...base, formula }));
    expect(at("a*bs*d + b + c").message).toBe(
      "predictiveBatcher.formula: undeclared symbols: d (declare them in coefficient_names or variable_names)",
    );
    expect(at("a*b*bs + c").message).toMatch(/^predictiveBatcher\.formula: multiple coefficients in the term a\*b\*bs/);
    expect(at("a**2*bs + b + c").message).toBe("predictiveBatcher.formula: the formula is not linear in a (term a**2*bs)");
    // As in the Rust core and the reference, a declared coefficient may be absent (it fits to 0).
    expect(c.PredictiveBatcher.C({ ...base, formula: "a*bs + b*l" }).formula).toBe("a*bs + b*l");
    const badProbe = errorOf(() => c.PredictiveBatcher.C({ ...base, formula: "a*bs + b*l + c", dims_provider: probes({ bs: 1 }, { bs: 2, l: 1 }, { bs: 3, l: 1 }) }));
    expect(badProbe.message).toBe("predictiveBatcher.dims_provider.probe_dims[0]: probe variables {bs} must be exactly {bs, l}");
    expect(errorOf(() => c.PredictiveBatcher.C({ ...base, formula: "a*bs + b*l + c", memory_fraction: 1.5 })).path).toBe("predictiveBatcher.memory_fraction");
    expect(errorOf(() => c.PredictiveBatcher.C({ ...base, formula: "a*bs + b*l + c", memory_fraction: 0 })).path).toBe("predictiveBatcher.memory_fraction");
  });
});

describe("sets", () => {
  it("are immutable, refuse duplicates, and hash independently of order", () => {
    const s = sealedSet(1, 2);
    expect(() => (s as Set<number>).add(3)).toThrow(TypeError);
    const provider = (order: number[]) =>
      c.BatchDimsProvider.C({ probe_dims: order.map((bs) => c.ProbePoint.C({ values: { bs } })) });
    expect(identifierOf(provider([1, 2, 3]))).toBe(identifierOf(provider([3, 1, 2])));
    const names = (xs: string[]) => ({ ...base(), coefficient_names: xs });
    const base = () => ({ formula: "a*bs + b", variable_names: ["bs"], dims_provider: provider([1, 2]) });
    expect(identifierOf(c.PredictiveBatcher.C(names(["a", "b"])))).toBe(identifierOf(c.PredictiveBatcher.C(names(["b", "a"]))));
    expect(errorOf(() => c.PredictiveBatcher.C(names(["a", "a", "b"]))).message).toBe(
      "predictiveBatcher.coefficient_names: a set cannot hold the same value twice",
    );
  });
});

describe("identifiers", () => {
  it("use the Python type ids", () => {
    expect(c.Learner.typeId.toLowerCase()).toBe("xpm_torch.learner.learner");
    expect(identifierOf(demoLearner())).toMatch(/^[0-9a-f]{64}$/);
  });

  it("do not depend on key order", () => {
    const a = c.HingeLoss.C({ weight: 0.5, margin: 2 });
    const b = c.HingeLoss.C({ margin: 2, weight: 0.5 });
    expect(identifierOf(b)).toBe(identifierOf(a));
  });

  it("ignore Meta parameters and follow Params", () => {
    const config = demoLearner();
    const id = identifierOf(config);
    expect(identifierOf(c.Learner.C({ ...config, checkpoint_interval: 5 }))).toBe(id);
    const renamed = c.RankingValidationListener.C({ ...heldout(config), id: "other" });
    expect(identifierOf(c.Learner.C({ ...config, listeners: [renamed] }))).toBe(id);
    const fabric = c.FabricConfiguration.C({ devices: "2", accelerator: "cpu" });
    expect(identifierOf(c.Learner.C({ ...config, fabric_config: fabric }))).toBe(id);
    expect(identifierOf(c.Learner.C({ ...config, max_epochs: config.max_epochs + 1 }))).not.toBe(id);
    expect(identifierOf(c.Learner.C({ ...config, fabric_config: c.FabricConfiguration.C({ precision: "bf16-mixed" }) }))).not.toBe(id);
  });

  it("skip ignore-default parameters left at their default", () => {
    expect(identifierOf(c.HingeLoss.C({}))).toBe(identifierOf(c.HingeLoss.C({ weight: 1, margin: 1 })));
    expect(identifierOf(c.HingeLoss.C({ margin: 2 }))).not.toBe(identifierOf(c.HingeLoss.C({})));
  });

  it("leave out meta-marked configurations", () => {
    const config = demoLearner();
    const extra = setMeta(c.RankingValidationListener.C({ ...heldout(config), id: "extra" }), true);
    expect(identifierOf(c.Learner.C({ ...config, listeners: [...config.listeners, extra] }))).toBe(identifierOf(config));
  });
});

describe("JSON Schema export", () => {
  it("describes every buildable class", () => {
    const schema = configJsonSchema() as { $defs: Record<string, { properties: Record<string, unknown>; required: string[] }> };
    const hinge = schema.$defs["xpm_torch.losses.pairwise.HingeLoss"]!;
    expect(Object.keys(hinge.properties)).toEqual([TYPE_KEY, "weight", "margin"]);
    expect(hinge.required).toEqual([TYPE_KEY]);
    const learner = schema.$defs["xpm_torch.learner.Learner"]!;
    expect(learner.required).toEqual([TYPE_KEY, "random", "trainer", "model", "optimizers", "listeners"]);
    // Generated paths reach the core, filled in by the run.
    expect(learner.properties.logpath).toEqual({ type: "string", readOnly: true, description: "TensorBoard logs (generated in the job directory)" });
    // A position several classes fit refers to a definition named by the class it is typed with.
    expect(learner.properties.trainer).toMatchObject({ $ref: "#/$defs/xpm_torch.trainers.Trainer" });
    expect(schema.$defs["xpm_torch.trainers.Trainer"]).toEqual({
      anyOf: [{ $ref: "#/$defs/xpm_torch.trainers.LossTrainer" }, { $ref: "#/$defs/xpm_torch.trainers.multiple.MultipleTrainer" }],
    });
  });

  it("declares the kinds of a stand-in in the positions of a class that lists them", () => {
    const schema = configJsonSchema() as { $defs: Record<string, { anyOf?: { $ref?: string }[] }> };
    const jsObject = `#/$defs/${JS_OBJECT}`;
    const standIn = (position: string) => schema.$defs[position]?.anyOf?.find((s) => s.$ref === jsObject);
    expect(standIn("xpm_torch.base.Sampler")).toEqual({ $ref: jsObject, properties: { kind: { enum: ["pairwise", "pointwise", "triplets"] } } });
    expect(standIn("xpm_torch.trainers.context.TrainingHook")).toEqual({ $ref: jsObject, properties: { kind: { enum: ["step", "initialization"] } } });
    // A class that leaves the kind of its stand-ins free: a plain reference.
    expect(standIn("LtrDataset")).toEqual({ $ref: jsObject });
    // The record kinds the schema declares are those a sampler written in TypeScript yields.
    expectTypeOf<(typeof c.SAMPLER_KINDS)[number]>().toEqualTypeOf<SamplerKind>();
  });
});

describe("FabricConfiguration", () => {
  afterEach(() => vi.restoreAllMocks());

  it("accepts legacy precisions with a deprecation warning, as written", () => {
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    for (const [legacy, current] of Object.entries(c.LEGACY_PRECISIONS)) {
      const fabric = c.FabricConfiguration.C({ precision: legacy as keyof typeof c.LEGACY_PRECISIONS });
      // Kept as written: the Python reference hashes the spelling it was given.
      expect(fabric.precision).toBe(legacy);
      expect(warn).toHaveBeenLastCalledWith(`precision "${legacy}" is deprecated, write "${current}" (same meaning)`, {
        type: "DeprecationWarning",
        code: "XPM_TORCH_PRECISION",
      });
    }
    expect(warn).toHaveBeenCalledTimes(4);
    for (const current of c.CURRENT_PRECISIONS) c.FabricConfiguration.C({ precision: current });
    expect(warn).toHaveBeenCalledTimes(4);
  });

  it("rejects any other precision at .C() time", () => {
    const err = errorOf(() => c.FabricConfiguration.C({ precision: "8-true" as "32-true" }));
    expect(err.message).toContain("precision");
    expect(() => c.FabricConfiguration.C({ precision: "bf16-mixed " as "32-true" })).toThrow(ConfigError);
    expect(() => c.FabricConfiguration.C({ num_threads: 0 })).toThrow(ConfigError);
  });

  it("refuses unknown strategies at .C() time; auto means ddp for several processes", () => {
    for (const strategy of ["fsdp", "deepspeed", "ddp_spawn", "DDP"]) {
      const err = errorOf(() => c.FabricConfiguration.C({ strategy: strategy as "auto" }));
      expect(err.message).toContain("strategy");
    }
    const placement = (strategy: "auto" | "ddp", devices: string, num_nodes = 1) =>
      c.FabricConfiguration.C({ strategy, devices, num_nodes, accelerator: "cpu" });
    expect(usesDdp(placement("auto", "auto"))).toBe(false);
    expect(usesDdp(placement("auto", "1"))).toBe(false);
    expect(usesDdp(placement("auto", "2"))).toBe(true);
    expect(processesPerNode(placement("auto", "2"))).toBe(2);
    expect(usesDdp(placement("auto", "1", 2))).toBe(true);
    expect(usesDdp(placement("ddp", "1"))).toBe(true);
    expect(processesPerNode(placement("ddp", "3"))).toBe(3);
  });

  it("keeps threads and determinism out of identifiers", () => {
    const config = demoLearner();
    const id = identifierOf(config);
    const tuned = c.FabricConfiguration.C({ num_threads: 2, deterministic: true });
    expect(identifierOf(c.Learner.C({ ...config, fabric_config: tuned }))).toBe(id);
  });
});

describe("parameter selection and hooks", () => {
  const model = c.MLP.C({ input_dim: 4, hidden_dims: [3] });

  it("keeps an empty regex as written (Python hashes it so) and defaults negative_regex to empty", () => {
    const all = c.RegexParametersIterator.C({ regex: "", model });
    expect(all.regex).toBe("");
    expect(all.negative_regex).toBe("");
    expect(identifierOf(all)).toBe(identifierOf(c.RegexParametersIterator.C({ regex: "", negative_regex: "", model })));
    expect(identifierOf(all)).not.toBe(identifierOf(c.RegexParametersIterator.C({ regex: ".*", model })));
    expect(errorOf(() => c.RegexParametersIterator.C({ regex: "(", model })).message).toContain("regex");
  });

  it("refuses a ValidationHook in a trainer: validation listeners do not call hooks", () => {
    const Check = defineConfig("my_tests.CheckOnValidation", {}, { extends: c.ValidationHook });
    const sampler = c.PairwiseSampler.C({
      dataset: c.SyntheticLtrDataset.C({ signal_seed: 1, seed: 1, num_queries: 2, docs_per_query: 2, num_features: 2 }),
    });
    const err = errorOf(() => c.LossTrainer.C({ sampler, hooks: [c.HingeLoss.C({}), Check.C({})] }));
    expect(err.message).toContain("hooks[1]");
    expect(err.message).toContain("ValidationHook");
    const trainer = c.LossTrainer.C({ sampler, hooks: [c.HingeLoss.C({})] });
    expect(() => c.MultipleTrainer.C({ trainers: { a: trainer }, hooks: [Check.C({})] })).toThrow(/hooks\[0\].*ValidationHook/);
  });
});
