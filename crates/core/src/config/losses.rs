use super::tagged::config_enum;
use serde::Deserialize;

config_enum! {
/// Losses a [`super::LossTrainerConfig`] minimises.
#[derive(Debug, Clone, PartialEq)]
pub enum LossConfig {
    /// `xpm_torch.losses.pairwise.HingeLoss`.
    PairwiseHinge(HingeLossConfig) = "xpm_torch.losses.pairwise.HingeLoss",
}
}

/// `max(0, margin - (s+ - s-))`, averaged over pairs and multiplied by `weight`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HingeLossConfig {
    /// Weight of the loss in the trainer's sum.
    #[serde(default = "one")]
    pub weight: f64,
    /// The margin.
    #[serde(default = "one")]
    pub margin: f64,
}

fn one() -> f64 {
    1.0
}
