//! The runtime of a run, from its `FabricConfigurationConfig`: device, precision (parameter dtype,
//! autocast, loss scaling), float32 matmul precision, threads, determinism and the
//! run's random generators.

mod autocast;
mod cpu;
mod cuda;
mod device;
mod ffi;
mod generators;
pub mod memory;
mod precision;
mod scaler;
mod setup;

pub use autocast::*;
pub use cpu::*;
pub use cuda::*;
pub use device::*;
pub use ffi::InferenceMode;
pub use generators::*;
pub use precision::*;
pub use scaler::*;
pub use setup::*;
