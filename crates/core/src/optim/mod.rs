//! Optimizers written over tensors so their whole state is ours to save and restore, the
//! learning-rate schedules, and the selection of parameters.

mod adafactor;
mod adam;
mod base;
#[cfg(test)]
mod fixtures;
mod fused_adam;
mod scheduled;
mod scheduler;
mod select;
mod sgd;

pub use adafactor::*;
pub use adam::*;
pub use base::*;
pub use scheduled::*;
pub use scheduler::*;
pub use select::*;
pub use sgd::*;
