import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

import { describe, expect, it } from "vitest";

import {
  Adam,
  ConfigError,
  DRMM,
  LayerFreezer,
  Learner,
  Linear,
  LossTrainer,
  MlpScorer,
  MultipleModel,
  ParameterOptimizer,
  RegexParameterFilter,
  RegexParametersIterator,
  TorchScriptModel,
  XpmTorchError,
  demoLearner,
  learn,
  loadModel,
  type LearnerConfig,
} from "../ts/index.js";
import { readSafetensors } from "./helpers/safetensors.js";

const FIXTURES = resolve("crates/core/tests/fixtures/models");
// Every epoch's checkpoint: the tests load older ones.
const run = (config: LearnerConfig) =>
  learn(Learner.C({ ...config, checkpoint_keep: config.max_epochs }), { workspace: mkdtempSync(join(tmpdir(), "xpm-models-")) });

const scripted = (freeze?: string) => {
  const base = demoLearner({ seed: 1, num_features: 8, max_epochs: 3, steps_per_epoch: 25 });
  const trainer = base.trainer as typeof base.trainer & { hooks: readonly object[] };
  const model = TorchScriptModel.C({ id: "scripted-features", path: join(FIXTURES, "scripted_features.pt"), input: "features" });
  return Learner.C({
    ...base,
    model,
    trainer: LossTrainer.C({
      ...(trainer as never as Parameters<typeof LossTrainer.C>[0]),
      hooks: freeze ? [...trainer.hooks, LayerFreezer.C({ selector: RegexParametersIterator.C({ regex: freeze, model }) })] : trainer.hooks,
    } as never),
  });
};

describe("models through the binding", () => {
  it("trains a scripted PyTorch module from TypeScript, saving its weights under PyTorch's names", async () => {
    const result = await run(scripted());
    const losses = result.epochs.map((e) => e.loss);
    expect(losses[2]!).toBeLessThan(losses[0]!);
    expect(result.epochs[2]!.metrics["heldout/pairwise_accuracy"]).toBeGreaterThan(0.8);
    const saved = readSafetensors(result.learned_model!);
    const expected = (JSON.parse(readFileSync(join(FIXTURES, "scripted_features.json"), "utf8")) as { parameters: Record<string, number[]> })
      .parameters;
    expect(Object.fromEntries([...saved].map(([name, t]) => [name, t.shape]))).toEqual(expected);
    expect([...saved.values()].every((t) => t.dtype === "F32")).toBe(true);
  });

  it("freezes a scripted module's parameters", async () => {
    const result = await run(scripted("net\\.0\\..*"));
    const first = readSafetensors(result.checkpoints["1"]!);
    const last = readSafetensors(result.learned_model!);
    // The frozen first layer kept its values from epoch 1 on; the head went on training.
    expect(last.get("net.0.weight")!.data.equals(first.get("net.0.weight")!.data)).toBe(true);
    expect(last.get("net.0.bias")!.data.equals(first.get("net.0.bias")!.data)).toBe(true);
    expect(last.get("net.2.weight")!.data.equals(first.get("net.2.weight")!.data)).toBe(false);
  });

  it("loads a trained model from learned_model, its loader or its checkpoint directory", async () => {
    const result = await run(demoLearner({ seed: 3, num_features: 6, max_epochs: 2, steps_per_epoch: 30 }));
    const records = Array.from({ length: 300 }, (_, i) => Array.from({ length: 6 }, (_, j) => Math.sin(i * 7 + j)));
    const a = loadModel(result.learned_model!).score(records);
    expect(a).toHaveLength(300);
    expect(a.every(Number.isFinite)).toBe(true);
    const b = loadModel(result.loaders.learned_model!, { batchSize: 7 }).score(records.map((r) => Float32Array.from(r)));
    // Other batch sizes may take other kernels: equal up to float rounding.
    b.forEach((v, i) => expect(v).toBeCloseTo(a[i]!, 5));
    const c = loadModel(dirname(dirname(result.learned_model!))).score(records);
    expect(c).toEqual(a);
    // The same scores on the CPU named explicitly; a GPU this machine lacks is a typed error.
    expect(loadModel(result.learned_model!, { device: "cpu" }).score(records)).toEqual(a);
    expect(() => loadModel(result.learned_model!, { device: "cuda:99" })).toThrow(/^device: CUDA device 99 is not available/);
    // Another checkpoint holds other weights.
    const first = loadModel(dirname(dirname(result.checkpoints["1"]!))).score(records);
    expect(first).not.toEqual(a);
  });

  it("gives typed errors for wrong records and wrong weights", async () => {
    const result = await run(demoLearner({ seed: 4, num_features: 6, max_epochs: 1, steps_per_epoch: 5 }));
    const model = loadModel(result.learned_model!);
    expect(() => model.score([{ query: [1, 2], document: [3] }])).toThrow(ConfigError);
    expect(() => model.score([{ query: [1, 2], document: [3] }])).toThrow(/scores feature vectors, but the data gives token sequences/);
    expect(() => model.score([[1, 2, 3, 4, 5, 6], [1]])).toThrow(/records\[1\]: 1 features/);
    expect(() => loadModel(result.learned_model!, { model: DRMM.C({ vocab_size: 10, dim: 4 }) })).toThrow(/lacks the model's parameters/);
    expect(() => loadModel(join(result.jobDir, "absent"))).toThrow(XpmTorchError);
  });

  it("trains the scorer of a MultipleModel with an optimizer chosen by prefix, and scores with it", async () => {
    const base = demoLearner({ seed: 5, num_features: 6, max_epochs: 2, steps_per_epoch: 30 });
    const config = Learner.C({
      ...base,
      model: MultipleModel.C({
        models: { scorer: MlpScorer.C({ input_dim: 6, hidden_dims: [8] }), head: Linear.C({ input_dim: 4 }) },
        scorer: "scorer",
      }),
      optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 3e-3 }), filter: RegexParameterFilter.C({ includes: ["^scorer\\."] }) })],
    });
    const result = await run(config);
    expect(result.epochs[1]!.metrics["heldout/pairwise_accuracy"]).toBeGreaterThan(0.8);
    const first = readSafetensors(result.checkpoints["1"]!);
    const last = readSafetensors(result.learned_model!);
    expect([...last.keys()].sort()).toEqual(["head.bias", "head.weight", "scorer.layers.0.bias", "scorer.layers.0.weight", "scorer.layers.1.bias", "scorer.layers.1.weight"].sort());
    // No optimizer claims the head: it keeps its initial weights while the scorer trains.
    expect(last.get("head.weight")!.data.equals(first.get("head.weight")!.data)).toBe(true);
    expect(last.get("scorer.layers.0.weight")!.data.equals(first.get("scorer.layers.0.weight")!.data)).toBe(false);
    const records = Array.from({ length: 20 }, (_, i) => Array.from({ length: 6 }, (_, j) => Math.cos(i * 3 + j)));
    const scores = loadModel(result.learned_model!).score(records);
    expect(scores).toHaveLength(20);
    expect(scores.every(Number.isFinite)).toBe(true);
    expect(() => MultipleModel.C({ models: { a: Linear.C({ input_dim: 2 }) }, scorer: "b" })).toThrow(/scorer: "b" is not one of the models \["a"\]/);
  });
});
