import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import {
  HingeLoss,
  LayerFreezer,
  LayerSharer,
  Learner,
  LinearWithWarmup,
  LossTrainer,
  MlpScorer,
  MultipleModel,
  PairwiseSampler,
  ParameterOptimizer,
  RegexParametersIterator,
  SGD,
  SyntheticLtrDataset,
  TrainerValidationLoss,
  defineListener,
  demoLearner,
  learn,
  type BestCheckpoint,
  type LearnerConfig,
} from "../ts/index.js";
import { int } from "../ts/config/types.js";
import { param } from "../ts/config/declare.js";
import { readSafetensors } from "./helpers/safetensors.js";
import { simulatedMemory } from "./helpers/simulated-memory.js";

const workspace = () => mkdtempSync(join(tmpdir(), "xpm-learner-"));
const data = (seed: number, signal_seed = 2026) =>
  SyntheticLtrDataset.C({ signal_seed, seed, num_queries: 60, docs_per_query: 10, num_features: 16, noise: 0.3 });

function withTrainer(config: LearnerConfig, changes: Partial<Parameters<typeof LossTrainer.C>[0]>): LearnerConfig {
  const trainer = LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1) }), batch_size: 64, hooks: [HingeLoss.C({})], ...changes });
  return Learner.C({ ...config, trainer });
}

describe("optimization", () => {
  it("logs the learning rate the warmup schedule gives at each step", async () => {
    const base = demoLearner({ max_epochs: 12, steps_per_epoch: 1 });
    const optimizer = ParameterOptimizer.C({
      optimizer: SGD.C({ lr: 0.5 }),
      scheduler: LinearWithWarmup.C({ num_warmup_steps: 4, min_factor: 0.1 }),
    });
    const result = await learn(Learner.C({ ...base, optimizers: [optimizer] }), { workspace: workspace() });
    // One step per epoch: the epoch's mean learning rate is the step's. N = 12, W = 4, m = 0.1.
    const formula = (s: number) => (s < 4 ? s / 4 : (Math.max(0, (12 - s) / 8) + 0.1) / 1.1);
    result.epochs.forEach((e, s) => {
      expect(e.train["gradient/scheduler/1/1"]).toBeCloseTo(0.5 * formula(s), 12);
    });
  });

  it("keeps frozen layers bit-identical and shared layers one tensor", async () => {
    const base = demoLearner({ max_epochs: 2, steps_per_epoch: 20 });
    const model = MlpScorer.C({ input_dim: 16, hidden_dims: [8, 8, 8] });
    const config = withTrainer(Learner.C({ ...base, model, checkpoint_keep: 2 }), {
      hooks: [
        HingeLoss.C({}),
        LayerFreezer.C({ selector: RegexParametersIterator.C({ regex: "^layers\\.0\\.", model }) }),
        LayerSharer.C({
          source: RegexParametersIterator.C({ regex: "^layers\\.1\\.weight$", model }),
          target: RegexParametersIterator.C({ regex: "^layers\\.2\\.weight$", model }),
        }),
      ],
    });
    const result = await learn(config, { workspace: workspace() });
    const first = readSafetensors(result.checkpoints["1"]!);
    const last = readSafetensors(result.learned_model!);
    for (const name of ["layers.0.weight", "layers.0.bias"]) {
      expect(last.get(name)!.data.equals(first.get(name)!.data), name).toBe(true);
    }
    expect(last.get("layers.1.bias")!.data.equals(first.get("layers.1.bias")!.data)).toBe(false);
    expect(last.get("layers.2.weight")!.data.equals(last.get("layers.1.weight")!.data)).toBe(true);
    expect(last.get("layers.2.weight")!.data.equals(first.get("layers.2.weight")!.data)).toBe(false);
  });
});

