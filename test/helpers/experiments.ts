// Small Learners for experiment tests: a few steps each, so a plan of several jobs stays short.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import {
  Adam,
  HingeLoss,
  Learner,
  LossTrainer,
  MlpScorer,
  PairwiseSampler,
  ParameterOptimizer,
  Random,
  RankingValidationListener,
  SyntheticLtrDataset,
  setInitTasks,
  type LearnerConfig,
  type ModuleLoaderConfig,
} from "../../ts/index.js";
import { waitFor } from "./wait.js";

const data = (seed: number, num_queries: number) =>
  SyntheticLtrDataset.C({ signal_seed: 3, seed, num_queries, docs_per_query: 10, num_features: 8 });

/** A Learner of `max_epochs` × `steps` steps at learning rate `lr`, validated on `ndcg@10` (kept). */
export function smallLearner(lr: number, seed = 0, max_epochs = 2, steps = 20): LearnerConfig {
  return Learner.C({
    random: Random.C({ seed }),
    model: MlpScorer.C({ input_dim: 8, hidden_dims: [16] }),
    trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1, 60) }), batch_size: 32, num_workers: 0, hooks: [HingeLoss.C({ margin: 1 })] }),
    max_epochs,
    steps_per_epoch: steps,
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr }) })],
    listeners: [RankingValidationListener.C({ id: "val", dataset: data(2, 20), metrics: { "ndcg@10": true } })],
  });
}

/** A second stage: the same model, initialised from `from`. */
export function finetuneFrom(from: ModuleLoaderConfig, lr = 1e-3): LearnerConfig {
  return setInitTasks(smallLearner(lr, 1, 1), [from]);
}

/** The processes the scheduler started for a job (its launch log). */
export function launchesOf(jobDir: string): { pid?: number; id?: string }[] {
  const file = join(jobDir, ".experimaestro", "launches.jsonl");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { process: { pid?: number; id?: string } }).process);
}

/** The length of the job's standard error so far (progress after it is this run's). */
export function errLength(jobDir: string): number {
  const file = join(jobDir, "learner.err");
  return existsSync(file) ? readFileSync(file, "utf8").length : 0;
}

/**
 * Resolves once the job prints a progress line past `since` (an {@link errLength}): it trains, its
 * signal handlers are in place, and a checkpoint it writes on the way out has steps in it.
 * Rejects after `timeoutMs`, naming the job.
 */
export async function trainingStarted(jobDir: string, since = 0, timeoutMs = 120_000): Promise<void> {
  const file = join(jobDir, "learner.err");
  await waitFor(() => /step \d+\//.test(existsSync(file) ? readFileSync(file, "utf8").slice(since) : ""), `a progress line of ${file}`, timeoutMs, 100);
}
