use serde::{Deserialize, Serialize};

use super::tagged::{config_enum, config_types};
use super::{
    BatcherConfig, LetorDatasetConfig, ListenerConfig, LossTrainerConfig, SyntheticLtrConfig,
    SyntheticTripletsConfig, TripletFileConfig, Typed,
};

/// `xpm_torch.trainers.validation.TrainerValidationLoss`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TrainerValidationLossConfig {
    /// Unique id.
    pub id: String,
    /// The held-out data: graded documents or token triplets.
    pub data: ValidationDataConfig,
    /// Micro-batching.
    pub batcher: BatcherConfig,
    /// Batch size.
    pub batch_size: u64,
    /// The trainer whose losses are measured.
    pub trainer: Typed<LossTrainerConfig>,
    /// Epochs before validating.
    pub warmup: i64,
    /// Best checkpoints (generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bestpath: Option<String>,
    /// Metric values per epoch (generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<String>,
    /// Epochs between validations.
    pub validation_interval: u64,
    /// Epochs without improvement before stopping (0: never).
    pub early_stop: u64,
}

config_enum! {
    /// Held-out data of a [`TrainerValidationLossConfig`]: preference pairs of a graded dataset
    /// (feature models), token triplets (sequence models), or text triplets (pretrained text
    /// models).
    #[derive(Debug, Clone, PartialEq)]
    pub enum ValidationDataConfig {
        /// `xpm_torch.data.SyntheticLtrDataset`.
        Synthetic(SyntheticLtrConfig) = "xpm_torch.data.SyntheticLtrDataset",
        /// `xpm_torch.data.LetorDataset`.
        Letor(LetorDatasetConfig) = "xpm_torch.data.LetorDataset",
        /// `xpm_torch.data.TokenTripletFile`.
        TokenTripletFile(TripletFileConfig) = "xpm_torch.data.TokenTripletFile",
        /// `xpm_torch.data.SyntheticTokenTriplets`.
        SyntheticTokenTriplets(SyntheticTripletsConfig) = "xpm_torch.data.SyntheticTokenTriplets",
        /// `xpm_torch.data.TextTripletFile`.
        TextTripletFile(super::TextTripletFileConfig) = "xpm_torch.data.TextTripletFile",
        /// A dataset held in TypedArrays on the JavaScript side.
        Js(super::JsObjectConfig) = "xpm_torch.js.JsObject",
    }
}

/// `xpm_torch.validation.ValidationSettings`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationSettings {
    /// The listener (optional, as in Python).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<ListenerConfig>,
    /// The metric key.
    pub key: String,
}

config_types! {
    LossTrainerConfig = "xpm_torch.trainers.LossTrainer",
    ValidationSettings = "xpm_torch.validation.ValidationSettings",
}