describe("parameter selection", () => {
  it("searches names as Python's re.search, relative to the selector's model", async () => {
    const base = demoLearner({ max_epochs: 2, steps_per_epoch: 10 });
    const scorer = MlpScorer.C({ input_dim: 16, hidden_dims: [8] });
    const spare = MlpScorer.C({ input_dim: 16, hidden_dims: [4] });
    const model = MultipleModel.C({ models: { scorer, spare }, scorer: "scorer" });
    // "bias" is found in both bias names of the scorer (named "layers.<k>.bias" within it).
    const config = withTrainer(Learner.C({ ...base, model, checkpoint_keep: 2 }), {
      hooks: [HingeLoss.C({}), LayerFreezer.C({ selector: RegexParametersIterator.C({ regex: "bias", model: scorer }) })],
    });
    const result = await learn(config, { workspace: workspace() });
    const first = readSafetensors(result.checkpoints["1"]!);
    const last = readSafetensors(result.learned_model!);
    for (const name of ["scorer.layers.0.bias", "scorer.layers.1.bias"]) {
      expect(last.get(name)!.data.equals(first.get(name)!.data), name).toBe(true);
    }
    for (const name of ["scorer.layers.0.weight", "scorer.layers.1.weight"]) {
      expect(last.get(name)!.data.equals(first.get(name)!.data), name).toBe(false);
    }
    // A selector over a model that is not trained here is a configuration error naming it.
    const elsewhere = withTrainer(Learner.C({ ...base, model, checkpoint_keep: 2 }), {
      hooks: [HingeLoss.C({}), LayerFreezer.C({ selector: RegexParametersIterator.C({ regex: "bias", model: MlpScorer.C({ input_dim: 3 }) }) })],
    });
    await expect(learn(elsewhere, { workspace: workspace() })).rejects.toThrow(/learner\.trainer\.hooks\[1\]\.selector\.model: is neither/);
  });
});

