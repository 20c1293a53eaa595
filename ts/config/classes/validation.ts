// Validation: the settings that name a listener's best model, and the listeners that validate
// as the model trains (ranking metrics on held-out queries, or the trainer's own loss).
import { configOf, defineConfig } from "../class.js";
import { generated, meta, param } from "../declare.js";
import { bool, dict, int, str } from "../types.js";
import { SampleIterator } from "./base.js";
import { Batcher, PredictiveBatcher } from "./batchers.js";
import { rankedDataset } from "./dataset-unions.js";
import { LearnerListener } from "./learner.js";
import { LossTrainer } from "./trainers.js";

/** `xpm_torch.validation.ValidationSettings`: identifies a validation checkpoint. */
export const ValidationSettings = defineConfig("xpm_torch.validation.ValidationSettings", {
  listener: param(configOf(LearnerListener)).optional().help("The listener"),
  key: param(str((s) => s.min(1))).help("The metric key for this validation checkpoint"),
});

/** Metric names a {@link RankingValidationListener} understands. */
export const RANK_METRIC = /^(pairwise_accuracy|map|(mrr|ndcg|err)(@[1-9][0-9]*)?|(precision|recall)@[1-9][0-9]*)$/;

/**
 * Ranking metrics on held-out queries — `pairwise_accuracy`, `mrr`, `map`, `ndcg`, `ndcg@k`,
 * `err`, `err@k`, `precision@k`, `recall@k`; higher is better. A query without a relevant document
 * (grade > 0) is left out of every metric but pairwise accuracy. `metrics` maps each metric to
 * whether its best model is kept under `bestpath`.
 */
export const RankingValidationListener = defineConfig(
  "xpm_torch.listeners.RankingValidationListener",
  {
    dataset: param(rankedDataset()).help("The held-out data"),
    metrics: param(dict(bool()))
      .default({ "ndcg@10": true, mrr: false, pairwise_accuracy: false }, { ignoreDefault: true })
      .help("Metric name to whether its best model is kept under bestpath"),
    warmup: param(int((s) => s.min(-1))).default(-1, { ignoreDefault: true }).help("Epochs before best models are tracked (-1: from the start)"),
    validation_interval: param(int((s) => s.min(1))).default(1, { ignoreDefault: true }).help("Epochs between validations"),
    early_stop: param(int((s) => s.min(0))).default(0, { ignoreDefault: true }).help("Epochs without improvement of a kept metric before stopping (0: never)"),
    bestpath: generated("best").help("Best models (generated)"),
    info: generated("info.json").help("Metric values per epoch (generated)"),
  },
  {
    extends: LearnerListener,
    validate(v, issue) {
      const names = Object.keys(v.metrics);
      if (names.length === 0) issue("metrics", "needs at least one metric");
      for (const name of names) {
        if (!RANK_METRIC.test(name)) issue(`metrics.${name}`, "unknown metric (use pairwise_accuracy, mrr, mrr@k, map, ndcg, ndcg@k, err, err@k, precision@k or recall@k)");
      }
      if (v.early_stop % v.validation_interval !== 0) {
        issue("early_stop", `must be a multiple of validation_interval (${v.validation_interval}), or 0`);
      }
    },
  },
);

/** `xpm_torch.trainers.validation.TrainerValidationLoss`: the trainer's loss on held-out data. */
export const TrainerValidationLoss = defineConfig(
  "xpm_torch.trainers.validation.TrainerValidationLoss",
  {
    data: param(configOf(SampleIterator)).help("The dataset to use"),
    batcher: meta(configOf(Batcher)).factory(() => Batcher.C({})).help("How to batch samples together"),
    batch_size: meta(int((s) => s.min(1))).help("Batch size"),
    trainer: param(configOf(LossTrainer)).help("The trainer"),
    warmup: param(int((s) => s.min(-1))).default(-1, { ignoreDefault: true }).help("Epochs before best models are tracked (-1: from the start)"),
    bestpath: generated("best").help("Best models (generated)"),
    info: generated("info.json").help("Metric values per epoch (generated)"),
    validation_interval: param(int((s) => s.min(1))).default(1, { ignoreDefault: true }).help("Epochs between validations"),
    early_stop: param(int((s) => s.min(0))).default(0, { ignoreDefault: true }).help("Epochs without improvement before stopping (0: never)"),
  },
  {
    extends: LearnerListener,
    validate(v, issue) {
      if (PredictiveBatcher.is(v.batcher)) {
        issue(
          "batcher",
          "the PredictiveBatcher is for training (its memory formula is fitted on forward and backward passes); validate with a Batcher, or a PowerAdaptativeBatcher to shrink the validation batches when they run out of memory",
        );
      }
      if (v.early_stop % v.validation_interval !== 0) {
        issue("early_stop", `must be a multiple of validation_interval (${v.validation_interval}), or 0`);
      }
    },
  },
);
