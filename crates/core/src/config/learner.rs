use serde::{Deserialize, Serialize};

use super::rules::shown;
use super::tagged::{config_enum, config_types};
use super::{
    FabricConfiguration, HookConfig, JsObjectConfig, ModelConfig, ParameterOptimizerConfig,
    RankingValidationConfig, TrainerConfig, TrainerValidationLossConfig, Typed,
};
use crate::{Error, Result};

/// `xpm_torch.learner.Learner`: the training task.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LearnerConfig {
    /// Seeds every random choice of the run.
    pub random: Typed<RandomConfig>,
    /// How batches are made and turned into a loss.
    pub trainer: TrainerConfig,
    /// The model to learn.
    pub model: ModelConfig,
    /// Number of epochs.
    pub max_epochs: u64,
    /// Steps (optimizer updates) per epoch.
    pub steps_per_epoch: u64,
    /// Parameter optimizers; the first one whose selection claims a parameter owns it.
    pub optimizers: Vec<Typed<ParameterOptimizerConfig>>,
    /// Called after every epoch (validation, metrics).
    pub listeners: Vec<ListenerConfig>,
    /// Epochs between checkpoints.
    pub checkpoint_interval: u64,
    /// TensorBoard logs (generated in the job directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logpath: Option<String>,
    /// Checkpoints (generated in the job directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpointspath: Option<String>,
    /// Learner-level hooks (gradient clipping, logging).
    pub hooks: Vec<HookConfig>,
    /// Precision and devices.
    pub fabric_config: Typed<FabricConfiguration>,
    /// Epoch checkpoints kept besides the listeners' best epochs (None: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_keep: Option<u64>,
    /// Loaders applied to the fresh model before training, in order (experimaestro's init
    /// tasks, which enter the Learner's identifier but are none of its parameters).
    #[serde(
        default,
        rename = "__init_tasks__",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub init_tasks: Vec<Typed<super::ModuleLoaderConfig>>,
}

/// `xpm_torch.base.Random`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RandomConfig {
    /// The seed.
    pub seed: u64,
}

/// `xpm_torch.learner.CheckpointSettings`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSettings {
    /// The epoch of the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
}

config_types! {
    LearnerConfig = "xpm_torch.learner.Learner",
    RandomConfig = "xpm_torch.base.Random",
    CheckpointSettings = "xpm_torch.learner.CheckpointSettings",
}

config_enum! {
    /// Listeners run after each epoch.
    #[derive(Debug, Clone, PartialEq)]
    pub enum ListenerConfig {
        /// Ranking metrics on held-out queries.
        Ranking(Box<RankingValidationConfig>) = "xpm_torch.listeners.RankingValidationListener",
        /// A listener written in JavaScript.
        Js(JsObjectConfig) = "xpm_torch.js.JsObject",
        /// The trainer's loss on held-out data.
        ValidationLoss(Box<TrainerValidationLossConfig>) = "xpm_torch.trainers.validation.TrainerValidationLoss",
    }
}

impl ListenerConfig {
    /// The listener's unique id.
    pub fn id(&self) -> &str {
        match self {
            ListenerConfig::Ranking(c) => &c.id,
            ListenerConfig::Js(c) => c
                .params
                .get("id")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(&c.key),
            ListenerConfig::ValidationLoss(c) => &c.id,
        }
    }
}

impl LearnerConfig {
    /// The cross-field rules the core needs to run (declared in TypeScript too, with the same
    /// messages: the value rules of single fields come from the schema, see `rules.rs`).
    ///
    /// # Errors
    /// [`Error::Config`] naming the offending path.
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.optimizers.is_empty() {
            return Err(Error::config(
                format!("{path}.optimizers"),
                "at least one optimizer is needed",
            ));
        }
        let mut seen = std::collections::HashMap::new();
        for (i, listener) in self.listeners.iter().enumerate() {
            if let Some(first) = seen.get(listener.id()) {
                return Err(Error::config(
                    format!("{path}.listeners[{i}].id"),
                    format!(
                        "{} is already the id of listeners[{first}]",
                        shown(listener.id())
                    ),
                ));
            }
            seen.insert(listener.id(), i);
        }
        self.model.validate(&format!("{path}.model"))?;
        for (i, opt) in self.optimizers.iter().enumerate() {
            opt.optimizer
                .validate(&format!("{path}.optimizers[{i}].optimizer"))?;
        }
        Ok(())
    }
}
