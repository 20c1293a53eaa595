use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tagged::config_enum;
use super::SlateSamplerConfig;

config_enum! {
    /// Samplers feeding a trainer.
    #[derive(Debug, Clone, PartialEq)]
    pub enum SamplerConfig {
        /// `xpm_torch.samplers.PairwiseSampler`.
        Pairwise(PairwiseSamplerConfig) = "xpm_torch.samplers.PairwiseSampler",
        /// `xpm_torch.samplers.PointwiseSampler`.
        Pointwise(PairwiseSamplerConfig) = "xpm_torch.samplers.PointwiseSampler",
        /// `xpm_torch.samplers.BatchwiseSampler`.
        Batchwise(BatchwiseSamplerConfig) = "xpm_torch.samplers.BatchwiseSampler",
        /// `xpm_torch.samplers.SlateSampler`.
        Slate(SlateSamplerConfig) = "xpm_torch.samplers.SlateSampler",
        /// `xpm_torch.samplers.TokenTripletSampler`.
        TokenTriplets(TokenTripletSamplerConfig) = "xpm_torch.samplers.TokenTripletSampler",
        /// `xpm_torch.samplers.TextTripletSampler`.
        TextTriplets(super::TextTripletSamplerConfig) = "xpm_torch.samplers.TextTripletSampler",
        /// `xpm_torch.samplers.TextPairSampler`.
        TextPairs(super::TextPairSamplerConfig) = "xpm_torch.samplers.TextPairSampler",
        /// `xpm_torch.samplers.IdTripletSampler`.
        IdTriplets(Box<super::IdTripletSamplerConfig>) = "xpm_torch.samplers.IdTripletSampler",
        /// A sampler written in TypeScript (`kind`: its record kind).
        Js(super::JsObjectConfig) = "xpm_torch.js.JsObject",
    }
}

/// Groups of documents per query (batchwise records).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BatchwiseSamplerConfig {
    /// The documents and their grades.
    pub dataset: DatasetConfig,
    /// Documents per group: one of the query's best, then others.
    pub group_size: u64,
}

/// (query, positive, negative) token-id triplets.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TokenTripletSamplerConfig {
    /// Where the triplets come from.
    pub triplets: TripletsConfig,
}

config_enum! {
    /// Sources of token-id triplets.
    #[derive(Debug, Clone, PartialEq)]
    pub enum TripletsConfig {
        /// `xpm_torch.data.TokenTripletFile`.
        File(TripletFileConfig) = "xpm_torch.data.TokenTripletFile",
        /// `xpm_torch.data.SyntheticTokenTriplets`.
        Synthetic(SyntheticTripletsConfig) = "xpm_torch.data.SyntheticTokenTriplets",
    }
}

/// A TSV or JSONL file of token-id triplets.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TripletFileConfig {
    /// What the data is (its identity: paths never enter identifiers).
    pub id: String,
    /// The file.
    pub path: String,
    /// `tsv` or `jsonl`; when absent, the file's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// Token-id triplets with a planted signal and variable lengths.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticTripletsConfig {
    /// Seed of the triplets.
    pub seed: u64,
    /// Number of triplets.
    pub num_triplets: u64,
    /// Token ids are below this (0 is padding).
    pub vocab_size: u64,
    /// Longest query.
    pub query_length: u64,
    /// Shortest document.
    pub min_length: u64,
    /// Longest document.
    pub max_length: u64,
}

impl SyntheticTripletsConfig {
    /// The cross-field rules of the sizes (declared in TypeScript too, with the same messages).
    pub(crate) fn validate(&self, path: &str) -> crate::Result<()> {
        let field = |name: &str, message: &str| {
            Err(crate::Error::config(format!("{path}.{name}"), message))
        };
        if self.query_length * 4 > self.vocab_size {
            return field("query_length", "must be at most vocab_size / 4");
        }
        if self.min_length < self.query_length {
            return field("min_length", "must be at least query_length");
        }
        if self.max_length < self.min_length {
            return field("max_length", "must be at least min_length");
        }
        Ok(())
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
        /// `xpm_torch.data.LetorDataset`.
        Letor(LetorDatasetConfig) = "xpm_torch.data.LetorDataset",
        /// A dataset held in TypedArrays on the JavaScript side.
        Js(super::JsObjectConfig) = "xpm_torch.js.JsObject",
        /// `xpm_torch.data.TextRerankingDataset`.
        TextReranking(Box<super::TextRerankingConfig>) = "xpm_torch.data.TextRerankingDataset",
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

/// `xpm_torch.listeners.RankingValidationListener`: ranking metrics on held-out queries.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RankingValidationConfig {
    /// Unique id; metrics are logged as `<id>/<metric>`.
    pub id: String,
    /// The held-out data.
    pub dataset: DatasetConfig,
    /// Metric name to whether its best model is kept (`pairwise_accuracy`, `mrr`, `ndcg`, `ndcg@k`).
    pub metrics: BTreeMap<String, bool>,
    /// Epochs before best models are tracked (-1: from the start).
    pub warmup: i64,
    /// Epochs between validations.
    pub validation_interval: u64,
    /// Epochs without improvement of a kept metric before stopping (0: never).
    pub early_stop: u64,
    /// Best models (generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bestpath: Option<String>,
    /// Metric values per epoch (generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
}

/// A learning-to-rank file in the SVMlight/LETOR format.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LetorDatasetConfig {
    /// What the data is (its identity: paths never enter identifiers).
    pub id: String,
    /// The file.
    pub path: String,
    /// Feature dimension; when absent, the largest index in the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_features: Option<u64>,
}
