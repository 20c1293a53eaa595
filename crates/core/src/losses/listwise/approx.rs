//! ApproxNDCG (Qin et al., 2010) as allRank implements it.

use tch::{Kind, Tensor};

use super::{discounts, pair_and, pair_differences, ListwiseLoss, Slates, EPS};
use crate::Result;

/// ApproxNDCG: minus the NDCG of each slate where each document's rank is approximated by
/// `1 + Σ_j sigmoid(−alpha·(s_i − s_j))` over the other real documents; gains `2^y − 1`, no
/// cut-off. allRank averages over slates (a slate without a relevant document scores 0).
#[derive(Debug, Clone, PartialEq)]
pub struct ApproxNdcg {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// Scale of score differences (sharper approximation as it grows).
    pub alpha: f64,
}

impl ListwiseLoss for ApproxNdcg {
    fn name(&self) -> &'static str {
        "list-approx-ndcg"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)> {
        let s = Slates::new(self.name(), scores, labels, mask)?;
        // The approximate NDCG sums over documents, so it needs no sorting by score.
        let (ideal, _) = s.labels.f_sort_stable(true, 1, true)?;
        let max_dcg = ideal
            .f_exp2()?
            .f_sub_scalar(1.0)?
            .f_div(&discounts(s.length, &s.labels)?)?
            .f_sum_dim_intlist([1i64].as_slice(), true, None)?
            .f_clamp_min(EPS)?;
        let gains = s.labels.f_exp2()?.f_sub_scalar(1.0)?.f_div(&max_dcg)?;

        let eye = Tensor::f_eye(s.length, (Kind::Bool, s.scores.device()))?;
        let others = pair_and(&s.real, &s.real)?.f_logical_and(&eye.f_logical_not()?)?;
        let beaten = pair_differences(&s.scores)?
            .f_where_scalarother(&others, 0.0)?
            .f_mul_scalar(-self.alpha)?
            .f_sigmoid()?
            .f_clamp_min(EPS)?
            .f_mul(&others.f_to_kind(s.scores.kind())?)?;
        let approximate_rank = beaten
            .f_sum_dim_intlist([2i64].as_slice(), false, None)?
            .f_add_scalar(1.0)?;
        let ndcg = gains.f_div(&approximate_rank.f_add_scalar(1.0)?.f_log2()?)?;
        Ok((ndcg.f_sum(None)?.f_neg()?, s.slates))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::listwise::fixture;

    #[test]
    fn approx_ndcg_matches_allrank() {
        fixture::check("list-approx-ndcg", 1e-6, |case| {
            Box::new(ApproxNdcg {
                weight: 1.0,
                alpha: case["params"]["alpha"].as_f64().unwrap(),
            })
        });
    }
}
