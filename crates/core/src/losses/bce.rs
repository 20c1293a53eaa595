//! Binary cross-entropy on log-probabilities (the reference's `BCEWithLogLoss`).

use tch::Tensor;

use crate::Result;

/// `ln(1 − eˣ)` for `x ≤ 0`, without the cancellation of the naive formula: `ln(−expm1(x))`
/// above `−ln 2`, `ln1p(−eˣ)` below.
///
/// # Errors
/// A libtorch error.
pub fn log1mexp(x: &Tensor) -> Result<Tensor> {
    let near_zero = x.f_gt(-std::f64::consts::LN_2)?;
    let small = x.f_expm1()?.f_neg()?.f_log()?;
    let large = x.f_exp()?.f_neg()?.f_log1p()?;
    Ok(small.f_where_self(&near_zero, &large)?)
}

/// Summed binary cross-entropy of the probabilities `exp(log_probs)` against `targets` in
/// [0, 1], computed from the log-probabilities: `Σ −t·lp − (1 − t)·ln(1 − e^lp)`. It is the
/// *sum*; the reference's `BCEWithLogLoss` is this divided by the number of elements.
///
/// The gradient w.r.t. `log_probs` is the reference's custom backward,
/// `−t + (1 − t)·e^lp / max(1 − e^lp, 1e−12)`, with `1 − e^lp` taken as `−expm1(lp)`. It is
/// written by hand rather than left to autograd because autograd through [`log1mexp`] gives
/// NaN at `lp = 0` (the unselected branch's `0/0`) where the reference's clamp gives a finite
/// value, and `0·∞` at `lp = −∞`; no gradient flows to `targets`.
///
/// # Errors
/// A libtorch error, e.g. when the shapes differ.
pub fn bce_with_log_probabilities(log_probs: &Tensor, targets: &Tensor) -> Result<Tensor> {
    let lp = log_probs.detach();
    let t = targets.f_to_kind(lp.kind())?.f_detach()?;
    let not_t = t.f_neg()?.f_add_scalar(1.0)?;

    // Terms whose factor is exactly zero are dropped, so that 0·∞ (a positive at lp = −∞ or a
    // negative at lp = 0) counts as 0 and not NaN.
    let positive = t
        .f_mul(&lp)?
        .f_neg()?
        .f_where_scalarother(&t.f_ne(0.0)?, 0.0)?;
    let negative = not_t
        .f_mul(&log1mexp(&lp)?)?
        .f_neg()?
        .f_where_scalarother(&not_t.f_ne(0.0)?, 0.0)?;
    let value = positive.f_add(&negative)?.f_sum(None)?;

    let one_minus_p = lp.f_expm1()?.f_neg()?.f_clamp_min(1e-12)?;
    let grad = lp.f_exp()?.f_div(&one_minus_p)?.f_mul(&not_t)?.f_sub(&t)?;
    // value + (s − s.detach()) carries `grad` backwards and adds exactly 0 forwards; infinite
    // log-probabilities are left out of `s`, whose gradient there is 0 anyway.
    let finite = log_probs.f_where_scalarother(&lp.f_isfinite()?, 0.0)?;
    let s = grad.f_mul(&finite)?.f_sum(None)?;
    let zero = s.f_sub(&s.f_detach()?)?;
    Ok(value.f_add(&zero)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Kind, Reduction};

    fn t64(v: &[f64]) -> Tensor {
        Tensor::from_slice(v)
    }

    fn vec(t: &Tensor) -> Vec<f64> {
        Vec::<f64>::try_from(t.to_kind(Kind::Double)).unwrap()
    }

    const LP: [f64; 6] = [-0.1, -0.5, -2.0, -0.3, -1.2, -0.05];
    const T: [f64; 6] = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0];

    #[test]
    fn matches_the_reference_golden_vector() {
        // python-reference.md §6: mean 1.2215394, gradient of the mean as below.
        let lp = t64(&LP).set_requires_grad(true);
        let mean = bce_with_log_probabilities(&lp, &t64(&T)).unwrap() / 6.0;
        assert!((mean.double_value(&[]) - 1.221_539_4).abs() < 1e-7);
        mean.backward();
        let expected = [
            -1.0 / 6.0,
            -1.0 / 6.0,
            -1.0 / 6.0,
            0.476_382_7,
            0.071_835_5,
            3.250_694_4,
        ];
        for (g, e) in vec(&lp.grad()).iter().zip(expected) {
            assert!((g - e).abs() < 1e-7, "{g} vs {e}");
        }
    }

    #[test]
    fn equals_bce_of_the_probabilities() {
        let lp = t64(&LP);
        let ours = bce_with_log_probabilities(&lp, &t64(&T)).unwrap();
        let theirs = lp
            .exp()
            .binary_cross_entropy(&t64(&T), None::<Tensor>, Reduction::Sum);
        assert!((ours.double_value(&[]) - theirs.double_value(&[])).abs() < 1e-12);
    }

    #[test]
    fn log1mexp_is_accurate_at_both_ends() {
        let got = vec(&log1mexp(&t64(&[-1e-12, -0.5, -1.0, -50.0])).unwrap());
        let want = [
            (1e-12f64).ln(),
            (1.0 - (-0.5f64).exp()).ln(),
            (1.0 - (-1.0f64).exp()).ln(),
        ];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= 1e-6 * w.abs(), "{g} vs {w}");
        }
        // ln(1 − e⁻⁵⁰) ≈ −e⁻⁵⁰, which 1 − e⁻⁵⁰ rounds away.
        assert!((got[3] / -(-50f64).exp() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn edge_log_probabilities_give_no_nan() {
        // A positive at lp = 0 and a negative at lp = −∞ are perfect: loss 0, finite gradient.
        let lp = t64(&[0.0, f64::NEG_INFINITY]).set_requires_grad(true);
        let loss = bce_with_log_probabilities(&lp, &t64(&[1.0, 0.0])).unwrap();
        assert_eq!(loss.double_value(&[]), 0.0);
        loss.backward();
        assert_eq!(vec(&lp.grad()), vec![-1.0, 0.0]);
        // A negative at lp = 0 costs +∞, but its gradient is the reference's clamped 1e12.
        let lp = t64(&[0.0]).set_requires_grad(true);
        let loss = bce_with_log_probabilities(&lp, &t64(&[0.0])).unwrap();
        assert_eq!(loss.double_value(&[]), f64::INFINITY);
        loss.backward();
        assert_eq!(vec(&lp.grad()), vec![1e12]);
    }
}
