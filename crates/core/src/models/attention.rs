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
