use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tagged::{config_enum, config_types};
use super::{JsObjectConfig, NoParams, Typed};
use crate::Result;

config_enum! {
    /// How an outer batch is split into micro-batches.
    #[derive(Debug, Clone, PartialEq)]
    pub enum BatcherConfig {
        /// No micro-batching.
        Plain(NoParams) = "xpm_torch.batchers.Batcher",
        /// Shrinks the micro-batch on out-of-memory (single process only).
        PowerAdaptative(NoParams) = "xpm_torch.batchers.PowerAdaptativeBatcher",
        /// Sizes micro-batches from a fitted memory formula.
        Predictive(Box<PredictiveBatcherConfig>) = "xpm_torch.batchers.PredictiveBatcher",
    }
}

/// `xpm_torch.batchers.PredictiveBatcher`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PredictiveBatcherConfig {
    /// The cost formula as written: what identifiers hash. The core reads `formula_terms`.
    pub formula: String,
    /// The formula expanded by TypeScript, its only parser, in canonical order.
    pub formula_terms: Vec<FormulaTermConfig>,
    /// Unknown coefficients of the formula.
    pub coefficient_names: Vec<String>,
    /// Input variables of the formula.
    pub variable_names: Vec<String>,
    /// The variable that is the micro-batch size.
    pub batch_size_variable: String,
    /// Fraction of free memory the batches may use.
    pub memory_fraction: f64,
    /// Bytes kept out of the budget.
    pub extra_overhead_bytes: u64,
    /// Smallest micro-batch.
    pub min_batch_size: u64,
    /// Probe points and batch dimensions.
    pub dims_provider: DimsProviderConfig,
    /// How outer batches are packed.
    pub packer: PackerConfig,
}

config_enum! {
    /// What gives a batch's formula variables and the probe points.
    #[derive(Debug, Clone, PartialEq)]
    pub enum DimsProviderConfig {
        /// `xpm_torch.batchers.BatchDimsProvider`: the variables of the built-in records.
        Builtin(BatchDimsProviderConfig) = "xpm_torch.batchers.BatchDimsProvider",
        /// A provider written in TypeScript, whose `recordDims` and `buildProbeBatch`
        /// run on the JavaScript side.
        Js(Box<JsObjectConfig>) = "xpm_torch.js.JsObject",
    }
}

impl DimsProviderConfig {
    /// The points at which memory is probed; `path` is where the provider sits.
    ///
    /// # Errors
    /// [`Error::Config`] when a provider written in TypeScript has malformed `probe_dims`.
    pub fn probe_dims(&self, path: &str) -> Result<Vec<Typed<ProbePointConfig>>> {
        match self {
            DimsProviderConfig::Builtin(c) => Ok(c.probe_dims.clone()),
            DimsProviderConfig::Js(c) => c.param("probe_dims", path),
        }
    }
}

/// One term of an expanded cost formula: `factor × Π variable^power`, times `coefficient` when
/// there is one (otherwise a known part of the cost, not fitted).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FormulaTermConfig {
    /// The coefficient the term multiplies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coefficient: Option<String>,
    /// A whole number.
    pub factor: f64,
    /// The power of each variable of the term.
    pub powers: BTreeMap<String, u32>,
}

impl FormulaTermConfig {
    /// `coefficient × Π variable^power`, e.g. `of("a", &[("bs", 1), ("l", 2)])` for `a*bs*l**2`.
    pub fn of(coefficient: &str, powers: &[(&str, u32)]) -> Self {
        FormulaTermConfig {
            coefficient: Some(coefficient.to_string()),
            ..FormulaTermConfig::known(1.0, powers)
        }
    }

    /// The coefficient-free `factor × Π variable^power`.
    pub fn known(factor: f64, powers: &[(&str, u32)]) -> Self {
        FormulaTermConfig {
            coefficient: None,
            factor,
            powers: powers.iter().map(|(v, p)| (v.to_string(), *p)).collect(),
        }
    }
}

/// `xpm_torch.batchers.BatchDimsProvider`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BatchDimsProviderConfig {
    /// Points at which memory is probed.
    pub probe_dims: Vec<Typed<ProbePointConfig>>,
}

/// `xpm_torch.batchers.ProbePoint`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProbePointConfig {
    /// Variable name to value.
    pub values: BTreeMap<String, u64>,
}

config_types! {
    BatchDimsProviderConfig = "xpm_torch.batchers.BatchDimsProvider",
    ProbePointConfig = "xpm_torch.batchers.ProbePoint",
}

config_enum! {
    /// Micro-batch packers.
    #[derive(Debug, Clone, PartialEq)]
    pub enum PackerConfig {
        /// One micro-batch size per outer batch.
        Uniform(NoParams) = "xpm_torch.batchers.UniformPacker",
        /// Greedy packing.
        Adaptive(AdaptivePackerConfig) = "xpm_torch.batchers.AdaptivePacker",
    }
}

/// `xpm_torch.batchers.AdaptivePacker`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptivePackerConfig {
    /// Variable to sort records by, descending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<String>,
}
