//! Micro-batching: cost formulas, the memory cost model, packers, memory probes and batchers.

mod batcher;
mod cost;
mod dims;
mod formula;
mod lstsq;
mod packers;
mod simulated;

pub use batcher::*;
pub use cost::*;
pub use dims::*;
pub use formula::*;
pub use packers::*;
pub use simulated::*;
