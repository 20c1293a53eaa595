//! The memory probe interface.

use std::collections::BTreeMap;

use crate::Result;

/// Named dimensions of a batch (e.g. `bs`, `l`) and their values.
pub type Dims = BTreeMap<String, u64>;

/// Where memory is measured: a CUDA device, this process on CPU, or a simulated device.
pub trait MemoryProbe: Send {
    /// What is measured, for messages (`cuda:0`, `cpu`, `simulated`).
    fn describe(&self) -> String;

    /// Highest bytes in use since the last [`MemoryProbe::reset_peak`].
    ///
    /// # Errors
    /// When the backend cannot be read.
    fn peak_bytes(&mut self) -> Result<u64>;

    /// Starts a new peak measurement from what is in use now.
    ///
    /// # Errors
    /// When the backend cannot be reset.
    fn reset_peak(&mut self) -> Result<()>;

    /// Bytes in use now.
    ///
    /// # Errors
    /// When the backend cannot be read.
    fn allocated_bytes(&mut self) -> Result<u64>;

    /// Bytes that batches may still use (free on the device plus cached but unused).
    ///
    /// # Errors
    /// When the backend cannot be read.
    fn free_bytes(&mut self) -> Result<u64>;

    /// Returns cached memory to the device (or the operating system).
    ///
    /// # Errors
    /// When the backend refuses.
    fn empty_cache(&mut self) -> Result<()>;

    /// Whether [`MemoryProbe::before_micro_batch`] needs the micro-batch's dimensions; real
    /// backends measure instead and say no, so batchers skip computing them.
    fn charges_micro_batches(&self) -> bool {
        false
    }

    /// Called before each micro-batch (and probe) runs; a simulated device charges its cost
    /// here and fails as libtorch would when it does not fit.
    ///
    /// # Errors
    /// A simulated out-of-memory error.
    fn before_micro_batch(&mut self, _dims: &Dims) -> Result<()> {
        Ok(())
    }
}