describe("listeners", () => {
  it("stop at epoch 3 when a TypeScript listener says so", async () => {
    const StopAt = defineListener(
      "tests.StopAt",
      { epoch: param(int()) },
      { call: (self, state) => (state.epoch >= self.epoch ? "STOP" : "NO_DECISION") },
    );
    const seen: number[] = [];
    const Recorder = defineListener("tests.Recorder", {}, {
      async call(_self, state) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        seen.push(state.epoch);
        return { status: "NO_DECISION", metrics: { "recorder/epoch": state.epoch }, output: { last: state.epoch } };
      },
    });
    const base = demoLearner({ max_epochs: 10, steps_per_epoch: 5 });
    const config = Learner.C({ ...base, listeners: [...base.listeners, StopAt.C({ id: "stop", epoch: 3 }), Recorder.C({ id: "rec" })] });
    const result = await learn(config, { workspace: workspace() });
    expect(result.epochs.map((e) => e.epoch)).toEqual([1, 2, 3]);
    expect(result.stopped).toBe("stopped after epoch 3 by listener(s) stop");
    expect(seen).toEqual([1, 2, 3]);
    expect(result.epochs[2]!.metrics["recorder/epoch"]).toBe(3);
    expect(result.outputs).toEqual({ rec: { last: 3 }, stop: null });
    expect(Object.keys(result.listeners)).toEqual(["heldout"]);
  });

  it("score with the model being trained, as it is at that epoch", async () => {
    const { CallbackError, loadModel } = await import("../ts/index.js");
    const rows = Array.from({ length: 40 }, (_, i) => Float32Array.from({ length: 16 }, (_, j) => Math.sin(i * 7 + j)));
    const scored: Float32Array[] = [];
    let keep: ((records: Float32Array[]) => Promise<Float32Array>) | undefined;
    const Scoring = defineListener("tests.OwnValidation", {}, {
      async call(_self, state) {
        const scores = await state.model.score(rows);
        scored.push(scores);
        keep = (records) => state.model.score(records);
        // A metric of its own from the scores: the share of rows scored above the first.
        const above = scores.filter((s) => s > scores[0]!).length / scores.length;
        return { status: "NO_DECISION", metrics: { "own/above_first": above } };
      },
    });
    const base = demoLearner({ max_epochs: 3, steps_per_epoch: 20 });
    const result = await learn(Learner.C({ ...base, listeners: [Scoring.C({ id: "own" })] }), { workspace: workspace(), quiet: true });
    expect(scored).toHaveLength(3);
    expect(scored[0]).not.toEqual(scored[2]);
    expect(result.epochs[2]!.metrics["own/above_first"]).toBeCloseTo(scored[2]!.filter((s) => s > scored[2]![0]!).length / 40, 6);
    // The last epoch's scores are those of the learned model.
    const learned = loadModel(result.learned_model!, { device: "cpu" }).score(rows);
    scored[2]!.forEach((s, i) => expect(s).toBeCloseTo(learned[i]!, 5));
    // Outside its call() the listener has no model to score with.
    await expect(keep!(rows)).rejects.toBeInstanceOf(CallbackError);
  });

  it("reports a failing TypeScript listener as the run's error", async () => {
    const exploded = new Error("listener exploded");
    const Broken = defineListener("tests.Broken", {}, {
      call() {
        throw exploded;
      },
    });
    const base = demoLearner({ max_epochs: 3, steps_per_epoch: 2 });
    await expect(learn(Learner.C({ ...base, listeners: [Broken.C({ id: "broken" })] }), { workspace: workspace() })).rejects.toBe(exploded);
  });

  it("stops early_stop epochs after the lowest validation loss and returns that epoch's model", async () => {
    const base = demoLearner({ max_epochs: 25, steps_per_epoch: 20 });
    const trainer = LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1) }), batch_size: 64, hooks: [HingeLoss.C({})] });
    // Held-out data with another hidden signal: the validation loss soon stops improving.
    const validation = TrainerValidationLoss.C({ id: "val", data: data(2, 7), batch_size: 100, trainer, early_stop: 3 });
    const result = await learn(Learner.C({ ...base, trainer, listeners: [validation] }), { workspace: workspace() });
    const losses = result.epochs.map((e) => e.metrics["val/loss/pair-hinge"]!);
    const bestEpoch = losses.indexOf(Math.min(...losses)) + 1;
    const best = result.listeners.val!.loss!;
    expect(best.epoch).toBe(bestEpoch);
    expect(best.value).toBeCloseTo(Math.min(...losses), 6);
    expect(result.epochs).toHaveLength(bestEpoch + 3);
    expect(result.stopped).toMatch(/by listener\(s\) val$/);
    const bestWeights = readSafetensors(best.model!);
    const epochWeights = readSafetensors(result.checkpoints[String(bestEpoch)]!);
    for (const [name, t] of epochWeights) expect(bestWeights.get(name)!.data.equals(t.data), name).toBe(true);
    const info = JSON.parse(readFileSync(join(result.jobDir, "out", "listeners", "0", "info.json"), "utf8")) as { loss: BestCheckpoint };
    expect(info.loss.epoch).toBe(bestEpoch);
  });
});

describe("TensorBoard logs", () => {
  it("hold every epoch's training metrics (the last included) and the listeners' at the epoch's step", async () => {
    const { readEventFiles } = await import("./helpers/tfevents.js");
    const result = await learn(demoLearner({ max_epochs: 3, steps_per_epoch: 7 }), { workspace: workspace() });
    const scalars = readEventFiles(join(result.jobDir, "runs"));
    const series = (tag: string) => scalars.filter((s) => s.tag === tag).map((s) => [s.step, s.value]);
    const f32 = (x: number) => Math.fround(x);
    expect(series("train/pair-hinge")).toEqual(result.epochs.map((e) => [e.step, f32(e.train["pair-hinge"]!)]));
    expect(series("train/pair-hinge").map(([step]) => step)).toEqual([7, 14, 21]);
    expect(series("train/gradient/scheduler/1/1")).toEqual(result.epochs.map((e) => [e.step, f32(3e-3)]));
    expect(series("train/accuracy")).toHaveLength(3);
    expect(series("train/iter_per_seconds")).toHaveLength(3);
    expect(series("heldout/pairwise_accuracy")).toEqual(result.epochs.map((e) => [e.step, f32(e.metrics["heldout/pairwise_accuracy"]!)]));
  });
});

