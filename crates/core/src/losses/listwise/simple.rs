//! ListNet, ListMLE and RankNet over slates.

use tch::{Kind, Tensor};

use super::{pair_and, pair_differences, ListwiseLoss, Slates, EPS};
use crate::Result;

/// ListNet: per slate, the cross-entropy `−Σ softmax(labels) · log(softmax(scores) + ε)` over its
/// real documents; allRank averages over slates.
#[derive(Debug, Clone, PartialEq)]
pub struct ListNet {
    /// Weight in the trainer's sum.
    pub weight: f64,
}

impl ListwiseLoss for ListNet {
    fn name(&self) -> &'static str {
        "list-net"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)> {
        let s = Slates::new(self.name(), scores, labels, mask)?;
        let predicted = s
            .scores
            .f_masked_fill(&s.padded, f64::NEG_INFINITY)?
            .f_softmax(1, None)?
            .f_add_scalar(EPS)?
            .f_log()?;
        let target = s
            .labels
            .f_masked_fill(&s.padded, f64::NEG_INFINITY)?
            .f_softmax(1, None)?;
        Ok((target.f_mul(&predicted)?.f_sum(None)?.f_neg()?, s.slates))
    }
}

/// ListMLE: per slate, the negative log-likelihood of the order by decreasing label under the
/// Plackett–Luce model of the scores; allRank averages over slates. Documents of equal label
/// keep their order in the slate (allRank shuffles them first; the slate sampler already
/// presents each slate in a random order).
#[derive(Debug, Clone, PartialEq)]
pub struct ListMle {
    /// Weight in the trainer's sum.
    pub weight: f64,
}

impl ListwiseLoss for ListMle {
    fn name(&self) -> &'static str {
        "list-mle"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)> {
        let s = Slates::new(self.name(), scores, labels, mask)?;
        let key = s.labels.f_masked_fill(&s.padded, f64::NEG_INFINITY)?;
        let (_, order) = key.f_sort_stable(true, 1, true)?;
        let padded = s.padded.f_gather(1, &order, false)?;
        let sorted = s
            .scores
            .f_gather(1, &order, false)?
            .f_masked_fill(&padded, f64::NEG_INFINITY)?;
        let (max, _) = sorted.f_max_dim(1, true)?;
        let shifted = sorted.f_sub(&max)?;
        let tails = shifted
            .f_exp()?
            .f_flip([1])?
            .f_cumsum(1, None)?
            .f_flip([1])?;
        let per_position = tails
            .f_add_scalar(EPS)?
            .f_log()?
            .f_sub(&shifted)?
            .f_masked_fill(&padded, 0.0)?;
        Ok((per_position.f_sum(None)?, s.slates))
    }
}

/// How RankNet weighs a pair `(i, j)` with labels `y_i > y_j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairWeighting {
    /// Every pair counts 1.
    Uniform,
    /// `y_i − y_j`.
    LabelDifference,
    /// `y_i² − y_j²`.
    SquaredLabelDifference,
}

/// RankNet: over every pair of real documents of a slate with `y_i > y_j`, the logistic loss
/// `w_ij · log(1 + exp(s_j − s_i))`; allRank averages over the pairs of the whole batch.
#[derive(Debug, Clone, PartialEq)]
pub struct RankNet {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// How pairs are weighed.
    pub weighting: PairWeighting,
}

impl ListwiseLoss for RankNet {
    fn name(&self) -> &'static str {
        "list-ranknet"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    /// The summed pair losses, with the number of pairs.
    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)> {
        let s = Slates::new(self.name(), scores, labels, mask)?;
        let label_diffs = pair_differences(&s.labels)?;
        let pairs = pair_and(&s.real, &s.real)?.f_logical_and(&label_diffs.f_gt(0.0)?)?;
        let count = pairs.f_sum(Kind::Int64)?.f_int64_value(&[])?;
        let per_pair = pair_differences(&s.scores)?.f_neg()?.f_softplus()?;
        let weighted = match self.weighting {
            PairWeighting::Uniform => per_pair,
            PairWeighting::LabelDifference => per_pair.f_mul(&label_diffs.f_abs()?)?,
            PairWeighting::SquaredLabelDifference => {
                let squares = s.labels.f_square()?;
                per_pair.f_mul(&pair_differences(&squares)?.f_abs()?)?
            }
        };
        Ok((
            weighted.f_where_scalarother(&pairs, 0.0)?.f_sum(None)?,
            count,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::listwise::fixture;

    #[test]
    fn listnet_matches_allrank() {
        fixture::check("list-net", 1e-6, |_| Box::new(ListNet { weight: 1.0 }));
    }

    #[test]
    fn listmle_matches_allrank() {
        fixture::check("list-mle", 1e-6, |_| Box::new(ListMle { weight: 1.0 }));
    }

    #[test]
    fn ranknet_matches_allrank() {
        fixture::check("list-ranknet", 1e-6, |case| {
            let weighting = match case["params"]["weighting"].as_str().unwrap() {
                "none" => PairWeighting::Uniform,
                "diff" => PairWeighting::LabelDifference,
                _ => PairWeighting::SquaredLabelDifference,
            };
            Box::new(RankNet {
                weight: 1.0,
                weighting,
            })
        });
    }

    #[test]
    fn listmle_breaks_label_ties_by_slate_order() {
        let scores = Tensor::from_slice(&[2.0f64, 0.5, -1.0]).view([1, 3]);
        let labels = Tensor::from_slice(&[1.0f64, 1.0, 0.0]).view([1, 3]);
        let mask = Tensor::from_slice(&[true, true, true]).view([1, 3]);
        let loss = ListMle { weight: 1.0 };
        let value = |s: &Tensor, l: &Tensor| loss.sum(s, l, &mask).unwrap().0.double_value(&[]);
        let (a, b, c) = (2.0f64, 0.5f64, -1.0f64);
        let lse = |xs: &[f64]| xs.iter().map(|x| x.exp()).sum::<f64>().ln();
        // order 0, 1, 2
        let want = lse(&[a, b, c]) - a + lse(&[b, c]) - b;
        assert!((value(&scores, &labels) - want).abs() < 1e-7);
        // swapping the tied documents swaps their places in the likelihood
        let swapped = Tensor::from_slice(&[b, a, c]).view([1, 3]);
        let want = lse(&[a, b, c]) - b + lse(&[a, c]) - a;
        assert!((value(&swapped, &labels) - want).abs() < 1e-7);
    }

    #[test]
    fn mismatched_shapes_name_the_loss() {
        let err = ListNet { weight: 1.0 }
            .sum(
                &Tensor::zeros([2, 3], (Kind::Double, tch::Device::Cpu)),
                &Tensor::zeros([2, 2], (Kind::Double, tch::Device::Cpu)),
                &Tensor::ones([2, 3], (Kind::Bool, tch::Device::Cpu)),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("list-net: scores are [2, 3] but labels are [2, 2]"),
            "{err}"
        );
    }
}
