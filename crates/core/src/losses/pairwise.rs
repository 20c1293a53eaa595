//! Losses over pairs of scores (preferred, other) of the same query.

use tch::{Reduction, Tensor};

use super::{bce_with_log_probabilities, PairwiseLoss};
use crate::models::OutputType;
use crate::Result;

/// `max(0, margin - (s+ - s-))` per pair.
#[derive(Debug, Clone, PartialEq)]
pub struct HingeLoss {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// The margin.
    pub margin: f64,
}

impl PairwiseLoss for HingeLoss {
    fn name(&self) -> &'static str {
        "pair-hinge"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    fn sum(&self, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        Ok(negative
            .f_sub(positive)?
            .f_add_scalar(self.margin)?
            .f_clamp_min(0.0)?
            .f_sum(None)?)
    }
}

/// `softplus(s- − s+)` per pair: the cross-entropy of preferring the positive, for real scores.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossEntropyLoss {
    /// Weight in the trainer's sum.
    pub weight: f64,
}

impl PairwiseLoss for CrossEntropyLoss {
    fn name(&self) -> &'static str {
        "pair-cross-entropy"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    fn sum(&self, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        Ok(negative.f_sub(positive)?.f_softplus()?.f_sum(None)?)
    }
}

/// Binary cross-entropy of each score on its own: target 1 for positives, 0 for negatives.
#[derive(Debug, Clone, PartialEq)]
pub struct PointwiseCrossEntropyLoss {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// What the model's scores are.
    pub output: OutputType,
}

impl PairwiseLoss for PointwiseCrossEntropyLoss {
    fn name(&self) -> &'static str {
        "pair-pointwise-cross-entropy"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    /// Half the summed BCE of the 2N scores. The reference averages over its 2N elements while
    /// the trainer divides our sum by the N pairs, so halving gives the reference's value.
    fn sum(&self, positive: &Tensor, negative: &Tensor) -> Result<Tensor> {
        let scores = Tensor::f_cat(&[positive, negative], 0)?;
        let targets = Tensor::f_cat(&[positive.f_ones_like()?, negative.f_zeros_like()?], 0)?;
        Ok(self.records_sum(&scores, &targets)?.f_mul_scalar(0.5)?)
    }
}

