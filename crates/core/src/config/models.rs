use serde::{Deserialize, Serialize};

use super::tagged::config_enum;
use crate::{Error, Result};

config_enum! {
    /// The models.
    #[derive(Debug, Clone, PartialEq)]
    pub enum ModelConfig {
        /// `xpm_torch.models.MlpScorer`.
        Mlp(MlpScorerConfig) = "xpm_torch.models.MlpScorer",
    }
}

/// A multi-layer perceptron mapping a feature vector to one relevance score.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MlpScorerConfig {
    /// Number of input features.
    pub input_dim: i64,
    /// Widths of the hidden layers (ReLU between layers); the output layer has width 1.
    pub hidden_dims: Vec<i64>,
}

impl ModelConfig {
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        let ModelConfig::Mlp(mlp) = self;
        if mlp.input_dim < 1 {
            return Err(Error::config(
                format!("{path}.input_dim"),
                "must be at least 1",
            ));
        }
        for (i, d) in mlp.hidden_dims.iter().enumerate() {
            if *d < 1 {
                return Err(Error::config(
                    format!("{path}.hidden_dims[{i}]"),
                    "must be at least 1",
                ));
            }
        }
        Ok(())
    }
}
