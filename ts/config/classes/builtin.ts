// Classes of this package with no Python counterpart: the models, data and listeners that the
// Rust core implements. Their type ids live under `xpm_torch` so that identifiers stay stable.
import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { float, int, list } from "../types.js";
import { Module, SampleIterator, Sampler } from "./base.js";
import { LearnerListener } from "./learner.js";

/** A multi-layer perceptron scorer: features to one score, ReLU between layers. */
export const MlpScorer = defineConfig(
  "xpm_torch.models.MlpScorer",
  {
    input_dim: param(int((s) => s.min(1))),
    hidden_dims: param(list(int((s) => s.min(1)))).default([], { ignoreDefault: true }),
  },
  { extends: Module },
);

/** Documents with features x ~ N(0, I) graded 0–4 by `w·x + noise` for a hidden unit vector w. */
export const SyntheticLtrDataset = defineConfig(
  "xpm_torch.data.SyntheticLtrDataset",
  {
    signal_seed: param(int((s) => s.min(0))).help("Seed of the hidden weight: datasets sharing it share the signal"),
    seed: param(int((s) => s.min(0))).help("Seed of the documents and noise"),
    num_queries: param(int((s) => s.min(1))),
    docs_per_query: param(int((s) => s.min(1))),
    num_features: param(int((s) => s.min(1))),
    noise: param(float((s) => s.min(0))).default(0.5, { ignoreDefault: true }),
  },
  { extends: SampleIterator },
);

/** Preference pairs (a more and a less relevant document of one query) from a dataset. */
export const PairwiseSampler = defineConfig(
  "xpm_torch.samplers.PairwiseSampler",
  { dataset: param(configOf(SyntheticLtrDataset)) },
  { extends: Sampler },
);

/** Reports the fraction of held-out preference pairs the model orders correctly. */
export const PairwiseAccuracyListener = defineConfig(
  "xpm_torch.listeners.PairwiseAccuracyListener",
  { dataset: param(configOf(SyntheticLtrDataset)) },
  { extends: LearnerListener },
);