describe("losses", () => {
  it.each(["HingeLoss", "PairwiseCrossEntropyLoss", "PointwiseCrossEntropyLoss"] as const)(
    "%s trains the demo model to at least 0.90 held-out pairwise accuracy",
    async (name) => {
      const losses = await import("../ts/config/classes/losses.js");
      const base = demoLearner({ max_epochs: 6, steps_per_epoch: 100 });
      const config = withTrainer(base, { hooks: [losses[name].C({})], batch_size: 128 });
      const result = await learn(config, { workspace: workspace() });
      const last = result.epochs[result.epochs.length - 1]!;
      expect(last.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.9);
    },
  );
});

describe("record kinds", () => {
  it("pointwise records with PointwiseCrossEntropyLoss train the demo model to at least 0.85 held-out accuracy", async () => {
    const { PointwiseSampler, PointwiseCrossEntropyLoss } = await import("../ts/index.js");
    const base = demoLearner({ max_epochs: 6, steps_per_epoch: 100 });
    const config = withTrainer(base, { sampler: PointwiseSampler.C({ dataset: data(1) }), hooks: [PointwiseCrossEntropyLoss.C({})], batch_size: 128 });
    const result = await learn(config, { workspace: workspace() });
    const last = result.epochs[result.epochs.length - 1]!;
    expect(last.train["pair-pointwise-cross-entropy"]).toBeLessThan(result.epochs[0]!.train["pair-pointwise-cross-entropy"]!);
    expect(last.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.85);
  });

  it("batchwise groups with SoftmaxCrossEntropy train the demo model to at least 0.90 held-out accuracy", async () => {
    const { BatchwiseSampler, SoftmaxCrossEntropy } = await import("../ts/index.js");
    const base = demoLearner({ max_epochs: 6, steps_per_epoch: 100 });
    const config = withTrainer(base, { sampler: BatchwiseSampler.C({ dataset: data(1), group_size: 6 }), hooks: [SoftmaxCrossEntropy.C({})], batch_size: 32 });
    const result = await learn(config, { workspace: workspace() });
    const last = result.epochs[result.epochs.length - 1]!;
    expect(last.train["batch-infonce"]).toBeLessThan(result.epochs[0]!.train["batch-infonce"]!);
    expect(last.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.9);
  });

  it("refuses a pairwise loss on batchwise groups, naming the trainer's hooks", async () => {
    const { BatchwiseSampler } = await import("../ts/index.js");
    const config = withTrainer(demoLearner({ max_epochs: 1, steps_per_epoch: 1 }), { sampler: BatchwiseSampler.C({ dataset: data(1), group_size: 4 }) });
    await expect(learn(config, { workspace: workspace() })).rejects.toThrow(/^learner\.trainer\.hooks: the loss pair-hinge cannot be computed on batchwise groups/);
  });

  it("refuses token triplets for a feature model, naming the model", async () => {
    const { TokenTripletSampler, SyntheticTokenTriplets } = await import("../ts/index.js");
    const triplets = SyntheticTokenTriplets.C({ seed: 1, num_triplets: 100, vocab_size: 100, min_length: 8, max_length: 16 });
    const config = withTrainer(demoLearner({ max_epochs: 1, steps_per_epoch: 1 }), { sampler: TokenTripletSampler.C({ triplets }) });
    await expect(learn(config, { workspace: workspace() })).rejects.toThrow(/^learner\.model: MlpScorer scores feature vectors, but the data gives token sequences/);
  });

  it("reads token triplets from TSV and JSONL files, naming the line of a malformed one", async () => {
    const { TokenTripletSampler, TokenTripletFile } = await import("../ts/index.js");
    const dir = workspace();
    const tsv = join(dir, "t.tsv");
    writeFileSync(tsv, "1 2\t3 4\t5\n6\t7 8 9\t10\nbad\t1\t2\n");
    const config = withTrainer(demoLearner({ max_epochs: 1, steps_per_epoch: 1 }), {
      sampler: TokenTripletSampler.C({ triplets: TokenTripletFile.C({ id: "t", path: tsv }) }),
    });
    await expect(learn(config, { workspace: workspace() })).rejects.toThrow(`${tsv}:3:1: "bad" is not a token id`);
  });
});

