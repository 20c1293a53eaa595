use serde::{Deserialize, Serialize};

use super::tagged::{config_enum, config_types};
use super::ModelConfig;
use crate::{Error, Result};

/// `xpm_torch.optim.ParameterOptimizer`: an optimizer (and scheduler) for selected parameters.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterOptimizerConfig {
    /// The optimizer.
    pub optimizer: OptimizerConfig,
    /// Learning-rate schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<SchedulerConfig>,
    /// The module whose parameters are optimized (default: the learner's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<ModelConfig>,
    /// Which parameters this optimizer claims.
    pub filter: FilterConfig,
}

config_types! {
    ParameterOptimizerConfig = "xpm_torch.optim.ParameterOptimizer",
}

config_enum! {
    /// The optimizers.
    #[derive(Debug, Clone, PartialEq)]
    pub enum OptimizerConfig {
        /// `xpm_torch.optim.SGD`.
        Sgd(SgdConfig) = "xpm_torch.optim.SGD",
        /// `xpm_torch.optim.Adam`.
        Adam(AdamConfig) = "xpm_torch.optim.Adam",
        /// `xpm_torch.optim.AdamW`.
        AdamW(AdamConfig) = "xpm_torch.optim.AdamW",
    }
}

/// Plain stochastic gradient descent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SgdConfig {
    /// Learning rate.
    pub lr: f64,
    /// L2 penalty.
    pub weight_decay: f64,
}

/// Adam (coupled decay) or AdamW (decoupled decay).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdamConfig {
    /// Learning rate.
    pub lr: f64,
    /// Weight decay.
    pub weight_decay: f64,
    /// Added to the denominator for numerical stability.
    pub eps: f64,
    /// Coefficients of the running averages of the gradient and its square.
    pub betas: (f64, f64),
}

config_enum! {
    /// Learning-rate schedules.
    #[derive(Debug, Clone, PartialEq)]
    pub enum SchedulerConfig {
        /// Linear warmup then linear decay to `min_factor`.
        LinearWithWarmup(LinearWithWarmupConfig) = "xpm_torch.schedulers.LinearWithWarmup",
        /// Linear warmup then cosine decay.
        CosineWithWarmup(CosineWithWarmupConfig) = "xpm_torch.schedulers.CosineWithWarmup",
        /// Linear warmup then linear decay to `min_factor` at `total_training_steps`.
        LinearWithWarmupAndMaxEpochs(LinearWithWarmupAndMaxEpochsConfig) = "xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs",
    }
}

/// `xpm_torch.schedulers.LinearWithWarmup`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinearWithWarmupConfig {
    /// Warmup steps.
    pub num_warmup_steps: u64,
    /// Floor of the decay.
    pub min_factor: f64,
}

/// `xpm_torch.schedulers.CosineWithWarmup`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CosineWithWarmupConfig {
    /// Warmup steps.
    pub num_warmup_steps: u64,
    /// Number of cosine cycles after warmup.
    pub num_cycles: f64,
}

/// `xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinearWithWarmupAndMaxEpochsConfig {
    /// Warmup steps.
    pub num_warmup_steps: u64,
    /// Floor of the decay.
    pub min_factor: f64,
    /// Steps the decay spans (default: the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_training_steps: Option<u64>,
}

config_enum! {
    /// Parameter selection.
    #[derive(Debug, Clone, PartialEq)]
    pub enum FilterConfig {
        /// Accepts every parameter.
        All(NoParams) = "xpm_torch.optim.ParameterFilter",
        /// Regular expressions searched in parameter names.
        Regex(RegexFilterConfig) = "xpm_torch.optim.RegexParameterFilter",
    }
}

/// A configuration without parameters.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// `xpm_torch.optim.RegexParameterFilter`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegexFilterConfig {
    /// Accept names matching any of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<Vec<String>>,
    /// Reject names matching any of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excludes: Option<Vec<String>>,
}

impl OptimizerConfig {
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        let (lr, decay, adam) = match self {
            OptimizerConfig::Sgd(c) => (c.lr, c.weight_decay, None),
            OptimizerConfig::Adam(c) | OptimizerConfig::AdamW(c) => (c.lr, c.weight_decay, Some(c)),
        };
        if !(lr.is_finite() && lr > 0.0) {
            return Err(Error::config(
                format!("{path}.lr"),
                "must be a finite number > 0",
            ));
        }
        if !(decay.is_finite() && decay >= 0.0) {
            return Err(Error::config(
                format!("{path}.weight_decay"),
                "must be a finite number >= 0",
            ));
        }
        if let Some(adam) = adam {
            for (i, b) in [adam.betas.0, adam.betas.1].into_iter().enumerate() {
                if !(0.0..1.0).contains(&b) {
                    return Err(Error::config(
                        format!("{path}.betas[{i}]"),
                        "must be in [0, 1)",
                    ));
                }
            }
            if !(adam.eps.is_finite() && adam.eps > 0.0) {
                return Err(Error::config(
                    format!("{path}.eps"),
                    "must be a finite number > 0",
                ));
            }
        }
        Ok(())
    }
}
