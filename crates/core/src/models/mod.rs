//! Models the learner can train.

mod mlp;

pub use mlp::*;
