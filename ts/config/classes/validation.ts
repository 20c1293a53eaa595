import { configOf, defineConfig } from "../class.js";
import { generated, meta, param } from "../declare.js";
import { int, str } from "../types.js";
import { SampleIterator } from "./base.js";
import { Batcher, PredictiveBatcher } from "./batchers.js";
import { LearnerListener } from "./learner.js";
import { LossTrainer } from "./trainers.js";

/** `xpm_torch.validation.ValidationSettings`: identifies a validation checkpoint. */
export const ValidationSettings = defineConfig("xpm_torch.validation.ValidationSettings", {
  listener: param(configOf(LearnerListener)).optional().help("The listener"),
  key: param(str((s) => s.min(1))).help("The metric key for this validation checkpoint"),
});

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
