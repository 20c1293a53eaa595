import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import {
  Adam,
  ApproxNDCGLoss,
  HingeLoss,
  LambdaLoss,
  Learner,
  ListMLELoss,
  ListNetLoss,
  LossTrainer,
  MlpScorer,
  NeuralNDCGLoss,
  PairwiseSampler,
  ParameterOptimizer,
  Random,
  RankNetLoss,
  RankingValidationListener,
  SlateSampler,
  SyntheticLtrDataset,
  LetorDataset,
  inMemoryLtrDataset,
  learn,
  type LearnerConfig,
} from "../ts/index.js";

const workspace = () => mkdtempSync(join(tmpdir(), "xpm-listwise-"));
const data = (seed: number, num_queries: number) =>
  SyntheticLtrDataset.C({ signal_seed: 77, seed, num_queries, docs_per_query: 30, num_features: 12, noise: 0.5 });

/** A small MLP trained by `trainer` for `steps` steps, validated on held-out queries. */
function learner(trainer: ReturnType<typeof LossTrainer.C>, steps: number, metrics: Record<string, boolean>, seed = 5): LearnerConfig {
  return Learner.C({
    random: Random.C({ seed }),
    model: MlpScorer.C({ input_dim: 12, hidden_dims: [16] }),
    trainer,
    max_epochs: 2,
    steps_per_epoch: steps / 2,
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 3e-3 }) })],
    listeners: [RankingValidationListener.C({ id: "heldout", dataset: data(2, 80), metrics })],
  });
}

const slates = (hooks: LossTrainerHooks, batch_size = 8) =>
  LossTrainer.C({ sampler: SlateSampler.C({ dataset: data(1, 300), slate_length: 20 }), hooks, batch_size, num_workers: 0 });
type LossTrainerHooks = Parameters<typeof LossTrainer.C>[0]["hooks"];

