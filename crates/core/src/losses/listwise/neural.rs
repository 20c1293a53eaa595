//! NeuralNDCG (Pobrotyn & Białobrzeski, 2021), deterministic variant, as allRank implements it.

use tch::{Kind, Tensor};

use super::{pair_and, pair_or, ListwiseLoss, Slates, EPS};
use crate::Result;

/// Sinkhorn scaling: at most this many row-then-column normalisations...
const SINKHORN_ITERATIONS: usize = 50;
/// ...stopping once every row and column sums to 1 within this.
const SINKHORN_TOLERANCE: f64 = 1e-6;

/// NeuralNDCG: minus the NDCG@k of each slate where sorting is relaxed by NeuralSort (a
/// row-stochastic matrix at `temperature`, made doubly stochastic by Sinkhorn scaling) applied to
/// the gains. allRank averages over the slates that have a relevant document.
#[derive(Debug, Clone, PartialEq)]
pub struct NeuralNdcg {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// NeuralSort's temperature (a sharper sort as it falls).
    pub temperature: f64,
    /// Gains `2^y − 1` (true) or `y`.
    pub powered_relevancies: bool,
    /// Cut-off of the NDCG (the slate length when `None`).
    pub k: Option<usize>,
}

impl ListwiseLoss for NeuralNdcg {
    fn name(&self) -> &'static str {
        "list-neural-ndcg"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    /// The summed negative NDCG of the slates with a relevant document, with their count.
    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)> {
        let s = Slates::new(self.name(), scores, labels, mask)?;
        let n = s.length;
        let k = self.k.map_or(n, |k| (k as i64).min(n));
        let either_padded = pair_or(&s.padded, &s.padded)?;
        let both_padded = pair_and(&s.padded, &s.padded)?;
        let sort = neural_sort(&s, self.temperature, &either_padded, &both_padded)?;
        let permutation = sinkhorn(&sort, &either_padded, &both_padded)?;

        let gains = if self.powered_relevancies {
            s.labels.f_exp2()?.f_sub_scalar(1.0)?
        } else {
            s.labels.shallow_clone()
        };
        let discounts = Tensor::f_arange(n, (s.scores.kind(), s.scores.device()))?
            .f_add_scalar(2.0)?
            .f_log2()?
            .f_reciprocal()?;
        let sorted_gains = permutation
            .f_matmul(&gains.f_unsqueeze(2)?)?
            .f_squeeze_dim(2)?;
        let dcg = sorted_gains
            .f_mul(&discounts)?
            .f_narrow(1, 0, k)?
            .f_sum_dim_intlist([1i64].as_slice(), false, None)?;
        let (ideal, _) = s.labels.f_sort_stable(true, 1, true)?;
        let ideal_gains = if self.powered_relevancies {
            ideal.f_exp2()?.f_sub_scalar(1.0)?
        } else {
            ideal
        };
        let idcg = ideal_gains
            .f_mul(&discounts)?
            .f_cumsum(1, None)?
            .f_select(1, k - 1)?;
        let counted = idcg.f_ne(0.0)?;
        let ndcg = dcg
            .f_div(&idcg.f_add_scalar(EPS)?)?
            .f_where_scalarother(&counted, 0.0)?;
        let count = counted.f_sum(Kind::Int64)?.f_int64_value(&[])?;
        Ok((ndcg.f_sum(None)?.f_neg()?, count))
    }
}

