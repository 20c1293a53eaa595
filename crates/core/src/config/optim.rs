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
        /// `xpm_torch.optim.Adafactor`.
        Adafactor(AdafactorConfig) = "xpm_torch.optim.Adafactor",
    }
}

/// Adafactor as the `transformers` library implements it: factored second moments for
/// matrices, relative step sizes scaled by the parameters' root mean square.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdafactorConfig {
    /// The external learning rate (only without `relative_step`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// L2 penalty, scaled by the step size.
    pub weight_decay: f64,
    /// A step size of `min(1e-2, 1/√t)` at the parameter's step `t` instead of `lr`.
    pub relative_step: bool,
    /// Added to the squared gradients, and the floor of a parameter's scale.
    pub eps: (f64, f64),
    /// Updates whose root mean square exceeds this are scaled down to it.
    pub clip_threshold: f64,
    /// The second moments average with weight `1 − t^decay_rate` on the past.
    pub decay_rate: f64,
    /// Coefficient of a running average of the updates (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta1: Option<f64>,
    /// Step sizes multiplied by the parameter's root mean square (at least `eps.1`).
    pub scale_parameter: bool,
    /// With `relative_step`: a step size of `min(1e-6·t, 1/√t)`.
    pub warmup_init: bool,
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
    /// The cross-field rules of the optimizers (declared in TypeScript too, with the same
    /// messages; the value rules of single fields come from the schema, see `rules.rs`).
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match self {
            OptimizerConfig::Adafactor(c) => c.validate(path),
            _ => Ok(()),
        }
    }
}

impl AdafactorConfig {
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match (self.lr, self.relative_step) {
            (Some(_), true) => {
                return Err(Error::config(
                    format!("{path}.lr"),
                    "cannot be combined with relative_step: true; set relative_step: false to use a fixed lr",
                ))
            }
            (None, false) => {
                return Err(Error::config(
                    format!("{path}.lr"),
                    "is needed when relative_step is false",
                ))
            }
            _ => {}
        }
        if self.warmup_init && !self.relative_step {
            return Err(Error::config(
                format!("{path}.warmup_init"),
                "needs relative_step: true",
            ));
        }
        Ok(())
    }
}
