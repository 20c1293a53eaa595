//! libtorch's fused Adam/AdamW kernel (`cpp/shim.cpp`), one call per step for all parameters.

use std::ffi::{c_char, c_int, c_void};

use tch::Tensor;

use crate::ffi::{checked, handles};
use crate::{Error, Result};

extern "C" {
    fn xpm_fused_adam(
        params: *const *mut c_void,
        grads: *const *mut c_void,
        exp_avgs: *const *mut c_void,
        exp_avg_sqs: *const *mut c_void,
        steps: *const *mut c_void,
        n: c_int,
        lr: f64,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        decoupled: c_int,
    ) -> *mut c_char;
}

/// Hyper-parameters of one fused Adam/AdamW step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdamStep {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub weight_decay: f64,
    pub eps: f64,
    /// AdamW's decoupled weight decay instead of Adam's L2 term.
    pub decoupled: bool,
}

/// libtorch's fused Adam/AdamW kernel over parameters with their gradients, moments and step
/// counters (already incremented for this step, as PyTorch does), all of the same length.
pub(crate) fn fused_adam(
    params: &[Tensor],
    grads: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    steps: &[Tensor],
    hyper: AdamStep,
) -> Result<()> {
    let n = params.len();
    if [grads.len(), exp_avgs.len(), exp_avg_sqs.len(), steps.len()]
        .iter()
        .any(|l| *l != n)
    {
        return Err(Error::Panic(
            "fused_adam: tensor lists of different lengths".into(),
        ));
    }
    let lists = [params, grads, exp_avgs, exp_avg_sqs, steps].map(handles);
    let n = c_int::try_from(n)
        .map_err(|_| Error::Unsupported("fused Adam over more than 2^31 tensors".into()))?;
    // SAFETY: every pointer is a live tch tensor handle (an `at::Tensor*`) for the whole call,
    // and the lists have `n` entries.
    let message = unsafe {
        xpm_fused_adam(
            lists[0].as_ptr(),
            lists[1].as_ptr(),
            lists[2].as_ptr(),
            lists[3].as_ptr(),
            lists[4].as_ptr(),
            n,
            hyper.lr,
            hyper.beta1,
            hyper.beta2,
            hyper.weight_decay,
            hyper.eps,
            c_int::from(hyper.decoupled),
        )
    };
    checked(message)
}
