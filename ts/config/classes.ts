import { z } from "zod";

import { configOf, count, defineConfig, finite, positive } from "./base.js";

/** `xpm_torch.base.Random`: the seed of every random choice of a run. */
export const Random = defineConfig("Random", "xpm_torch.base.Random", {
  seed: count().default(0),
});

/** Documents with features x ~ N(0, I) graded 0–4 by `w·x + noise` for a hidden unit vector w. */
export const SyntheticLtrDataset = defineConfig("SyntheticLtrDataset", "xpm_torch.data.SyntheticLtrDataset", {
  /** Seed of the hidden weight: datasets sharing it share the signal (train vs held-out). */
  signal_seed: count(),
  /** Seed of the documents and noise. */
  seed: count(),
  num_queries: positive(),
  docs_per_query: positive(),
  num_features: positive(),
  noise: finite().min(0).default(0.5),
});

/** Preference pairs (a more relevant and a less relevant document of one query). */
export const PairwiseSampler = defineConfig("PairwiseSampler", "xpm_torch.samplers.PairwiseSampler", {
  dataset: configOf(SyntheticLtrDataset),
});

/** `xpm_torch.losses.pairwise.HingeLoss`: `w/N Σ max(0, m − (s⁺ − s⁻))`. */
export const HingeLoss = defineConfig("HingeLoss", "xpm_torch.losses.pairwise.HingeLoss", {
  weight: finite().default(1.0),
  margin: finite().default(1.0),
});

/** `xpm_torch.trainers.LossTrainer`: samples batches and minimises the weighted sum of losses. */
export const LossTrainer = defineConfig("LossTrainer", "xpm_torch.trainers.LossTrainer", {
  sampler: configOf(PairwiseSampler),
  batch_size: positive().default(16),
  hooks: z.array(configOf(HingeLoss)).min(1, "a LossTrainer needs at least one loss"),
});

/** A multi-layer perceptron scorer: features to one score, ReLU between layers. */
export const MlpScorer = defineConfig("MlpScorer", "xpm_torch.models.MlpScorer", {
  input_dim: positive(),
  hidden_dims: z.array(positive()).default([]),
});

/** `xpm_torch.optim.Adam` (coupled L2 weight decay, as `torch.optim.Adam`). */
export const Adam = defineConfig("Adam", "xpm_torch.optim.Adam", {
  lr: finite().gt(0).default(1e-3),
  betas: z.tuple([finite().min(0).lt(1), finite().min(0).lt(1)]).default([0.9, 0.999]),
  eps: finite().gt(0).default(1e-8),
  weight_decay: finite().min(0).default(0),
});

/** `xpm_torch.optim.ParameterOptimizer`: an optimizer for the model's parameters. */
export const ParameterOptimizer = defineConfig("ParameterOptimizer", "xpm_torch.optim.ParameterOptimizer", {
  optimizer: configOf(Adam),
});

/** Reports the fraction of held-out preference pairs the model orders correctly. */
export const PairwiseAccuracyListener = defineConfig(
  "PairwiseAccuracyListener",
  "xpm_torch.listeners.PairwiseAccuracyListener",
  {
    id: z.string().min(1),
    dataset: configOf(SyntheticLtrDataset),
  },
);

/** `xpm_torch.learner.Learner`: the training task. */
export const Learner = defineConfig("Learner", "xpm_torch.learner.Learner", {
  random: configOf(Random),
  model: configOf(MlpScorer),
  trainer: configOf(LossTrainer),
  max_epochs: positive().default(1000),
  steps_per_epoch: positive().default(128),
  optimizers: z.array(configOf(ParameterOptimizer)).min(1, "at least one optimizer is needed"),
  listeners: z
    .array(configOf(PairwiseAccuracyListener))
    .refine((ls) => new Set(ls.map((l) => l.id)).size === ls.length, "listener ids must be unique"),
});
