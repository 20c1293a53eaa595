//! Models the learner can train.

mod base;
mod mlp;

pub use base::*;
pub use mlp::*;
