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
