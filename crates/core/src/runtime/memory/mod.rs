//! Memory probes (one interface; CUDA and CPU backends, and the simulated device of
//! [`crate::batching::SimulatedDevice`]) and the CPU tensor cache.

mod cpu;
mod cuda;
mod probe;

pub use crate::error::is_out_of_memory;
pub use cpu::*;
pub use cuda::*;
pub use probe::*;
