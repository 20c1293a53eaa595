//! The [`Optimizer`] trait over one group of parameters, and helpers its implementations share
//! (restoring saved state, zeroing gradients).

use tch::Tensor;

use crate::Result;

/// An optimizer over one group of parameters.
pub trait Optimizer: Send {
    /// One update from the current gradients at learning rate `lr` (the scheduled one).
    ///
    /// # Errors
    /// A libtorch error.
    fn step(&mut self, lr: f64) -> Result<()>;

    /// The configured learning rate, before any schedule.
    fn base_lr(&self) -> f64;

    /// The optimized parameters.
    fn parameters(&self) -> &[Tensor];

    /// Everything the optimizer carries from step to step (moments, step counters, ...), in a
    /// fixed order.
    fn state(&self) -> Vec<Tensor>;

    /// Continues from a saved [`Optimizer::state`].
    ///
    /// # Errors
    /// A libtorch error, or [`crate::Error::Checkpoint`] when the tensors do not fit.
    fn restore(&mut self, tensors: Vec<Tensor>) -> Result<()>;
}

/// Copies saved tensors into live ones after checking that they fit.
///
/// # Errors
/// [`crate::Error::Checkpoint`] on a count or shape mismatch; a libtorch error.
pub fn copy_into(targets: &mut [Tensor], saved: Vec<Tensor>, what: &str) -> Result<()> {
    if targets.len() != saved.len() {
        return Err(crate::Error::checkpoint(
            what,
            format!("holds {} tensors, expected {}", saved.len(), targets.len()),
        ));
    }
    let _no_grad = tch::no_grad_guard();
    for (target, source) in targets.iter_mut().zip(saved) {
        if target.size() != source.size() {
            return Err(crate::Error::checkpoint(
                what,
                format!(
                    "a tensor of shape {:?} where {:?} was expected",
                    source.size(),
                    target.size()
                ),
            ));
        }
        target.f_copy_(&source.f_to_kind(target.kind())?)?;
    }
    Ok(())
}

/// Clears the gradients of `params` (kept allocated, set to zero).
///
/// # Errors
/// A libtorch error.
pub fn zero_grad(params: &[Tensor]) -> Result<()> {
    for p in params {
        let mut grad = p.grad();
        if grad.defined() {
            let _ = grad.f_detach_()?.f_zero_()?;
        }
    }
    Ok(())
}
