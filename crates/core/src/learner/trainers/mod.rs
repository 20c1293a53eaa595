//! Trainers: how one optimizer step's gradients are produced.

mod evaluation;
mod loss;
mod micro;
mod multiple;
#[cfg(test)]
mod slate_tests;

pub(crate) use evaluation::*;
pub(crate) use loss::*;
pub(crate) use micro::*;
pub(crate) use multiple::*;

use tch::Tensor;

use super::TrainerContext;
use crate::models::Model;
use crate::Result;

/// Produces the gradients of one optimizer step and records its metrics.
pub(crate) trait Trainer: Send {
    /// Takes the next batch(es), runs forward and backward; returns the (detached) loss that
    /// was backpropagated.
    fn process_step(&mut self, model: &dyn Model, ctx: &mut TrainerContext) -> Result<Tensor>;

    /// Prepares what depends on memory before the first step (the predictive batcher's
    /// probes); runs again on resume.
    ///
    /// # Errors
    /// A probe's error.
    fn prepare(&mut self, _model: &dyn Model, _ctx: &mut TrainerContext) -> Result<()> {
        Ok(())
    }

    /// Where its data stands, for checkpoints.
    fn state(&self) -> serde_json::Value;

    /// Continues from a saved [`Trainer::state`].
    fn restore(&mut self, state: &serde_json::Value) -> Result<()>;
}
