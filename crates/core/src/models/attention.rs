//! Scaled dot-product attention whose dropout comes from the run's generators.

use tch::{Kind, Tensor};

use crate::runtime::dropout_mask;
use crate::Result;

/// `softmax(q·kᵀ/√d + mask)·v` over `B × heads × T × d` tensors, attending where `keep` (a
/// boolean mask broadcastable to `B × heads × T × T`) is true, with dropout `p` on the attention
/// weights while training.
///
/// libtorch's fused kernel draws its dropout from the process-wide generator, which a run does
/// not own: with dropout, the same arithmetic (the kernel's math path) runs with a mask from the
/// run's generators instead; without, the fused kernel runs.
pub(crate) fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    keep: &Tensor,
    p: f64,
    training: bool,
) -> Result<Tensor> {
    if !training || p <= 0.0 {
        return Ok(Tensor::f_scaled_dot_product_attention(
            q,
            k,
            v,
            Some(keep),
            0.0,
            false,
            None,
            false,
        )?);
    }
    // Reduced-precision inputs (a forward under bf16 autocast) are computed in float32 and
    // rounded once, as libtorch's math path does by default: scores and softmax rounded to
    // bfloat16 lose most of what separates close attention weights.
    let kind = q.kind();
    if matches!(kind, Kind::BFloat16 | Kind::Half) {
        let up = |t: &Tensor| t.f_to_kind(Kind::Float);
        return Ok(attention(&up(q)?, &up(k)?, &up(v)?, keep, p, training)?.f_to_kind(kind)?);
    }
    // The math path as libtorch writes it: the scale on q (B·h·T·d) rather than on the scores
    // (B·h·T·T), and the padding as an additive bias, whose gradient is the scores' own.
    let head_dim = q.size().last().copied().unwrap_or(1).max(1);
    let bias = keep
        .f_zeros_like()?
        .f_to_kind(q.kind())?
        .f_masked_fill(&keep.f_logical_not()?, f64::NEG_INFINITY)?;
    let scores = q
        .f_mul_scalar(1.0 / (head_dim as f64).sqrt())?
        .f_matmul(&k.f_transpose(-2, -1)?)?
        .f_add(&bias)?;
    let weights = scores.f_softmax(-1, None::<Kind>)?;
    match dropout_mask(&weights, p, true)? {
        // (w·m)·v·s = (w·m·s)·v: the scale goes on the output, T/d times smaller than w.
        Some(mask) => Ok(weights
            .f_mul(&mask.keep)?
            .f_matmul(v)?
            .f_mul_scalar(mask.scale)?),
        None => Ok(weights.f_matmul(v)?),
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use tch::Device;

    use super::*;
    use crate::runtime::RunGenerators;

    /// `f` with the dropout masks of one seed.
    fn seeded<T>(f: impl FnOnce() -> T) -> T {
        let generators = Rc::new(RunGenerators::new(7, 0, Device::Cpu, false).unwrap());
        let _active = generators.activate();
        f()
    }

    #[test]
    fn reduced_precision_attention_computes_in_float32_and_rounds_once() {
        // As libtorch's own math path does for bfloat16 and half inputs (and PyTorch's
        // attention under autocast with dropout): scores, softmax and weighted sum in float32.
        tch::manual_seed(3);
        let draw = || Tensor::randn([2, 2, 6, 8], (Kind::Float, Device::Cpu));
        let (q, k, v) = (draw(), draw(), draw());
        let keep = Tensor::from_slice(&[true, true, true, true, false, false])
            .view([1, 1, 1, 6])
            .repeat([2, 1, 1, 1]);
        for kind in [Kind::BFloat16, Kind::Half] {
            let low = |t: &Tensor| t.to_kind(kind);
            let out = seeded(|| attention(&low(&q), &low(&k), &low(&v), &keep, 0.1, true).unwrap());
            let up = |t: &Tensor| low(t).to_kind(Kind::Float);
            let full = seeded(|| attention(&up(&q), &up(&k), &up(&v), &keep, 0.1, true).unwrap());
            assert_eq!(out.kind(), kind);
            assert!(
                out.equal(&full.to_kind(kind)),
                "{kind:?}: not float32 rounded once"
            );
        }
    }
}
