//! Losses. Each returns the **sum** over its items; the trainer divides by the whole batch's
//! item count, so splitting a batch into micro-batches leaves the gradient unchanged.

mod base;
mod pairwise;

pub use base::*;
pub use pairwise::*;