describe("micro-batching", () => {
  it("a PredictiveBatcher probes CPU memory before training and the run still learns", async () => {
    const { PredictiveBatcher, BatchDimsProvider, ProbePoint } = await import("../ts/index.js");
    const { sealedSet } = await import("../ts/config/types.js");
    const batcher = PredictiveBatcher.C({
      formula: "a*bs + c",
      coefficient_names: ["a", "c"],
      variable_names: ["bs"],
      dims_provider: BatchDimsProvider.C({
        probe_dims: sealedSet(ProbePoint.C({ values: { bs: 16 } }), ProbePoint.C({ values: { bs: 64 } }), ProbePoint.C({ values: { bs: 128 } })),
      }),
    });
    const config = withTrainer(demoLearner({ max_epochs: 4, steps_per_epoch: 50 }), { batcher, batch_size: 128 });
    const result = await learn(config, { workspace: workspace(), quiet: true });
    expect(result.epochs[3]!.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.85);
    // The probes' batches are not training batches: the first epoch's metrics hold 50 steps only.
    expect(result.epochs[0]!.step).toBe(50);
  });

  it("PowerAdaptativeBatcher replays out-of-memory batches smaller and trains as without splitting", async () => {
    const { PowerAdaptativeBatcher } = await import("../ts/index.js");
    const config = (batcher?: object) =>
      withTrainer(demoLearner({ max_epochs: 2, steps_per_epoch: 20 }), { batch_size: 128, ...(batcher ? { batcher: batcher as never } : {}) });
    const plain = await learn(config(), { workspace: workspace(), quiet: true });
    // A simulated device holding 40 records: 128, 64 and 42 do not fit, 32 does.
    process.env.XPM_TORCH_SIMULATED_MEMORY = simulatedMemory({ capacity: 40_000, formula: "a*bs", coefficients: { a: 1000 } });
    try {
      const warnings: string[] = [];
      const split = await learn(config(PowerAdaptativeBatcher.C({})), { workspace: workspace(), quiet: true, onWarning: (m) => warnings.push(m) });
      expect(warnings.filter((w) => w.includes("replaying the batch")).map((w) => w.match(/micro-batches of (\d+)$/)?.[1])).toEqual(["64", "42", "32"]);
      expect(split.epochs[0]!.train["batcher/micro_batches"]).toBe(4);
      // The same training up to float32 summation order (exact gradients are checked in float64 in Rust).
      split.epochs.forEach((e, i) => expect(e.loss).toBeCloseTo(plain.epochs[i]!.loss, 3));
    } finally {
      delete process.env.XPM_TORCH_SIMULATED_MEMORY;
    }
  });

  it("a BatchDimsProvider written in TypeScript gives the formula's variables and builds the probe batches", async () => {
    const { PredictiveBatcher, ProbePoint, defineBatchDimsProvider } = await import("../ts/index.js");
    const { sealedSet } = await import("../ts/config/types.js");
    const calls = { dims: 0, records: 0, probes: [] as string[] };
    const PositiveDims = defineBatchDimsProvider(
      "tests.PositiveFeatureDims",
      {},
      {
        kind: "pairwise",
        recordDims(_self, records) {
          calls.dims += 1;
          calls.records += records.length;
          return records.map((r) => ({ h: Array.from(r.positive).filter((v) => v > 0).length }));
        },
        buildProbeBatch(_self, dims) {
          calls.probes.push(`${dims.bs}x${dims.h}`);
          const features = Array.from({ length: 16 }, (_, i) => (i < dims.h! ? 1 : -1));
          return Array.from({ length: dims.bs! }, () => ({ positive: features, negative: features }));
        },
      },
    );
    const probe = (bs: number, h: number) => ProbePoint.C({ values: { bs, h } });
    const batcher = PredictiveBatcher.C({
      formula: "a*bs*h + c",
      coefficient_names: ["a", "c"],
      variable_names: ["bs", "h"],
      dims_provider: PositiveDims.C({ probe_dims: sealedSet(probe(16, 4), probe(64, 8), probe(128, 16)) }),
    });
    const config = withTrainer(demoLearner({ max_epochs: 2, steps_per_epoch: 20 }), { batcher, batch_size: 128 });
    const result = await learn(config, { workspace: workspace(), quiet: true });
    expect(calls.probes.sort()).toEqual(["128x16", "16x4", "64x8"]);
    // The uniform packer reads the dimensions of each outer batch once, with all its records.
    expect(calls.dims).toBe(40);
    expect(calls.records).toBe(40 * 128);
    expect(result.epochs[1]!.step).toBe(40);
  });

  it("a TypeScript dims provider under the AdaptivePacker is asked once per outer batch and packs as computed by hand", async () => {
    const { AdaptivePacker, PredictiveBatcher, ProbePoint, defineBatchDimsProvider } = await import("../ts/index.js");
    const { sealedSet } = await import("../ts/config/types.js");
    const batches: number[][] = [];
    const PositiveDims = defineBatchDimsProvider(
      "tests.PositiveFeatureCount",
      {},
      {
        kind: "pairwise",
        recordDims(_self, records) {
          const counts = records.map((r) => Array.from(r.positive).filter((v) => v > 0).length);
          batches.push(counts);
          return counts.map((l) => ({ l }));
        },
        buildProbeBatch(_self, dims) {
          const features = Array.from({ length: 16 }, (_, i) => (i < dims.l! ? 1 : -1));
          return Array.from({ length: dims.bs! }, () => ({ positive: features, negative: features }));
        },
      },
    );
    const probe = (bs: number, l: number) => ProbePoint.C({ values: { bs, l } });
    const batcher = PredictiveBatcher.C({
      formula: "a*bs*l",
      coefficient_names: ["a"],
      variable_names: ["bs", "l"],
      memory_fraction: 1,
      dims_provider: PositiveDims.C({ probe_dims: sealedSet(probe(1, 4), probe(2, 8)) }),
      packer: AdaptivePacker.C({}),
    });
    // A simulated device where a micro-batch costs 1000·bs·l bytes (l: its largest record's).
    const capacity = 60_500;
    process.env.XPM_TORCH_SIMULATED_MEMORY = simulatedMemory({ capacity, formula: "a*bs*l", coefficients: { a: 1000 } });
    try {
      const config = withTrainer(demoLearner({ max_epochs: 2, steps_per_epoch: 10 }), { batcher, batch_size: 32 });
      const result = await learn(config, { workspace: workspace(), quiet: true });
      expect(batches).toHaveLength(20);
      // The greedy packing of each batch, from the records' values alone.
      const groups = batches.map((counts) => {
        let n = 0;
        let size = 0;
        let longest = 0;
        for (const l of counts) {
          const joined = Math.max(longest, l);
          if (size > 0 && 1000 * (size + 1) * joined > capacity) {
            n += 1;
            [size, longest] = [1, l];
          } else {
            [size, longest] = [size + 1, joined];
          }
        }
        return n + 1;
      });
      expect(Math.min(...groups)).toBeGreaterThan(1);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      expect(result.epochs[0]!.train["batcher/micro_batches"]).toBeCloseTo(mean(groups.slice(0, 10)), 9);
      expect(result.epochs[1]!.train["batcher/micro_batches"]).toBeCloseTo(mean(groups.slice(10)), 9);
    } finally {
      delete process.env.XPM_TORCH_SIMULATED_MEMORY;
    }
  });

  it("refuses a formula variable the built-in records do not give, naming the batcher", async () => {
    const { PredictiveBatcher, BatchDimsProvider, ProbePoint } = await import("../ts/index.js");
    const { sealedSet } = await import("../ts/config/types.js");
    const batcher = PredictiveBatcher.C({
      formula: "a*bs*h + c",
      coefficient_names: ["a", "c"],
      variable_names: ["bs", "h"],
      dims_provider: BatchDimsProvider.C({ probe_dims: sealedSet(ProbePoint.C({ values: { bs: 1, h: 2 } }), ProbePoint.C({ values: { bs: 2, h: 2 } })) }),
    });
    const config = withTrainer(demoLearner({ max_epochs: 1, steps_per_epoch: 1 }), { batcher });
    await expect(learn(config, { workspace: workspace(), quiet: true })).rejects.toThrow(/^learner\.trainer\.batcher\.variable_names: the built-in records give `bs` \(records\) and `l`/);
  });
});

