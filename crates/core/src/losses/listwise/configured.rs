//! Listwise losses from their configurations.

use super::{
    ApproxNdcg, LambdaLoss, LambdaWeighting, ListMle, ListNet, ListwiseLoss, NeuralNdcg,
    PairWeighting, RankNet, Reduction,
};
use crate::config::{self, AnyTrainingHook, ReductionLog, WeighingScheme, Weighting};

/// The listwise loss `hook` configures, or `None` for another hook. Its settings are in range:
/// the configuration's value rules hold (see `config/rules.rs`).
pub fn listwise_loss(hook: &AnyTrainingHook) -> Option<Box<dyn ListwiseLoss>> {
    Some(match hook {
        AnyTrainingHook::ListNetLoss(c) => Box::new(ListNet { weight: c.weight }),
        AnyTrainingHook::ListMleLoss(c) => Box::new(ListMle { weight: c.weight }),
        AnyTrainingHook::RankNetLoss(c) => Box::new(RankNet {
            weight: c.weight,
            weighting: match c.weighting {
                Weighting::None => PairWeighting::Uniform,
                Weighting::LabelDifference => PairWeighting::LabelDifference,
                Weighting::SquaredLabelDifference => PairWeighting::SquaredLabelDifference,
            },
        }),
        AnyTrainingHook::LambdaLoss(c) => Box::new(LambdaLoss {
            weight: c.weight,
            weighting: match c.weighing_scheme {
                WeighingScheme::None => LambdaWeighting::Uniform,
                WeighingScheme::NdcgLoss1 => LambdaWeighting::NdcgLoss1,
                WeighingScheme::NdcgLoss2 => LambdaWeighting::NdcgLoss2,
                WeighingScheme::LambdaRank => LambdaWeighting::LambdaRank,
                WeighingScheme::NdcgLoss2Pp => LambdaWeighting::NdcgLoss2PlusPlus { mu: c.mu },
                WeighingScheme::LabelDifference => LambdaWeighting::LabelDifference,
                WeighingScheme::SquaredLabelDifference => LambdaWeighting::SquaredLabelDifference,
            },
            k: c.k.map(|k| k as usize),
            sigma: c.sigma,
            reduction: match c.reduction {
                config::Reduction::Sum => Reduction::Sum,
                config::Reduction::Mean => Reduction::Mean,
            },
            binary_log: c.reduction_log == ReductionLog::Binary,
        }),
        AnyTrainingHook::ApproxNdcgLoss(c) => Box::new(ApproxNdcg {
            weight: c.weight,
            alpha: c.alpha,
        }),
        AnyTrainingHook::NeuralNdcgLoss(c) => Box::new(NeuralNdcg {
            weight: c.weight,
            temperature: c.temperature,
            powered_relevancies: c.powered_relevancies,
            k: c.k.map(|k| k as usize),
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LambdaLossConfig, NeuralNdcgLossConfig, PairwiseCrossEntropyLossConfig};

    #[test]
    fn configurations_build_their_losses() {
        let lambda = AnyTrainingHook::LambdaLoss(LambdaLossConfig {
            weight: 0.5,
            weighing_scheme: WeighingScheme::NdcgLoss2Pp,
            k: Some(5),
            sigma: 1.0,
            mu: 10.0,
            reduction: config::Reduction::Sum,
            reduction_log: ReductionLog::Binary,
        });
        let built = listwise_loss(&lambda).unwrap();
        assert_eq!((built.name(), built.weight()), ("list-lambdaloss", 0.5));
        let neural = AnyTrainingHook::NeuralNdcgLoss(NeuralNdcgLossConfig {
            weight: 1.0,
            temperature: 2.0,
            powered_relevancies: true,
            k: None,
        });
        assert_eq!(listwise_loss(&neural).unwrap().name(), "list-neural-ndcg");
        let other = AnyTrainingHook::PairwiseCrossEntropyLoss(PairwiseCrossEntropyLossConfig {
            weight: 1.0,
        });
        assert!(listwise_loss(&other).is_none());
    }
}
