use serde::{Deserialize, Serialize};

use super::tagged::{config_enum, config_types};
use super::{CheckpointSettings, ModelConfig, ValidationSettings};

/// `xpm_torch.module.SimpleModuleLoader`: a model and the weights file to load into it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleLoaderConfig {
    /// The model.
    pub value: ModelConfig,
    /// Its weights (safetensors).
    pub path: String,
    /// Which saved model it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<LoaderSettings>,
}

config_enum! {
    /// What distinguishes loaders of the same model and path.
    #[derive(Debug, Clone, PartialEq)]
    pub enum LoaderSettings {
        /// A checkpoint's model.
        Checkpoint(CheckpointSettings) = "xpm_torch.learner.CheckpointSettings",
        /// A listener's best model.
        Validation(Box<ValidationSettings>) = "xpm_torch.validation.ValidationSettings",
    }
}

config_types! {
    ModuleLoaderConfig = "xpm_torch.module.SimpleModuleLoader",
}