describe("trainers", () => {
  it("MultipleTrainer steps once over every sub-trainer, each metric in its scope", async () => {
    const { MultipleTrainer } = await import("../ts/index.js");
    const base = demoLearner({ max_epochs: 2, steps_per_epoch: 5 });
    const sub = (seed: number, margin: number) =>
      LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(seed) }), batch_size: 32, hooks: [HingeLoss.C({ margin })] });
    const trainer = MultipleTrainer.C({ trainers: { first: sub(1, 1), second: sub(3, 2) } });
    const result = await learn(Learner.C({ ...base, trainer }), { workspace: workspace() });
    const train = result.epochs[1]!.train;
    expect(Object.keys(train).filter((k) => k.includes("pair-hinge")).sort()).toEqual(["first/pair-hinge", "second/pair-hinge"]);
    expect(result.epochs[1]!.loss).toBeCloseTo(train["first/pair-hinge"]! + train["second/pair-hinge"]!, 5);
    expect(result.epochs[1]!.step).toBe(10);
  });
});

describe("LETOR files", () => {
  /** A LETOR file of `queries` × 10 documents graded by a planted linear signal. */
  function letorFile(dir: string, name: string, queries: number, seed: number): string {
    let x = seed;
    const rand = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    const lines: string[] = [];
    for (let q = 0; q < queries; q++) {
      for (let d = 0; d < 10; d++) {
        const f = Array.from({ length: 5 }, rand);
        const score = f[0]! + 0.5 * f[1]! - 0.7 * f[3]!;
        const rel = score > 0.8 ? 3 : score > 0.2 ? 2 : score > -0.4 ? 1 : 0;
        lines.push(`${rel} qid:${q + 1} ${f.map((v, i) => `${i + 1}:${v.toFixed(4)}`).join(" ")} # doc ${d}`);
      }
    }
    const file = join(dir, name);
    writeFileSync(file, `${lines.join("\n")}\n`);
    return file;
  }

  it("trains from a LETOR file and validates on another", async () => {
    const { LetorDataset, RankingValidationListener } = await import("../ts/index.js");
    const dir = workspace();
    const train = LetorDataset.C({ id: "planted/train", path: letorFile(dir, "train.txt", 200, 1) });
    const test = LetorDataset.C({ id: "planted/test", path: letorFile(dir, "test.txt", 50, 2) });
    const base = demoLearner({ max_epochs: 4, steps_per_epoch: 50 });
    const config = Learner.C({
      ...withTrainer(base, { sampler: PairwiseSampler.C({ dataset: train }) }),
      model: MlpScorer.C({ input_dim: 5, hidden_dims: [16] }),
      listeners: [RankingValidationListener.C({ id: "test", dataset: test, metrics: { pairwise_accuracy: true, "ndcg@5": false } })],
    });
    const result = await learn(config, { workspace: dir });
    expect(result.epochs[3]!.metrics["test/pairwise_accuracy"]).toBeGreaterThan(0.85);
  });

  it("names the line and column of a malformed line", async () => {
    const { DataError, LetorDataset } = await import("../ts/index.js");
    const dir = workspace();
    const file = letorFile(dir, "broken.txt", 200, 3);
    const lines = readFileSync(file, "utf8").split("\n");
    lines[1233] = lines[1233]!.replace("qid:", "qid");
    writeFileSync(file, lines.join("\n"));
    const dataset = LetorDataset.C({ id: "broken", path: file });
    const config = Learner.C({
      ...withTrainer(demoLearner({ max_epochs: 1, steps_per_epoch: 1 }), { sampler: PairwiseSampler.C({ dataset }) }),
      model: MlpScorer.C({ input_dim: 5, hidden_dims: [4] }),
    });
    const error = await learn(config, { workspace: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    expect((error as Error).message).toMatch(new RegExp(`^${file}:1234:\\d+: `));
    expect(error).toMatchObject({ file, line: 1234 });
    expect((error as InstanceType<typeof DataError>).column).toBeGreaterThan(0);
  });
});

describe("hooks written in TypeScript", () => {
  it("run around every step and around initialisation", async () => {
    const { defineHook } = await import("../ts/index.js");
    const calls: string[] = [];
    const Steps = defineHook("tests.StepRecorder", {}, {
      kind: "step",
      before: (_self, s) => void calls.push(`before ${s.step}`),
      async after(_self, s) {
        await Promise.resolve();
        calls.push(`after ${s.step}`);
      },
    });
    const Init = defineHook("tests.InitRecorder", { label: param(int()) }, {
      kind: "initialization",
      before: (self) => void calls.push(`init before ${self.label}`),
      after: (self) => void calls.push(`init after ${self.label}`),
    });
    const config = withTrainer(demoLearner({ max_epochs: 2, steps_per_epoch: 2 }), {
      hooks: [HingeLoss.C({}), Steps.C({}), Init.C({ label: 7 })],
    });
    await learn(config, { workspace: workspace() });
    expect(calls).toEqual([
      "init before 7",
      "init after 7",
      "before 0", "after 1", "before 1", "after 2", "before 2", "after 3", "before 3", "after 4",
    ]);
  });

  it("see no step after onEpoch threw: the run stops at once", async () => {
    const { defineHook } = await import("../ts/index.js");
    const steps: number[] = [];
    const Counter = defineHook("tests.StepCounter", {}, { kind: "step", after: (_self, s) => void steps.push(s.step) });
    const config = withTrainer(demoLearner({ max_epochs: 50, steps_per_epoch: 4 }), { hooks: [HingeLoss.C({}), Counter.C({})] });
    const thrown = new TypeError("enough");
    const running = learn(config, {
      workspace: workspace(),
      quiet: true,
      onEpoch: () => {
        throw thrown;
      },
    });
    await expect(running).rejects.toBe(thrown);
    expect(steps).toEqual([1, 2, 3, 4]);
  });

  it("stop the run with their error", async () => {
    const { defineHook } = await import("../ts/index.js");
    const gaveUp = new Error("hook gave up");
    const Failing = defineHook("tests.FailingHook", {}, {
      kind: "step",
      after(_self, s) {
        if (s.step === 3) throw gaveUp;
      },
    });
    const config = withTrainer(demoLearner({ max_epochs: 2, steps_per_epoch: 2 }), { hooks: [HingeLoss.C({}), Failing.C({})] });
    await expect(learn(config, { workspace: workspace() })).rejects.toBe(gaveUp);
  });
});

describe("the data pipeline", () => {
  it("gives the same batches, hence the same losses, for num_workers 0, 1 and 2", async () => {
    const runs = await Promise.all(
      [0, 1, 2].map((num_workers) =>
        learn(withTrainer(demoLearner({ max_epochs: 3, steps_per_epoch: 30 }), { num_workers }), { workspace: workspace() }),
      ),
    );
    const losses = runs.map((r) => r.epochs.map((e) => e.loss));
    expect(losses[1]).toEqual(losses[0]);
    expect(losses[2]).toEqual(losses[0]);
    // The time the training thread waited for data is measured (0 when batches are made inline).
    expect(runs[0]!.epochs[0]!.train["data/wait_seconds"]).toBe(0);
    expect(runs[2]!.epochs[0]!.train["data/wait_seconds"]).toBeGreaterThanOrEqual(0);
  });
});
