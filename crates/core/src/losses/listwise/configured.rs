//! Listwise losses from their configurations.

use super::{
    ApproxNdcg, LambdaLoss, LambdaWeighting, ListMle, ListNet, ListwiseLoss, NeuralNdcg,
    PairWeighting, RankNet, Reduction,
};
use crate::config::{LambdaScheme, LogBase, PairReduction, RankNetWeighting, TrainingHookConfig};
use crate::{Error, Result};

/// The listwise loss `hook` configures, or `None` for another hook.
///
/// # Errors
/// [`Error::Config`] at `path` for a setting out of range.
pub fn listwise_loss(
    hook: &TrainingHookConfig,
    path: &str,
) -> Result<Option<Box<dyn ListwiseLoss>>> {
    let positive = |name: &str, value: f64| -> Result<f64> {
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(Error::config(
                format!("{path}.{name}"),
                format!("must be a finite number above 0, not {value}"),
            ))
        }
    };
    let cut_off = |k: Option<u64>| -> Result<Option<usize>> {
        match k {
            Some(0) => Err(Error::config(format!("{path}.k"), "must be at least 1")),
            other => Ok(other.map(|k| k as usize)),
        }
    };
    Ok(Some(match hook {
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
                LambdaScheme::NdcgLoss2PlusPlus => LambdaWeighting::NdcgLoss2PlusPlus {
                    mu: positive("mu", c.mu)?,
                },
                LambdaScheme::LabelDifference => LambdaWeighting::LabelDifference,
                LambdaScheme::SquaredLabelDifference => LambdaWeighting::SquaredLabelDifference,
            },
            k: cut_off(c.k)?,
            sigma: positive("sigma", c.sigma)?,
            reduction: match c.reduction {
                PairReduction::Sum => Reduction::Sum,
                PairReduction::Mean => Reduction::Mean,
            },
            binary_log: c.reduction_log == LogBase::Binary,
        }),
        TrainingHookConfig::ApproxNdcg(c) => Box::new(ApproxNdcg {
            weight: c.weight,
            alpha: positive("alpha", c.alpha)?,
        }),
        TrainingHookConfig::NeuralNdcg(c) => Box::new(NeuralNdcg {
            weight: c.weight,
            temperature: positive("temperature", c.temperature)?,
            powered_relevancies: c.powered_relevancies,
            k: cut_off(c.k)?,
        }),
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LambdaLossConfig, NeuralNdcgLossConfig, WeightOnly};

    #[test]
    fn configurations_build_their_losses_and_refuse_bad_settings() {
        let lambda = |sigma: f64, k: Option<u64>| {
            TrainingHookConfig::Lambda(LambdaLossConfig {
                weight: 0.5,
                weighing_scheme: LambdaScheme::NdcgLoss2PlusPlus,
                k,
                sigma,
                mu: 10.0,
                reduction: PairReduction::Sum,
                reduction_log: LogBase::Binary,
            })
        };
        let built = listwise_loss(&lambda(1.0, Some(5)), "h").unwrap().unwrap();
        assert_eq!((built.name(), built.weight()), ("list-lambdaloss", 0.5));
        let err = listwise_loss(&lambda(0.0, None), "t.hooks[0]")
            .err()
            .unwrap();
        assert!(
            err.to_string().starts_with("t.hooks[0].sigma: must be"),
            "{err}"
        );
        let err = listwise_loss(&lambda(1.0, Some(0)), "t.hooks[0]")
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("t.hooks[0].k: must be at least 1"),
            "{err}"
        );
        let neural = TrainingHookConfig::NeuralNdcg(NeuralNdcgLossConfig {
            weight: 1.0,
            temperature: -1.0,
            powered_relevancies: true,
            k: None,
        });
        assert!(listwise_loss(&neural, "h").is_err());
        let other = TrainingHookConfig::PairwiseCrossEntropy(WeightOnly { weight: 1.0 });
        assert!(listwise_loss(&other, "h").unwrap().is_none());
    }
}
