//! Losses. Each returns the **sum** over its items; the trainer divides by the whole batch's
//! item count, so splitting a batch into micro-batches leaves the gradient unchanged.
//!
//! The reference names a pairwise and a batchwise loss `CrossEntropyLoss`; the pairwise names
//! are re-exported here, the batchwise ones are reached as `losses::batchwise::…`.

mod base;
pub mod batchwise;
mod bce;
pub mod listwise;
#[cfg(test)]
mod output_types_tests;
pub mod pairwise;
mod set;

pub use base::*;
pub use bce::*;
pub use pairwise::*;
pub(crate) use set::*;
