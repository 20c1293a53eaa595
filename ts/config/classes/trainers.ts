import { configOf, defineConfig } from "../class.js";
import { type Issue, meta, param } from "../declare.js";
import { dict, int, list } from "../types.js";
import { Module, Sampler } from "./base.js";
import { Batcher } from "./batchers.js";
import { TrainingHook, ValidationHook } from "./hooks.js";
import { ListwiseLoss } from "./listwise.js";
import { BatchwiseLoss, PairwiseLoss } from "./losses.js";

/**
 * Refuses ValidationHook subclasses: this port's validation listeners call no hooks, so such a
 * hook would silently never run.
 */
function refuseValidationHooks(hooks: readonly object[], issue: Issue): void {
  hooks.forEach((hook, i) => {
    if (ValidationHook.is(hook)) {
      issue(
        `hooks[${i}]`,
        "is a ValidationHook, which validation listeners do not call here; compute validation metrics in a listener (defineListener) instead",
      );
    }
  });
}

/** `xpm_torch.trainers.Trainer`: the generic trainer. */
export const Trainer = defineConfig(
  "xpm_torch.trainers.Trainer",
  {
    hooks: param(list(configOf(TrainingHook))).default([], { ignoreDefault: true }).help("Training hooks: the losses and structural hooks"),
    model: param(configOf(Module)).optional().help("A model other than the learner's"),
  },
  { abstract: true },
);

/** `xpm_torch.trainers.LossTrainer`: samples batches and minimises the weighted sum of its losses. */
export const LossTrainer = defineConfig(
  "xpm_torch.trainers.LossTrainer",
  {
    batcher: meta(configOf(Batcher)).factory(() => Batcher.C({})).help("How to batch samples together"),
    sampler: param(configOf(Sampler)).help("The sampler to use"),
    batch_size: param(int((s) => s.min(1))).default(16, { ignoreDefault: true }).help("Records per batch"),
    num_workers: param(int((s) => s.min(0))).default(2, { ignoreDefault: true }).help("Data loading workers"),
  },
  {
    extends: Trainer,
    validate(v, issue) {
      refuseValidationHooks(v.hooks, issue);
      if (!v.hooks.some((h) => PairwiseLoss.is(h) || BatchwiseLoss.is(h) || ListwiseLoss.is(h))) {
        issue("hooks", "a LossTrainer needs at least one loss among its hooks");
      }
    },
  },
);

/** `xpm_torch.trainers.multiple.MultipleTrainer`: one optimizer step over several trainers. */
export const MultipleTrainer = defineConfig(
  "xpm_torch.trainers.multiple.MultipleTrainer",
  { trainers: param(dict(configOf(Trainer))).help("The trainers, by scope name") },
  {
    extends: Trainer,
    validate(v, issue) {
      refuseValidationHooks(v.hooks, issue);
      if (Object.keys(v.trainers).length === 0) issue("trainers", "needs at least one trainer");
    },
  },
);
