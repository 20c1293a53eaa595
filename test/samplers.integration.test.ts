import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import {
  HingeLoss,
  InterruptedError,
  Learner,
  LossTrainer,
  PairwiseSampler,
  PointwiseCrossEntropyLoss,
  RankingValidationListener,
  defineSampler,
  demoLearner,
  inMemoryLtrDataset,
  learn,
  type LearnerConfig,
} from "../ts/index.js";
import { int } from "../ts/config/types.js";
import { param } from "../ts/config/declare.js";

const workspace = () => mkdtempSync(join(tmpdir(), "xpm-samplers-"));
const FEATURES = 8;

/** A small deterministic generator (xorshift) so that TypeScript data depends on the seed alone. */
function generator(seed: number): () => number {
  let s = (seed * 2654435761) >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

const normal = (rand: () => number) => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
const SIGNAL = Array.from({ length: FEATURES }, (_, i) => (i % 3) - 1 + 0.5 * (i % 2));
const score = (x: ArrayLike<number>) => SIGNAL.reduce((s, w, i) => s + w * x[i]!, 0);

/** Queries of documents graded 0–4 by the planted signal, in TypedArrays. */
function heldOut(seed: number, queries: number, docs: number) {
  const rand = generator(seed);
  const features = new Float32Array(queries * docs * FEATURES).map(() => normal(rand));
  const relevance = Array.from({ length: queries * docs }, (_, d) => {
    const s = score(features.subarray(d * FEATURES, (d + 1) * FEATURES)) / 2;
    return Math.max(0, Math.min(4, Math.round(s + 2)));
  });
  const queryIds = Array.from({ length: queries * docs }, (_, d) => Math.floor(d / docs));
  return inMemoryLtrDataset({ id: `ts-heldout-${seed}`, features, numFeatures: FEATURES, relevance, queries: queryIds });
}

/** Pairs of random vectors, the one the signal prefers first: a pass of `size` pairs. */
const PlantedPairs = defineSampler(
  "tests.PlantedPairs",
  { size: param(int((s) => s.min(1))) },
  {
    kind: "pairwise",
    async *records(self, { seed, pass }) {
      const rand = generator(seed * 1000 + pass + 1);
      for (let i = 0; i < self.size; i++) {
        const a = Array.from({ length: FEATURES }, () => normal(rand));
        const b = Array.from({ length: FEATURES }, () => normal(rand));
        yield score(a) >= score(b) ? { positive: a, negative: b } : { positive: b, negative: a };
      }
    },
  },
);

/** Documents graded by the signal, one by one. */
const PlantedDocuments = defineSampler(
  "tests.PlantedDocuments",
  {},
  {
    kind: "pointwise",
    *records(_self, { seed, pass }) {
      const rand = generator(seed + 77 * pass);
      for (let i = 0; i < 5000; i++) {
        const features = Array.from({ length: FEATURES }, () => normal(rand));
        yield { features, relevance: score(features) > 0 ? 1 : 0 };
      }
    },
  },
);

function learner(sampler: object, options: { num_workers?: number; max_epochs?: number; hooks?: object[] } = {}): LearnerConfig {
  const base = demoLearner({ max_epochs: options.max_epochs ?? 4, steps_per_epoch: 50, num_features: FEATURES });
  return Learner.C({
    ...base,
    trainer: LossTrainer.C({
      sampler: sampler as never,
      batch_size: 64,
      num_workers: options.num_workers ?? 0,
      hooks: (options.hooks ?? [HingeLoss.C({})]) as never,
    }),
    listeners: [RankingValidationListener.C({ id: "heldout", dataset: heldOut(5, 40, 10), metrics: { pairwise_accuracy: true } })],
  });
}

describe("samplers written in TypeScript", () => {
  it("train the model from an async generator of pairs, validated on TypedArrays", async () => {
    const result = await learn(learner(PlantedPairs.C({ size: 3000 })), { workspace: workspace() });
    const accuracy = result.epochs.map((e) => e.metrics["heldout/pairwise_accuracy"]!);
    expect(accuracy[accuracy.length - 1]).toBeGreaterThanOrEqual(0.85);
    expect(result.epochs[3]!.loss).toBeLessThan(result.epochs[0]!.loss);
  });

  it("train from pointwise records of a plain generator", async () => {
    const config = learner(PlantedDocuments.C({}), { hooks: [PointwiseCrossEntropyLoss.C({})] });
    const result = await learn(config, { workspace: workspace() });
    expect(result.epochs[3]!.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.8);
  });

  it("give the same batches whatever num_workers is", async () => {
    const runs = await Promise.all(
      [0, 2].map((num_workers) => learn(learner(PlantedPairs.C({ size: 700 }), { num_workers, max_epochs: 2 }), { workspace: workspace() })),
    );
    expect(runs[1]!.epochs.map((e) => e.loss)).toEqual(runs[0]!.epochs.map((e) => e.loss));
  });

  it("resume exactly: the generator is replayed and the consumed records skipped", async () => {
    const config = () => learner(PlantedPairs.C({ size: 700 }), { max_epochs: 4 });
    const uninterrupted = await learn(config(), { workspace: workspace() });
    const ws = workspace();
    const abort = new AbortController();
    const stopped = learn(config(), { workspace: ws, handleSignals: false, signal: abort.signal, onEpoch: (e) => e.epoch === 2 && abort.abort() });
    await expect(stopped).rejects.toBeInstanceOf(InterruptedError);
    const resumed = await learn(config(), { workspace: ws });
    expect(resumed.resumed_from).not.toBeNull();
    expect(resumed.epochs.map((e) => e.loss)).toEqual(uninterrupted.epochs.map((e) => e.loss));
    expect(readFileSync(resumed.learned_model!).equals(readFileSync(uninterrupted.learned_model!))).toBe(true);
  });

  it("report a throwing generator as the run's error", async () => {
    const noData = new Error("no data today");
    const Broken = defineSampler("tests.BrokenSampler", {}, {
      kind: "pairwise",
      // eslint-disable-next-line require-yield
      *records() {
        throw noData;
      },
    });
    await expect(learn(learner(Broken.C({})), { workspace: workspace() })).rejects.toBe(noData);
  });
});

describe("in-memory datasets", () => {
  it("train a PairwiseSampler on TypedArrays", async () => {
    const config = learner(PairwiseSampler.C({ dataset: heldOut(1, 200, 10) }));
    const result = await learn(config, { workspace: workspace() });
    expect(result.epochs[3]!.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.85);
  });

  it("refuse inconsistent arrays when created, naming what is wrong", () => {
    const features = new Float32Array(10);
    expect(() => inMemoryLtrDataset({ id: "x", features, numFeatures: 3, relevance: [0, 1, 2], queries: [0, 0, 0] })).toThrow(/10 features for 3 documents of 3 features/);
    expect(() => inMemoryLtrDataset({ id: "x", features: new Float32Array(3), numFeatures: 1, relevance: [0, 1, 2], queries: [0, 1, 0] })).toThrow(/query 0 are not contiguous/);
    expect(() => inMemoryLtrDataset({ id: "x", features: new Float32Array(2), numFeatures: 1, relevance: [0, 1.5], queries: [0, 0] })).toThrow(/relevance\[1\] = 1.5/);
  });
});
