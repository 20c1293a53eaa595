//! Listwise losses from their configurations.

use super::{
    ApproxNdcg, LambdaLoss, LambdaWeighting, ListMle, ListNet, ListwiseLoss, NeuralNdcg,
    PairWeighting, RankNet, Reduction,
};
use crate::config::{LambdaScheme, LogBase, PairReduction, RankNetWeighting, TrainingHookConfig};

/// The listwise loss `hook` configures, or `None` for another hook. Its settings are in range:
/// the configuration's value rules hold (see `config/rules.rs`).
pub fn listwise_loss(hook: &TrainingHookConfig) -> Option<Box<dyn ListwiseLoss>> {
    Some(match hook {
        TrainingHookConfig::ListNet(c) => Box::new(ListNet { weight: c.weight }),
        TrainingHookConfig::ListMle(c) => Box::new(ListMle { weight: c.weight }),
        TrainingHookConfig::RankNet(c) => Box::new(RankNet {
            weight: c.weight,
            weighting: match c.weighting {
                RankNetWeighting::Uniform => PairWeighting::Uniform,
                RankNetWeighting::LabelDifference => PairWeighting::LabelDifference,
                RankNetWeighting::SquaredLabelDifference => PairWeighting::SquaredLabelDifference,
            },
        }),
        TrainingHookConfig::Lambda(c) => Box::new(LambdaLoss {
            weight: c.weight,
            weighting: match c.weighing_scheme {
                LambdaScheme::Uniform => LambdaWeighting::Uniform,
                LambdaScheme::NdcgLoss1 => LambdaWeighting::NdcgLoss1,
                LambdaScheme::NdcgLoss2 => LambdaWeighting::NdcgLoss2,
                LambdaScheme::LambdaRank => LambdaWeighting::LambdaRank,
                LambdaScheme::NdcgLoss2PlusPlus => LambdaWeighting::NdcgLoss2PlusPlus { mu: c.mu },
                LambdaScheme::LabelDifference => LambdaWeighting::LabelDifference,
                LambdaScheme::SquaredLabelDifference => LambdaWeighting::SquaredLabelDifference,
            },
            k: c.k.map(|k| k as usize),
            sigma: c.sigma,
            reduction: match c.reduction {
                PairReduction::Sum => Reduction::Sum,
                PairReduction::Mean => Reduction::Mean,
            },
            binary_log: c.reduction_log == LogBase::Binary,
        }),
        TrainingHookConfig::ApproxNdcg(c) => Box::new(ApproxNdcg {
            weight: c.weight,
            alpha: c.alpha,
        }),
        TrainingHookConfig::NeuralNdcg(c) => Box::new(NeuralNdcg {
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
    use crate::config::{LambdaLossConfig, NeuralNdcgLossConfig, WeightOnly};

    #[test]
    fn configurations_build_their_losses() {
        let lambda = TrainingHookConfig::Lambda(LambdaLossConfig {
            weight: 0.5,
            weighing_scheme: LambdaScheme::NdcgLoss2PlusPlus,
            k: Some(5),
            sigma: 1.0,
            mu: 10.0,
            reduction: PairReduction::Sum,
            reduction_log: LogBase::Binary,
        });
        let built = listwise_loss(&lambda).unwrap();
        assert_eq!((built.name(), built.weight()), ("list-lambdaloss", 0.5));
        let neural = TrainingHookConfig::NeuralNdcg(NeuralNdcgLossConfig {
            weight: 1.0,
            temperature: 2.0,
            powered_relevancies: true,
            k: None,
        });
        assert_eq!(listwise_loss(&neural).unwrap().name(), "list-neural-ndcg");
        let other = TrainingHookConfig::PairwiseCrossEntropy(WeightOnly { weight: 1.0 });
        assert!(listwise_loss(&other).is_none());
    }
}
