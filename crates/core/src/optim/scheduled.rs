//! [`Optimizers`]: all the optimizers of a run with their optional learning-rate schedules,
//! stepped, skipped, saved and restored together.

use tch::Tensor;

use super::{zero_grad, Optimizer, Schedule};
use crate::Result;

/// One optimizer with its optional schedule.
pub struct ScheduledOptimizer {
    /// The optimizer.
    pub optimizer: Box<dyn Optimizer>,
    /// Multiplies the base learning rate at each step.
    pub schedule: Option<Box<dyn Schedule + Send>>,
}

/// All the optimizers of a run, stepped together.
pub struct Optimizers {
    entries: Vec<ScheduledOptimizer>,
    steps: u64,
}

impl Optimizers {
    /// Optimizers that have taken no step yet.
    pub fn new(entries: Vec<ScheduledOptimizer>) -> Self {
        Optimizers { entries, steps: 0 }
    }

    /// Clears every optimized parameter's gradient.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn zero_grad(&self) -> Result<()> {
        self.entries
            .iter()
            .try_for_each(|e| zero_grad(e.optimizer.parameters()))
    }

    /// The learning rate each optimizer uses at the coming step.
    pub fn learning_rates(&self) -> Vec<f64> {
        self.entries
            .iter()
            .map(|e| {
                e.optimizer.base_lr() * e.schedule.as_ref().map_or(1.0, |s| s.factor(self.steps))
            })
            .collect()
    }

    /// Steps every optimizer at its scheduled learning rate, then advances the schedules;
    /// returns the learning rates used.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn step(&mut self) -> Result<Vec<f64>> {
        let rates = self.learning_rates();
        for (entry, lr) in self.entries.iter_mut().zip(&rates) {
            entry.optimizer.step(*lr)?;
        }
        self.steps += 1;
        Ok(rates)
    }

    /// Leaves the parameters alone this step (a loss scaler found non-finite gradients) but
    /// advances the schedules as a step would; returns the learning rates of the skipped step.
    pub fn skip(&mut self) -> Vec<f64> {
        let rates = self.learning_rates();
        self.steps += 1;
        rates
    }

    /// The state of every optimizer (tensors and step count) and the schedules' step.
    pub fn state(&self) -> (Vec<Vec<Tensor>>, u64) {
        (
            self.entries.iter().map(|e| e.optimizer.state()).collect(),
            self.steps,
        )
    }

    /// Continues from a saved [`Optimizers::state`].
    ///
    /// # Errors
    /// [`crate::Error::Checkpoint`] when it does not fit these optimizers; a libtorch error.
    pub fn restore(&mut self, saved: Vec<Vec<Tensor>>, steps: u64) -> Result<()> {
        if saved.len() != self.entries.len() {
            return Err(crate::Error::checkpoint(
                "optimizers",
                format!(
                    "the checkpoint has {} optimizers, the configuration {}",
                    saved.len(),
                    self.entries.len()
                ),
            ));
        }
        for (entry, tensors) in self.entries.iter_mut().zip(saved) {
            entry.optimizer.restore(tensors)?;
        }
        self.steps = steps;
        Ok(())
    }

    /// Each optimizer's parameters, for gradient hooks.
    pub fn parameter_groups(&self) -> impl Iterator<Item = &[tch::Tensor]> {
        self.entries.iter().map(|e| e.optimizer.parameters())
    }
}
