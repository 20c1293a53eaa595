//! The LambdaLoss framework (Wang et al., 2018) as allRank implements it.

use tch::{Kind, Tensor};

use super::{discounts, pair_and, pair_differences, ListwiseLoss, Slates, EPS};
use crate::Result;

/// The weight of a pair in LambdaLoss: which metric the loss bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LambdaWeighting {
    /// Weight 1 (a RankNet loss over the pairs).
    Uniform,
    /// NDCG-Loss1: `G_i / D_i`, over every pair of real documents (ties and the diagonal too).
    NdcgLoss1,
    /// NDCG-Loss2: `|1/D(|i−j|) − 1/D(|i−j|+1)| · |G_i − G_j|`.
    NdcgLoss2,
    /// LambdaRank: `|1/D_i − 1/D_j| · |G_i − G_j|`.
    LambdaRank,
    /// NDCG-Loss2++: `mu ·` NDCG-Loss2 `+` LambdaRank.
    NdcgLoss2PlusPlus {
        /// Weight of the NDCG-Loss2 term.
        mu: f64,
    },
    /// `|y_i − y_j|`.
    LabelDifference,
    /// `|y_i² − y_j²|`.
    SquaredLabelDifference,
}

/// How the pair losses are reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// Summed over the pairs of the batch.
    Sum,
    /// Averaged over the pairs of the batch.
    Mean,
}

/// LambdaLoss: for pairs `(i, j)` of predicted positions, both within the top `k`, with
/// `y_i > y_j`, the loss `−log(sigmoid(sigma·(s_i − s_j)) ^ w_ij)`, with gains
/// `G = (2^y − 1) / maxDCG@k` and discounts `D = log2(1 + position)`.
#[derive(Debug, Clone, PartialEq)]
pub struct LambdaLoss {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// The pair weights.
    pub weighting: LambdaWeighting,
    /// Only pairs within the first `k` predicted positions count (all when `None`).
    pub k: Option<usize>,
    /// Scale of score differences.
    pub sigma: f64,
    /// Summed or averaged over pairs (allRank: summed).
    pub reduction: Reduction,
    /// Binary logarithm (allRank's default) or natural.
    pub binary_log: bool,
}

impl ListwiseLoss for LambdaLoss {
    fn name(&self) -> &'static str {
        "list-lambdaloss"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    /// The summed pair losses, with 1 (a sum) or the number of pairs (a mean).
    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)> {
        let s = Slates::new(self.name(), scores, labels, mask)?;
        let length = s.length;
        let (_, order) = s
            .scores
            .f_masked_fill(&s.padded, f64::NEG_INFINITY)?
            .f_sort_stable(true, 1, true)?;
        let real = s.real.f_gather(1, &order, false)?;
        let predicted = s
            .scores
            .f_gather(1, &order, false)?
            .f_masked_fill(&real.f_logical_not()?, 0.0)?;
        let y = s.labels.f_gather(1, &order, false)?;
        let (ideal, _) = s.labels.f_sort_stable(true, 1, true)?;

        let y_diffs = pair_differences(&y)?;
        let mut pairs = pair_and(&real, &real)?;
        if self.weighting != LambdaWeighting::NdcgLoss1 {
            pairs = pairs.f_logical_and(&y_diffs.f_gt(0.0)?)?;
        }
        let top = self.k.map_or(length, |k| (k as i64).min(length));
        let within = Tensor::f_arange(length, (Kind::Int64, s.scores.device()))?
            .f_lt(top)?
            .f_unsqueeze(0)?;
        pairs = pairs.f_logical_and(&pair_and(&within, &within)?)?;

        let d = discounts(length, &y)?;
        let max_dcg = ideal
            .f_exp2()?
            .f_sub_scalar(1.0)?
            .f_div(&d)?
            .f_narrow(1, 0, top)?
            .f_sum_dim_intlist([1i64].as_slice(), true, None)?
            .f_clamp_min(EPS)?;
        let g = y.f_exp2()?.f_sub_scalar(1.0)?.f_div(&max_dcg)?;
        let weights = self.pair_weights(&g, &d, &y)?;

        let diffs = pair_differences(&predicted)?.f_clamp(-1e8, 1e8)?;
        let mut probabilities = diffs
            .f_mul_scalar(self.sigma)?
            .f_sigmoid()?
            .f_clamp_min(EPS)?;
        if let Some(w) = weights {
            probabilities = probabilities.f_pow(&w)?;
        }
        let logs = probabilities.f_clamp_min(EPS)?.f_log()?;
        let logs = if self.binary_log {
            logs.f_div_scalar(std::f64::consts::LN_2)?
        } else {
            logs
        };
        let total = logs
            .f_where_scalarother(&pairs, 0.0)?
            .f_sum(None)?
            .f_neg()?;
        let count = match self.reduction {
            Reduction::Sum => 1,
            Reduction::Mean => pairs.f_sum(Kind::Int64)?.f_int64_value(&[])?,
        };
        Ok((total, count))
    }
}

