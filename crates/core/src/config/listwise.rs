//! Listwise losses and the slate sampler (ours: the Python library has neither).

use serde::{Deserialize, Serialize};

use super::DatasetConfig;

/// Whole queries as padded lists (slates).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlateSamplerConfig {
    /// The documents and their grades.
    pub dataset: DatasetConfig,
    /// Most documents per slate: longer queries are subsampled, keeping a top-grade document.
    pub slate_length: u64,
}

/// How RankNet weighs a pair of documents with labels `y_i > y_j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum RankNetWeighting {
    /// Every pair counts 1.
    #[serde(rename = "none")]
    Uniform,
    /// `y_i − y_j`.
    #[serde(rename = "label_difference")]
    LabelDifference,
    /// `y_i² − y_j²`.
    #[serde(rename = "squared_label_difference")]
    SquaredLabelDifference,
}

/// RankNet over the pairs of each slate.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RankNetLossConfig {
    /// Weight of the loss in the trainer's sum.
    pub weight: f64,
    /// How pairs are weighed.
    pub weighting: RankNetWeighting,
}

/// The pair weights of LambdaLoss (allRank's weighing schemes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum LambdaScheme {
    /// Weight 1.
    #[serde(rename = "none")]
    Uniform,
    /// NDCG-Loss1.
    #[serde(rename = "ndcgLoss1")]
    NdcgLoss1,
    /// NDCG-Loss2.
    #[serde(rename = "ndcgLoss2")]
    NdcgLoss2,
    /// LambdaRank.
    #[serde(rename = "lambdaRank")]
    LambdaRank,
    /// NDCG-Loss2++ (`mu` weighs its NDCG-Loss2 term).
    #[serde(rename = "ndcgLoss2PP")]
    NdcgLoss2PlusPlus,
    /// `|y_i − y_j|`.
    #[serde(rename = "label_difference")]
    LabelDifference,
    /// `|y_i² − y_j²|`.
    #[serde(rename = "squared_label_difference")]
    SquaredLabelDifference,
}

/// The LambdaLoss framework.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LambdaLossConfig {
    /// Weight of the loss in the trainer's sum.
    pub weight: f64,
    /// The pair weights.
    pub weighing_scheme: LambdaScheme,
    /// Only pairs within the first `k` predicted positions count (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
    /// Scale of score differences.
    pub sigma: f64,
    /// Weight of NDCG-Loss2 in NDCG-Loss2++.
    pub mu: f64,
    /// Summed or averaged over pairs.
    pub reduction: PairReduction,
    /// The logarithm of the pair losses.
    pub reduction_log: LogBase,
}

/// How LambdaLoss reduces its pair losses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PairReduction {
    /// Summed over the pairs of the batch.
    Sum,
    /// Averaged over the pairs of the batch.
    Mean,
}

/// A logarithm's base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogBase {
    /// Base 2.
    Binary,
    /// Base e.
    Natural,
}

/// ApproxNDCG.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApproxNdcgLossConfig {
    /// Weight of the loss in the trainer's sum.
    pub weight: f64,
    /// Scale of score differences in the approximate ranks.
    pub alpha: f64,
}

/// NeuralNDCG (deterministic NeuralSort).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NeuralNdcgLossConfig {
    /// Weight of the loss in the trainer's sum.
    pub weight: f64,
    /// NeuralSort's temperature.
    pub temperature: f64,
    /// Gains `2^y − 1` (true) or `y`.
    pub powered_relevancies: bool,
    /// NDCG cut-off (the slate length when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
}
