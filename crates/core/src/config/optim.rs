use super::tagged::config_enum;
use serde::Deserialize;

use crate::{Error, Result};

/// `xpm_torch.optim.ParameterOptimizer`: an optimizer over (for now) all the model's parameters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterOptimizerConfig {
    /// Type id.
    #[serde(rename = "__xpmtype__", default)]
    pub xpm_type: Option<String>,
    /// The optimizer.
    pub optimizer: OptimizerConfig,
}

config_enum! {
/// The optimizers.
#[derive(Debug, Clone, PartialEq)]
pub enum OptimizerConfig {
    /// `xpm_torch.optim.Adam`.
    Adam(AdamConfig) = "xpm_torch.optim.Adam",
}
}

/// Adam with coupled L2 weight decay (PyTorch's `torch.optim.Adam`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdamConfig {
    /// Learning rate.
    #[serde(default = "default_lr")]
    pub lr: f64,
    /// Coefficients of the running averages of the gradient and its square.
    #[serde(default = "default_betas")]
    pub betas: (f64, f64),
    /// Added to the denominator for numerical stability.
    #[serde(default = "default_eps")]
    pub eps: f64,
    /// L2 penalty added to the gradient.
    #[serde(default)]
    pub weight_decay: f64,
}

fn default_lr() -> f64 {
    1e-3
}
fn default_betas() -> (f64, f64) {
    (0.9, 0.999)
}
fn default_eps() -> f64 {
    1e-8
}

impl ParameterOptimizerConfig {
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        let OptimizerConfig::Adam(adam) = &self.optimizer;
        let path = format!("{path}.optimizer");
        if !(adam.lr.is_finite() && adam.lr > 0.0) {
            return Err(Error::config(
                format!("{path}.lr"),
                "must be a finite number > 0",
            ));
        }
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
        if !(adam.weight_decay.is_finite() && adam.weight_decay >= 0.0) {
            return Err(Error::config(
                format!("{path}.weight_decay"),
                "must be a finite number >= 0",
            ));
        }
        Ok(())
    }
}
