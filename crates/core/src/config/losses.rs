use serde::{Deserialize, Serialize};

use super::tagged::config_enum;
use super::{
    ApproxNdcgLossConfig, JsObjectConfig, LambdaLossConfig, LayerFreezerConfig, LayerSharerConfig,
    NeuralNdcgLossConfig, RankNetLossConfig,
};

config_enum! {
    /// Training hooks of a trainer: its losses and structural hooks.
    #[derive(Debug, Clone, PartialEq)]
    pub enum TrainingHookConfig {
        /// `max(0, margin - (s+ - s-))`.
        PairwiseHinge(HingeLossConfig) = "xpm_torch.losses.pairwise.HingeLoss",
        /// `softplus(s- - s+)`.
        PairwiseCrossEntropy(WeightOnly) = "xpm_torch.losses.pairwise.CrossEntropyLoss",
        /// Binary cross-entropy on each score of the pairs.
        PairwisePointwiseCrossEntropy(WeightOnly) = "xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss",
        /// Binary cross-entropy of batchwise scores against relevances.
        BatchwiseCrossEntropy(WeightOnly) = "xpm_torch.losses.batchwise.CrossEntropyLoss",
        /// InfoNCE over each query's documents.
        BatchwiseSoftmaxCrossEntropy(WeightOnly) = "xpm_torch.losses.batchwise.SoftmaxCrossEntropy",
        /// ListNet over slates.
        ListNet(WeightOnly) = "xpm_torch.losses.listwise.ListNetLoss",
        /// ListMLE over slates.
        ListMle(WeightOnly) = "xpm_torch.losses.listwise.ListMLELoss",
        /// RankNet over the pairs of slates.
        RankNet(RankNetLossConfig) = "xpm_torch.losses.listwise.RankNetLoss",
        /// The LambdaLoss framework over slates.
        Lambda(LambdaLossConfig) = "xpm_torch.losses.listwise.LambdaLoss",
        /// ApproxNDCG over slates.
        ApproxNdcg(ApproxNdcgLossConfig) = "xpm_torch.losses.listwise.ApproxNDCGLoss",
        /// NeuralNDCG over slates.
        NeuralNdcg(NeuralNdcgLossConfig) = "xpm_torch.losses.listwise.NeuralNDCGLoss",
        /// Freezes the selected parameters.
        LayerFreezer(LayerFreezerConfig) = "xpm_torch.trainers.hooks.LayerFreezer",
        /// Makes target parameters the very tensors of source parameters.
        LayerSharer(LayerSharerConfig) = "xpm_torch.trainers.hooks.LayerSharer",
        /// A hook written in JavaScript.
        Js(JsObjectConfig) = "xpm_torch.js.JsObject",
    }
}

/// A loss whose only parameter is its weight.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WeightOnly {
    /// Weight of the loss in the trainer's sum.
    pub weight: f64,
}

/// `max(0, margin - (s+ - s-))`, averaged over pairs and multiplied by `weight`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HingeLossConfig {
    /// Weight of the loss in the trainer's sum.
    pub weight: f64,
    /// The margin.
    pub margin: f64,
}
