// The identifiers of configurations built with the TypeScript classes equal those experimaestro
// computes for the same configurations built with xpm-torch's Python classes
// (test/fixtures/python-identifiers.json, written by scripts/fixtures/gen_identifiers.py).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import * as c from "../ts/config/classes/index.js";
import { setInitTasks } from "../ts/config/identifier-marks.js";
import { identifierOf } from "../ts/config/identifiers.js";

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "python-identifiers.json");

interface Fixture {
  cases: { name: string; description: string; identifier: string }[];
}

const dataset = (seed = 1) => c.SyntheticLtrDataset.C({ signal_seed: 7, seed, num_queries: 20, docs_per_query: 8, num_features: 6 });
const model = () => c.MlpScorer.C({ input_dim: 6, hidden_dims: [8] });
const sampler = () => c.PairwiseSampler.C({ dataset: dataset() });
type LossTrainerInput = Parameters<typeof c.LossTrainer.C>[0];
const lossTrainer = (input: Partial<LossTrainerInput> = {}) =>
  c.LossTrainer.C({ sampler: sampler(), hooks: [c.PairwiseCrossEntropyLoss.C({})], ...input });
const regexIterator = (regex: string, negative_regex?: string) =>
  c.RegexParametersIterator.C({ regex, model: model(), ...(negative_regex === undefined ? {} : { negative_regex }) });
const validationLoss = (input: { warmup?: number; validation_interval?: number; early_stop?: number } = {}) =>
  c.TrainerValidationLoss.C({ id: "val", data: dataset(2), batch_size: 32, trainer: lossTrainer(), ...input });
const predictive = (input: Partial<Parameters<typeof c.PredictiveBatcher.C>[0]> = {}) =>
  c.PredictiveBatcher.C({
    formula: "a + b * bs * l",
    coefficient_names: new Set(["a", "b"]),
    variable_names: new Set(["bs", "l"]),
    dims_provider: c.BatchDimsProvider.C({
      probe_dims: new Set(
        [
          [1, 8],
          [2, 8],
          [4, 16],
        ].map(([bs, l]) => c.ProbePoint.C({ values: { bs: bs!, l: l! } })),
      ),
    }),
    ...input,
  });
type LearnerInput = Parameters<typeof c.Learner.C>[0];
const learner = (input: Partial<LearnerInput> = {}) =>
  c.Learner.C({
    random: c.Random.C({ seed: 1 }),
    trainer: lossTrainer(),
    model: model(),
    optimizers: [c.ParameterOptimizer.C({ optimizer: c.Adam.C({}) })],
    listeners: [],
    ...input,
  });

/** A Learner submitted with a loader of its own model as initialisation task (Python: init_tasks). */
const initialised = (settings?: ReturnType<typeof c.CheckpointSettings.C>) => {
  const config = learner();
  const loader = c.ModuleLoader.C({ value: config.model, path: "/runs/a/model.safetensors", ...(settings ? { settings } : {}) });
  return setInitTasks(config, [loader]);
};