impl PointwiseCrossEntropyLoss {
    /// Summed BCE of `scores` against `targets` in [0, 1], read according to the output type:
    /// the loss of (query, document, relevance) records.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn records_sum(&self, scores: &Tensor, targets: &Tensor) -> Result<Tensor> {
        let targets = targets.f_to_kind(scores.kind())?;
        Ok(match self.output {
            OutputType::Real => scores.f_binary_cross_entropy_with_logits(
                &targets,
                None::<Tensor>,
                None::<Tensor>,
                Reduction::Sum,
            )?,
            OutputType::Probability => {
                scores.f_binary_cross_entropy(&targets, None::<Tensor>, Reduction::Sum)?
            }
            OutputType::LogProbability => bce_with_log_probabilities(scores, &targets)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::fixture;
    use tch::Kind;

    const POS: [f64; 3] = [2.0, 0.5, -1.0];
    const NEG: [f64; 3] = [1.0, 1.5, 0.0];

    fn mean(loss: &dyn PairwiseLoss, pos: &[f64], neg: &[f64]) -> f64 {
        let sum = loss.sum(&Tensor::from_slice(pos), &Tensor::from_slice(neg));
        sum.unwrap().double_value(&[]) / pos.len() as f64
    }

    fn vec(t: &Tensor) -> Vec<f64> {
        Vec::<f64>::try_from(t.to_kind(Kind::Double)).unwrap()
    }

    /// sum/N and its gradients against every fixture case of `loss`'s name.
    fn check_fixture(make: impl Fn(&serde_json::Value) -> Box<dyn PairwiseLoss>, name: &str) {
        for case in fixture::cases("pairwise", name) {
            let loss = make(&case);
            assert_eq!(loss.name(), name);
            let pos =
                Tensor::from_slice(&fixture::floats(&case, "positive")).set_requires_grad(true);
            let neg =
                Tensor::from_slice(&fixture::floats(&case, "negative")).set_requires_grad(true);
            let n = pos.size()[0] as f64;
            let value = loss.sum(&pos, &neg).unwrap() / n;
            let what = format!("{name} ({})", case["output"]);
            fixture::assert_close(
                &[value.double_value(&[])],
                &[case["value"].as_f64().unwrap()],
                &what,
            );
            value.backward();
            fixture::assert_close(
                &vec(&pos.grad()),
                &fixture::floats(&case, "grad_positive"),
                &what,
            );
            fixture::assert_close(
                &vec(&neg.grad()),
                &fixture::floats(&case, "grad_negative"),
                &what,
            );
        }
    }

    #[test]
    fn hinge_matches_the_reference_golden_value() {
        // python-reference.md §6: hinge on S=[[2,1],[0.5,1.5],[-1,0]] is 1.3333333.
        let loss = HingeLoss {
            weight: 1.0,
            margin: 1.0,
        };
        let m = mean(&loss, &POS, &NEG);
        assert!((m - 1.333_333_3).abs() < 1e-7, "{m}");
    }

    #[test]
    fn hinge_gradient_is_minus_one_on_violated_pairs() {
        let pos = Tensor::from_slice(&[2.0f64, 0.5]).set_requires_grad(true);
        let neg = Tensor::from_slice(&[0.5f64, 0.5]);
        let loss = HingeLoss {
            weight: 1.0,
            margin: 1.0,
        };
        loss.sum(&pos, &neg).unwrap().backward();
        assert_eq!(vec(&pos.grad()), vec![0.0, -1.0]);
    }

    #[test]
    fn hinge_matches_pytorch() {
        check_fixture(
            |case| {
                Box::new(HingeLoss {
                    weight: 1.0,
                    margin: case["margin"].as_f64().unwrap(),
                })
            },
            "pair-hinge",
        );
    }

    #[test]
    fn cross_entropy_matches_the_reference_golden_value() {
        let m = mean(&CrossEntropyLoss { weight: 1.0 }, &POS, &NEG);
        assert!((m - 0.979_928_4).abs() < 1e-7, "{m}");
    }

    #[test]
    fn cross_entropy_matches_pytorch() {
        check_fixture(
            |_| Box::new(CrossEntropyLoss { weight: 1.0 }),
            "pair-cross-entropy",
        );
    }

    #[test]
    fn pointwise_cross_entropy_matches_the_reference_golden_values() {
        let real = PointwiseCrossEntropyLoss {
            weight: 1.0,
            output: OutputType::Real,
        };
        let m = mean(&real, &POS, &NEG);
        assert!((m - 0.937_014_8).abs() < 1e-7, "{m}");

        // BCEWithLogLoss golden vector: lp=[-0.1,-0.5,-2 | -0.3,-1.2,-0.05], t=[1,1,1,0,0,0].
        let log = PointwiseCrossEntropyLoss {
            weight: 1.0,
            output: OutputType::LogProbability,
        };
        let pos = Tensor::from_slice(&[-0.1f64, -0.5, -2.0]).set_requires_grad(true);
        let neg = Tensor::from_slice(&[-0.3f64, -1.2, -0.05]).set_requires_grad(true);
        let value = log.sum(&pos, &neg).unwrap() / 3.0;
        assert!((value.double_value(&[]) - 1.221_539_4).abs() < 1e-7);
        value.backward();
        for g in vec(&pos.grad()) {
            assert!((g + 1.0 / 6.0).abs() < 1e-7, "{g}");
        }
        for (g, e) in vec(&neg.grad())
            .iter()
            .zip([0.476_382_7, 0.071_835_5, 3.250_694_4])
        {
            assert!((g - e).abs() < 1e-7, "{g} vs {e}");
        }
    }

    #[test]
    fn pointwise_cross_entropy_agrees_across_output_types() {
        // The same probabilities given as logits, probabilities and log-probabilities.
        let logits = [2.0f64, -0.5, 0.3, 1.5, -3.0, 0.0];
        let as_kind = |f: fn(&Tensor) -> Tensor| f(&Tensor::from_slice(&logits));
        let inputs = [
            (OutputType::Real, as_kind(|t| t.shallow_clone())),
            (OutputType::Probability, as_kind(|t| t.sigmoid())),
            (OutputType::LogProbability, as_kind(|t| t.log_sigmoid())),
        ];
        let values: Vec<f64> = inputs
            .iter()
            .map(|(output, x)| {
                let loss = PointwiseCrossEntropyLoss {
                    weight: 1.0,
                    output: *output,
                };
                let (pos, neg) = (x.narrow(0, 0, 3), x.narrow(0, 3, 3));
                loss.sum(&pos, &neg).unwrap().double_value(&[])
            })
            .collect();
        assert!((values[0] - values[1]).abs() < 1e-12, "{values:?}");
        assert!((values[0] - values[2]).abs() < 1e-12, "{values:?}");
    }

    #[test]
    fn pointwise_cross_entropy_matches_pytorch() {
        check_fixture(
            |case| {
                Box::new(PointwiseCrossEntropyLoss {
                    weight: 1.0,
                    output: fixture::output(case),
                })
            },
            "pair-pointwise-cross-entropy",
        );
    }
}