/// NeuralSort's `B × L × L` relaxed permutation matrices: row `r` is a softmax over documents of
/// how likely each is at rank `r`; padded rows and columns are set apart.
fn neural_sort(
    s: &Slates,
    temperature: f64,
    either_padded: &Tensor,
    both_padded: &Tensor,
) -> Result<Tensor> {
    let n = s.length;
    let kind = s.scores.kind();
    let device = s.scores.device();
    let x = s.scores.f_masked_fill(&s.padded, 0.0)?.f_unsqueeze(2)?;
    let distances = x
        .f_sub(&x.f_permute([0, 2, 1])?)?
        .f_abs()?
        .f_masked_fill(either_padded, 0.0)?;
    // Each row's sum of distances, repeated along the row (allRank's product with a matrix of
    // ones, kept for its float32 rounding).
    let ones = Tensor::f_ones([n, n], (kind, device))?;
    let row_sums = distances.f_matmul(&ones)?;
    // Rank r of a list of m real documents weighs scores by m + 1 − 2r (0 past the list).
    let real_count = s
        .real
        .f_sum_dim_intlist([1i64].as_slice(), true, Kind::Int64)?;
    let ranks = Tensor::f_arange_start(1, n + 1, (Kind::Int64, device))?.f_unsqueeze(0)?;
    let scaling = real_count
        .f_add_scalar(1)?
        .f_sub(&ranks.f_mul_scalar(2)?)?
        .f_where_scalarother(&ranks.f_le_tensor(&real_count)?, 0)?
        .f_to_kind(kind)?;
    let weighted = x.f_matmul(&scaling.f_unsqueeze(1)?)?;
    let logits = weighted
        .f_sub(&row_sums)?
        .f_permute([0, 2, 1])?
        .f_masked_fill(either_padded, f64::NEG_INFINITY)?
        .f_masked_fill(both_padded, 1.0)?;
    Ok(logits.f_div_scalar(temperature)?.f_softmax(-1, None)?)
}

/// Sinkhorn scaling of `matrix` towards a doubly stochastic matrix, padded rows and columns 0.
fn sinkhorn(matrix: &Tensor, either_padded: &Tensor, both_padded: &Tensor) -> Result<Tensor> {
    let mut m = matrix
        .f_masked_fill(either_padded, 0.0)?
        .f_masked_fill(both_padded, 1.0)?;
    let sums = |m: &Tensor, dim: i64| -> Result<Tensor> {
        Ok(m.f_sum_dim_intlist([dim].as_slice(), true, None)?)
    };
    let off_one = |sums: Tensor| -> Result<f64> {
        Ok(sums
            .f_sub_scalar(1.0)?
            .f_abs()?
            .f_max()?
            .f_double_value(&[])?)
    };
    for _ in 0..SINKHORN_ITERATIONS {
        m = m.f_div(&sums(&m, 1)?.f_clamp_min(EPS)?)?;
        m = m.f_div(&sums(&m, 2)?.f_clamp_min(EPS)?)?;
        if off_one(sums(&m, 2)?)? < SINKHORN_TOLERANCE
            && off_one(sums(&m, 1)?)? < SINKHORN_TOLERANCE
        {
            break;
        }
    }
    Ok(m.f_masked_fill(either_padded, 0.0)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::listwise::fixture;

    /// allRank computes NeuralNDCG in float32 only; so do these cases.
    #[test]
    fn neural_ndcg_matches_allrank_in_float32() {
        fixture::check("list-neural-ndcg", 1e-5, |case| {
            let p = &case["params"];
            Box::new(NeuralNdcg {
                weight: 1.0,
                temperature: p["temperature"].as_f64().unwrap(),
                powered_relevancies: p["powered"].as_bool().unwrap(),
                k: p["k"].as_u64().map(|k| k as usize),
            })
        });
    }

    #[test]
    fn a_sharp_sort_gives_the_exact_ndcg() {
        // Scores far apart: NeuralSort is a permutation and the loss is minus the NDCG.
        let scores = Tensor::from_slice(&[30.0f64, 10.0, 20.0, 0.0]).view([1, 4]);
        let labels = Tensor::from_slice(&[0.0f64, 2.0, 1.0, 0.0]).view([1, 4]);
        let mask = Tensor::from_slice(&[true, true, true, false]).view([1, 4]);
        let loss = NeuralNdcg {
            weight: 1.0,
            temperature: 0.1,
            powered_relevancies: true,
            k: None,
        };
        let (sum, count) = loss.sum(&scores, &labels, &mask).unwrap();
        // ranked grades 0, 1, 2
        let dcg = 1.0 / 3f64.log2() + 3.0 / 2.0;
        let idcg = 3.0 + 1.0 / 3f64.log2();
        assert_eq!(count, 1);
        assert!((sum.double_value(&[]) + dcg / idcg).abs() < 1e-9);
    }
}
