//! Optimizers written over tensors so their whole state is ours to save and restore.

mod adam;

pub use adam::*;
