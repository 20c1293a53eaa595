//! Memory probes: one interface, three backends.

mod base;
mod cpu;
mod cuda;
mod simulated;

pub use base::*;
pub use cpu::*;
pub use cuda::*;
pub use simulated::*;
