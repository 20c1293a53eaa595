use serde::{Deserialize, Serialize};

use super::tagged::config_enum;

config_enum! {
    /// Samplers feeding a trainer.
    #[derive(Debug, Clone, PartialEq)]
    pub enum SamplerConfig {
        /// `xpm_torch.samplers.PairwiseSampler`.
        Pairwise(PairwiseSamplerConfig) = "xpm_torch.samplers.PairwiseSampler",
    }
}

/// Yields (query, preferred document, other document) triplets from graded relevance.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PairwiseSamplerConfig {
    /// The documents and their grades.
    pub dataset: DatasetConfig,
}

config_enum! {
    /// Learning-to-rank datasets (also the `SampleIterator`s of validation).
    #[derive(Debug, Clone, PartialEq)]
    pub enum DatasetConfig {
        /// `xpm_torch.data.SyntheticLtrDataset`.
        Synthetic(SyntheticLtrConfig) = "xpm_torch.data.SyntheticLtrDataset",
    }
}

/// Documents with features `x ~ N(0, I)` graded 0–4 by `w·x + noise` for a hidden unit vector `w`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticLtrConfig {
    /// Seed of the hidden weight `w`: datasets sharing it share the signal.
    pub signal_seed: u64,
    /// Seed of the documents and noise.
    pub seed: u64,
    /// Number of queries.
    pub num_queries: u64,
    /// Documents per query.
    pub docs_per_query: u64,
    /// Feature dimension.
    pub num_features: u64,
    /// Standard deviation of the noise added to `w·x` before grading.
    pub noise: f64,
}

/// Measures the fraction of preference pairs the model orders correctly.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PairwiseAccuracyListenerConfig {
    /// Unique id; metrics are logged as `<id>/accuracy`.
    pub id: String,
    /// The held-out data.
    pub dataset: DatasetConfig,
}
