use tch::Tensor;

use super::PairwiseLoss;
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

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn matches_the_reference_golden_value() {
        // python-reference.md §6: hinge on S=[[2,1],[0.5,1.5],[-1,0]] is 1.3333333.
        let pos = Tensor::from_slice(&[2.0f64, 0.5, -1.0]);
        let neg = Tensor::from_slice(&[1.0f64, 1.5, 0.0]);
        let loss = HingeLoss {
            weight: 1.0,
            margin: 1.0,
        };
        let mean = loss.sum(&pos, &neg).unwrap().double_value(&[]) / 3.0;
        assert!((mean - 1.333_333_3).abs() < 1e-7, "{mean}");
    }

    #[test]
    fn gradient_is_minus_one_on_violated_pairs() {
        let pos = Tensor::from_slice(&[2.0f64, 0.5]).set_requires_grad(true);
        let neg = Tensor::from_slice(&[0.5f64, 0.5]);
        let loss = HingeLoss {
            weight: 1.0,
            margin: 1.0,
        };
        loss.sum(&pos, &neg).unwrap().backward();
        let grad = Vec::<f64>::try_from(pos.grad().to_kind(Kind::Double)).unwrap();
        assert_eq!(grad, vec![0.0, -1.0]);
    }
}