impl LambdaLoss {
    /// `B × L × L` weights of the pairs of predicted positions (`None`: all 1), from the gains
    /// `g`, the discounts `d` and the labels `y` in predicted order.
    fn pair_weights(&self, g: &Tensor, d: &Tensor, y: &Tensor) -> Result<Option<Tensor>> {
        let lambda_rank = || -> Result<Tensor> {
            let inverse = d.f_reciprocal()?.f_unsqueeze(0)?;
            Ok(pair_differences(&inverse)?
                .f_abs()?
                .f_mul(&pair_differences(g)?.f_abs()?)?)
        };
        let ndcg_loss2 = || -> Result<Tensor> {
            let length = d.size()[0];
            let positions = Tensor::f_arange(length, (Kind::Int64, d.device()))?;
            let gaps = pair_differences(&positions.f_unsqueeze(0)?)?
                .f_abs()?
                .f_squeeze_dim(0)?;
            // 1/D(gap) − 1/D(gap + 1) with D(n) = log2(1 + n); the diagonal is 0.
            let inverse = d.f_reciprocal()?;
            let near = inverse
                .f_index_select(0, &gaps.f_sub_scalar(1)?.f_clamp_min(0)?.f_flatten(0, -1)?)?;
            let far = inverse.f_index_select(0, &gaps.f_flatten(0, -1)?)?;
            let deltas = near
                .f_sub(&far)?
                .f_abs()?
                .f_view([length, length])?
                .f_where_scalarother(&gaps.f_ne(0)?, 0.0)?;
            Ok(deltas
                .f_unsqueeze(0)?
                .f_mul(&pair_differences(g)?.f_abs()?)?)
        };
        Ok(Some(match self.weighting {
            LambdaWeighting::Uniform => return Ok(None),
            LambdaWeighting::NdcgLoss1 => g.f_div(d)?.f_unsqueeze(2)?,
            LambdaWeighting::NdcgLoss2 => ndcg_loss2()?,
            LambdaWeighting::LambdaRank => lambda_rank()?,
            LambdaWeighting::NdcgLoss2PlusPlus { mu } => {
                ndcg_loss2()?.f_mul_scalar(mu)?.f_add(&lambda_rank()?)?
            }
            LambdaWeighting::LabelDifference => pair_differences(y)?.f_abs()?,
            LambdaWeighting::SquaredLabelDifference => pair_differences(&y.f_square()?)?.f_abs()?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::listwise::fixture;

    fn from_case(case: &serde_json::Value) -> LambdaLoss {
        let p = &case["params"];
        let mu = p["mu"].as_f64().unwrap();
        let weighting = match p["scheme"].as_str().unwrap() {
            "none" => LambdaWeighting::Uniform,
            "ndcgLoss1" => LambdaWeighting::NdcgLoss1,
            "ndcgLoss2" => LambdaWeighting::NdcgLoss2,
            "lambdaRank" => LambdaWeighting::LambdaRank,
            "ndcgLoss2PP" => LambdaWeighting::NdcgLoss2PlusPlus { mu },
            "rankNetWeightedByGTDiff" => LambdaWeighting::LabelDifference,
            "rankNetWeightedByGTDiffPowed" => LambdaWeighting::SquaredLabelDifference,
            other => panic!("unknown scheme {other}"),
        };
        LambdaLoss {
            weight: 1.0,
            weighting,
            k: p["k"].as_u64().map(|k| k as usize),
            sigma: p["sigma"].as_f64().unwrap(),
            reduction: match p["reduction"].as_str().unwrap() {
                "sum" => Reduction::Sum,
                _ => Reduction::Mean,
            },
            binary_log: p["log"] == "binary",
        }
    }

    #[test]
    fn lambdaloss_matches_allrank_for_every_weighting() {
        fixture::check("list-lambdaloss", 1e-6, |case| Box::new(from_case(case)));
    }
}
