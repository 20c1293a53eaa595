//! Micro-batching: cost formulas, the memory cost model, packers, memory probes and batchers.

mod batcher;
mod cost;
mod formula;
mod lstsq;
pub mod memory;
mod packers;
mod polynomial;

pub use batcher::*;
pub use cost::*;
pub use formula::*;
pub use packers::*;
