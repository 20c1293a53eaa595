use super::tagged::config_enum;
use serde::Deserialize;

use super::{LossConfig, ModelConfig, ParameterOptimizerConfig, SamplerConfig};
use crate::{Error, Result};

/// `xpm_torch.learner.Learner`: the training task.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnerConfig {
    /// Type id of the task.
    #[serde(rename = "__xpmtype__", default)]
    pub xpm_type: Option<String>,
    /// Seeds every random choice of the run.
    pub random: RandomConfig,
    /// The model to learn.
    pub model: ModelConfig,
    /// How batches are made and turned into a loss.
    pub trainer: TrainerConfig,
    /// Number of epochs.
    pub max_epochs: u64,
    /// Steps (optimizer updates) per epoch.
    pub steps_per_epoch: u64,
    /// Parameter optimizers; the first one whose selection claims a parameter owns it.
    pub optimizers: Vec<ParameterOptimizerConfig>,
    /// Called after every epoch (validation, metrics).
    #[serde(default)]
    pub listeners: Vec<ListenerConfig>,
}

/// `xpm_torch.base.Random`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomConfig {
    /// Type id.
    #[serde(rename = "__xpmtype__", default)]
    pub xpm_type: Option<String>,
    /// The seed.
    #[serde(default)]
    pub seed: u64,
}

config_enum! {
/// The trainers.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainerConfig {
    /// `xpm_torch.trainers.LossTrainer`.
    Loss(LossTrainerConfig) = "xpm_torch.trainers.LossTrainer",
}
}

/// A trainer that samples batches and minimises the weighted sum of its losses.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossTrainerConfig {
    /// Where records come from.
    pub sampler: SamplerConfig,
    /// Records per batch.
    pub batch_size: u64,
    /// Losses (training hooks contributing a loss).
    pub hooks: Vec<LossConfig>,
}

config_enum! {
/// Listeners run after each epoch.
#[derive(Debug, Clone, PartialEq)]
pub enum ListenerConfig {
    /// Pairwise accuracy of the model on a held-out dataset.
    PairwiseAccuracy(PairwiseAccuracyListenerConfig) = "xpm_torch.listeners.PairwiseAccuracyListener",
}
}

impl ListenerConfig {
    /// The listener's unique id.
    pub fn id(&self) -> &str {
        match self {
            ListenerConfig::PairwiseAccuracy(c) => &c.id,
        }
    }
}

/// Measures the fraction of preference pairs the model orders correctly.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairwiseAccuracyListenerConfig {
    /// Unique id; metrics are logged as `<id>/accuracy`.
    pub id: String,
    /// The held-out data.
    pub dataset: super::DatasetConfig,
}

impl LearnerConfig {
    /// Cross-field rules serde cannot express.
    ///
    /// # Errors
    /// [`Error::Config`] naming the offending path.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("learner.max_epochs", self.max_epochs),
            ("learner.steps_per_epoch", self.steps_per_epoch),
        ];
        for (path, value) in positive {
            if value == 0 {
                return Err(Error::config(path, "must be at least 1"));
            }
        }
        if self.optimizers.is_empty() {
            return Err(Error::config(
                "learner.optimizers",
                "at least one optimizer is needed",
            ));
        }
        let TrainerConfig::Loss(trainer) = &self.trainer;
        if trainer.batch_size == 0 {
            return Err(Error::config(
                "learner.trainer.batch_size",
                "must be at least 1",
            ));
        }
        if trainer.hooks.is_empty() {
            return Err(Error::config(
                "learner.trainer.hooks",
                "a LossTrainer needs at least one loss",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, listener) in self.listeners.iter().enumerate() {
            if !seen.insert(listener.id()) {
                return Err(Error::config(
                    format!("learner.listeners[{i}].id"),
                    format!("duplicate listener id {:?}", listener.id()),
                ));
            }
        }
        self.model.validate("learner.model")?;
        for (i, opt) in self.optimizers.iter().enumerate() {
            opt.validate(&format!("learner.optimizers[{i}]"))?;
        }
        Ok(())
    }
}