/** The configurations of scripts/fixtures/gen_identifiers.py, by name. */
const CASES: Record<string, () => object> = {
  random_default: () => c.Random.C({}),
  random_seed: () => c.Random.C({ seed: 42 }),
  sgd_default: () => c.SGD.C({}),
  sgd_set: () => c.SGD.C({ lr: 0.1, weight_decay: 0.01 }),
  adam_default: () => c.Adam.C({}),
  adam_set: () => c.Adam.C({ lr: 1e-4, weight_decay: 0.1, eps: 1e-6 }),
  adamw_default: () => c.AdamW.C({}),
  adamw_set: () => c.AdamW.C({ lr: 2e-5, weight_decay: 0 }),
  adafactor_default: () => c.Adafactor.C({}),
  adafactor_lr: () => c.Adafactor.C({ lr: 1e-3, relative_step: false }),
  adafactor_decay: () => c.Adafactor.C({ weight_decay: 0.01 }),
  po_adafactor: () => c.ParameterOptimizer.C({ optimizer: c.Adafactor.C({}) }),
  linear_warmup: () => c.LinearWithWarmup.C({ num_warmup_steps: 100 }),
  linear_warmup_min: () => c.LinearWithWarmup.C({ num_warmup_steps: 10, min_factor: 0.1 }),
  cosine_warmup: () => c.CosineWithWarmup.C({ num_warmup_steps: 10 }),
  cosine_cycles: () => c.CosineWithWarmup.C({ num_warmup_steps: 0, num_cycles: 2 }),
  max_epochs_default: () => c.LinearWithWarmupAndMaxEpochs.C({ num_warmup_steps: 5 }),
  max_epochs_total: () => c.LinearWithWarmupAndMaxEpochs.C({ num_warmup_steps: 1000, total_training_steps: 35000 }),
  max_epochs_min: () => c.LinearWithWarmupAndMaxEpochs.C({ num_warmup_steps: 5, min_factor: 0.2, total_training_steps: 500 }),
  filter_all: () => c.ParameterFilter.C({}),
  filter_includes: () => c.RegexParameterFilter.C({ includes: ["weight$"] }),
  filter_excludes: () => c.RegexParameterFilter.C({ excludes: ["bias"] }),
  filter_both: () => c.RegexParameterFilter.C({ includes: ["^layers"], excludes: ["bias", "norm"] }),
  po_default_filter: () => c.ParameterOptimizer.C({ optimizer: c.Adam.C({}) }),
  po_scheduler: () => c.ParameterOptimizer.C({ optimizer: c.SGD.C({ lr: 0.5 }), scheduler: c.LinearWithWarmup.C({ num_warmup_steps: 4 }) }),
  po_filter: () => c.ParameterOptimizer.C({ optimizer: c.AdamW.C({}), filter: c.RegexParameterFilter.C({ excludes: ["bias"] }) }),
  po_module: () => c.ParameterOptimizer.C({ optimizer: c.Adam.C({}), module: c.Linear.C({ input_dim: 3 }) }),
  regex_iterator: () => regexIterator("layers"),
  regex_iterator_negative: () => regexIterator("layers", "bias"),
  regex_iterator_empty: () => regexIterator(""),
  regex_iterator_negative_empty: () => regexIterator("w", ""),
  inverse_iterator: () => c.InverseParametersIterator.C({ iterator: regexIterator("bias") }),
  sub_iterator: () => c.SubParametersIterator.C({ model: model(), iterator: regexIterator("^layers"), default: false }),
  layer_freezer: () => c.LayerFreezer.C({ selector: regexIterator("^layers\\.0\\.") }),
  layer_sharer: () => c.LayerSharer.C({ source: regexIterator("^layers\\.0\\.weight$"), target: regexIterator("^layers\\.1\\.weight$") }),
  grad_clip: () => c.GradientClippingHook.C({ max_norm: 1 }),
  grad_clip_other: () => c.GradientClippingHook.C({ max_norm: 2.5 }),
  grad_log_default: () => c.GradientLogHook.C({}),
  grad_log_name: () => c.GradientLogHook.C({ name: "grad/l2" }),
  pair_ce: () => c.PairwiseCrossEntropyLoss.C({}),
  pair_ce_weight: () => c.PairwiseCrossEntropyLoss.C({ weight: 2 }),
  hinge_default: () => c.HingeLoss.C({}),
  hinge_margin: () => c.HingeLoss.C({ margin: 0.5, weight: 0.3 }),
  pointwise_ce: () => c.PointwiseCrossEntropyLoss.C({}),
  batch_ce: () => c.BatchwiseCrossEntropyLoss.C({}),
  softmax_ce: () => c.SoftmaxCrossEntropy.C({}),
  softmax_ce_weight: () => c.SoftmaxCrossEntropy.C({ weight: 0.5 }),
  batcher: () => c.Batcher.C({}),
  power_batcher: () => c.PowerAdaptativeBatcher.C({}),
  uniform_packer: () => c.UniformPacker.C({}),
  adaptive_packer: () => c.AdaptivePacker.C({}),
  adaptive_packer_sort: () => c.AdaptivePacker.C({ sort_by: "length" }),
  probe_point: () => c.ProbePoint.C({ values: { bs: 4, l: 16 } }),
  predictive: () => predictive(),
  predictive_set: () => predictive({ memory_fraction: 0.5, extra_overhead_bytes: 1024, packer: c.AdaptivePacker.C({}) }),
  fabric_default: () => c.FabricConfiguration.C({}),
  fabric_precision: () => c.FabricConfiguration.C({ precision: "bf16-mixed" }),
  fabric_fp32: () => c.FabricConfiguration.C({ torch_fp32_precision: "high" }),
  fabric_meta: () => c.FabricConfiguration.C({ devices: "2", strategy: "ddp", num_nodes: 1, accelerator: "cpu" }),
  checkpoint_settings: () => c.CheckpointSettings.C({}),
  checkpoint_settings_epoch: () => c.CheckpointSettings.C({ epoch: 3 }),
  loss_trainer: () => lossTrainer(),
  loss_trainer_set: () => lossTrainer({ batch_size: 64, num_workers: 0, batcher: c.PowerAdaptativeBatcher.C({}) }),
  loss_trainer_hooks: () => lossTrainer({ hooks: [c.HingeLoss.C({ margin: 2 }), c.LayerFreezer.C({ selector: regexIterator("^layers\\.0\\.") })] }),
  loss_trainer_model: () => lossTrainer({ hooks: [c.SoftmaxCrossEntropy.C({})], model: model() }),
  multiple_trainer: () => c.MultipleTrainer.C({ trainers: { a: lossTrainer(), b: lossTrainer({ batch_size: 8 }) } }),
  validation_loss: () => validationLoss(),
  validation_loss_set: () => validationLoss({ warmup: 2, validation_interval: 2, early_stop: 4 }),
  validation_settings: () => c.ValidationSettings.C({ listener: validationLoss(), key: "loss" }),
  validation_settings_no_listener: () => c.ValidationSettings.C({ key: "ndcg@10" }),
  module_loader: () => c.ModuleLoader.C({ value: model(), path: "/runs/model.safetensors" }),
  module_loader_settings: () => c.ModuleLoader.C({ value: model(), path: "/runs/best", settings: c.CheckpointSettings.C({ epoch: 2 }) }),
  learner_init_task: () => initialised(),
  learner_init_task_checkpoint: () => initialised(c.CheckpointSettings.C({ epoch: 3 })),
  multiple_model: () => c.MultipleModel.C({ models: { scorer: model(), head: c.Linear.C({ input_dim: 3 }) }, scorer: "scorer" }),
  learner: () => learner(),
  learner_set: () =>
    learner({
      max_epochs: 12,
      steps_per_epoch: 34,
      checkpoint_interval: 3,
      optimizers: [
        c.ParameterOptimizer.C({ optimizer: c.AdamW.C({ lr: 2e-4 }), scheduler: c.CosineWithWarmup.C({ num_warmup_steps: 10 }) }),
        c.ParameterOptimizer.C({ optimizer: c.SGD.C({ lr: 0.5 }), filter: c.RegexParameterFilter.C({ includes: ["bias"] }) }),
      ],
      listeners: [validationLoss()],
      hooks: [c.GradientClippingHook.C({ max_norm: 1 }), c.GradientLogHook.C({})],
      fabric_config: c.FabricConfiguration.C({ precision: "bf16-mixed", devices: "2" }),
    }),
  learner_default_epochs: () => learner({ max_epochs: 1000, steps_per_epoch: 128 }),
};

const fixture = JSON.parse(readFileSync(FIXTURE, "utf8")) as Fixture;

describe("identifiers equal those of the Python library", () => {
  it("covers at least 60 configurations, each built on both sides", () => {
    expect(fixture.cases.length).toBeGreaterThanOrEqual(60);
    expect(fixture.cases.map((k) => k.name).sort()).toEqual(Object.keys(CASES).sort());
  });

  it.each(fixture.cases.map((k) => [k.name, k] as const))("%s", (name, expected) => {
    expect(identifierOf(CASES[name]!()), expected.description).toBe(expected.identifier);
  });
});