describe("listwise learning to rank", () => {
  it("a listwise MLP reaches at least the NDCG@10 of the pairwise one in as many steps", async () => {
    // 120 steps, where the two differ (both reach about 0.915 by 300); the mean over three
    // seeds, as one seed's margin is of the order of the spread between seeds.
    const steps = 120;
    const metrics = { "ndcg@10": true };
    const pairwise = LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1, 300) }), hooks: [HingeLoss.C({})], batch_size: 64, num_workers: 0 });
    const meanNdcg = async (trainer: ReturnType<typeof LossTrainer.C>) => {
      let total = 0;
      for (const seed of [1, 2, 3]) {
        const result = await learn(learner(trainer, steps, metrics, seed), { workspace: workspace() });
        total += result.epochs[result.epochs.length - 1]!.metrics["heldout/ndcg@10"]!;
      }
      return total / 3;
    };
    const pairs = await meanNdcg(pairwise);
    const lambda = await meanNdcg(slates([LambdaLoss.C({ weighing_scheme: "ndcgLoss2PP" })]));
    const listnet = await meanNdcg(slates([ListNetLoss.C({})]));
    expect(pairs).toBeGreaterThan(0.5);
    expect(lambda).toBeGreaterThanOrEqual(pairs);
    expect(listnet).toBeGreaterThanOrEqual(pairs);
  });

  it("trains with every listwise loss, logging each under its name, and reports every ranking metric", async () => {
    const losses = [
      ListNetLoss.C({}),
      ListMLELoss.C({ weight: 0.5 }),
      RankNetLoss.C({ weighting: "label_difference" }),
      LambdaLoss.C({ weighing_scheme: "lambdaRank", k: 10 }),
      ApproxNDCGLoss.C({}),
      NeuralNDCGLoss.C({ k: 10 }),
    ];
    const metrics = { map: true, "ndcg@5": false, "ndcg@10": false, "precision@5": false, "recall@10": false, "err@10": false, mrr: false };
    const result = await learn(learner(slates(losses, 4), 20, metrics), { workspace: workspace() });
    const [first, last] = [result.epochs[0]!, result.epochs[result.epochs.length - 1]!];
    for (const name of ["list-net", "list-mle", "list-ranknet", "list-lambdaloss", "list-approx-ndcg", "list-neural-ndcg"]) {
      expect(Number.isFinite(last.train[name]), name).toBe(true);
    }
    expect(last.train["list-approx-ndcg"]).toBeLessThan(0);
    expect(last.train["list-net"]).toBeLessThan(first.train["list-net"]!);
    for (const name of Object.keys(metrics)) {
      const value = last.metrics[`heldout/${name}`]!;
      expect(value, name).toBeGreaterThan(0);
      expect(value, name).toBeLessThanOrEqual(1);
    }
    expect(Object.keys(result.listeners.heldout as object).sort()).toEqual(Object.keys(metrics).sort());
  });

  it("reads in-memory and LETOR datasets alike: the same data trains to the same model", async () => {
    // 40 queries of 3 to 14 documents; feature 1 carries the grade, feature 2 is noise.
    const grades: number[] = [];
    const queries: number[] = [];
    const features: number[] = [];
    let state = 12345;
    const noise = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) - 0.5;
    for (let q = 0; q < 40; q++) {
      for (let d = 0; d < 3 + (q % 12); d++) {
        const grade = (q + d * 7) % 5;
        grades.push(grade);
        queries.push(q);
        features.push(Math.fround(grade + noise()), Math.fround(noise())); // exact in the LETOR text too
      }
    }
    const dir = workspace();
    const letor = join(dir, "train.txt");
    const lines = grades.map((g, i) => `${g} qid:${queries[i]} 1:${features[2 * i]} 2:${features[2 * i + 1]}`);
    writeFileSync(letor, lines.join("\n") + "\n");
    const run = async (dataset: ReturnType<typeof LetorDataset.C> | ReturnType<typeof inMemoryLtrDataset>) => {
      const trainer = LossTrainer.C({ sampler: SlateSampler.C({ dataset, slate_length: 8 }), hooks: [ListNetLoss.C({})], batch_size: 4, num_workers: 0 });
      const config = Learner.C({
        random: Random.C({ seed: 3 }),
        model: MlpScorer.C({ input_dim: 2, hidden_dims: [] }),
        trainer,
        max_epochs: 1,
        steps_per_epoch: 60,
        optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 0.05 }) })],
        listeners: [RankingValidationListener.C({ id: "train", dataset, metrics: { "ndcg@5": true } })],
      });
      const result = await learn(config, { workspace: workspace() });
      return result.epochs[0]!;
    };
    const fromFile = await run(LetorDataset.C({ id: "toy", path: letor, num_features: 2 }));
    const inMemory = await run(inMemoryLtrDataset({ id: "toy", features: new Float32Array(features), numFeatures: 2, relevance: grades, queries }));
    expect(fromFile.metrics["train/ndcg@5"]).toBeGreaterThan(0.95);
    expect(inMemory.metrics["train/ndcg@5"]).toBe(fromFile.metrics["train/ndcg@5"]);
    expect(inMemory.train["list-net"]).toBe(fromFile.train["list-net"]);
  });

  it("refuses a pairwise loss on slates, naming the trainer's hooks", async () => {
    const config = learner(slates([HingeLoss.C({})]), 2, { "ndcg@10": true });
    await expect(learn(config, { workspace: workspace() })).rejects.toThrow(/^learner\.trainer\.hooks: the loss pair-hinge cannot be computed on query slates/);
  });

  it("rejects unknown metric names and bad loss settings at .C()", () => {
    expect(() => RankingValidationListener.C({ id: "v", dataset: data(2, 5), metrics: { "precision": true } })).toThrow(/metrics\.precision: unknown metric/);
    expect(() => LambdaLoss.C({ sigma: 0 })).toThrow(/sigma/);
    expect(() => SlateSampler.C({ dataset: data(1, 5), slate_length: 1 })).toThrow(/slate_length/);
  });
});
