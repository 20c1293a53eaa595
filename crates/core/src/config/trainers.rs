use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tagged::config_enum;
use super::{BatcherConfig, ModelConfig, SamplerConfig, TrainingHookConfig};

config_enum! {
    /// The trainers.
    #[derive(Debug, Clone, PartialEq)]
    pub enum TrainerConfig {
        /// `xpm_torch.trainers.LossTrainer`.
        Loss(Box<LossTrainerConfig>) = "xpm_torch.trainers.LossTrainer",
        /// `xpm_torch.trainers.multiple.MultipleTrainer`.
        Multiple(MultipleTrainerConfig) = "xpm_torch.trainers.multiple.MultipleTrainer",
    }
}

/// A trainer that samples batches and minimises the weighted sum of its losses.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LossTrainerConfig {
    /// Losses (training hooks contributing a loss).
    pub hooks: Vec<TrainingHookConfig>,
    /// A model other than the learner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelConfig>,
    /// Micro-batching.
    pub batcher: BatcherConfig,
    /// Where records come from.
    pub sampler: SamplerConfig,
    /// Records per batch.
    pub batch_size: u64,
    /// Data loading workers.
    pub num_workers: u64,
}

/// Several trainers sharing one optimizer step.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MultipleTrainerConfig {
    /// Hooks of the combined trainer.
    pub hooks: Vec<TrainingHookConfig>,
    /// A model other than the learner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelConfig>,
    /// The trainers, by scope name.
    pub trainers: BTreeMap<String, TrainerConfig>,
}
