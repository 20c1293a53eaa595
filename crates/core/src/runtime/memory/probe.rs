//! The memory probe interface, and recognising out-of-memory errors.

use crate::batching::cost::Dims;
use crate::{Error, Result};

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

/// Whether `err` is libtorch running out of memory: CUDA's allocator, cuBLAS's allocation
/// failure, cuDNN's not-supported status (how cuDNN reports oversized workspaces), or the CPU
/// allocator.
pub fn is_out_of_memory(err: &Error) -> bool {
    let Error::Torch(message) = err else {
        return false;
    };
    let text = message.0.as_str();
    (text.contains("CUDA") && text.contains("out of memory"))
        || text.contains("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.")
        || text.contains("DefaultCPUAllocator: can't allocate memory")
        || text.contains("CUBLAS_STATUS_ALLOC_FAILED")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torch(message: &str) -> Error {
        tch::TchError::Torch(message.to_string()).into()
    }

    #[test]
    fn the_four_libtorch_messages_are_out_of_memory() {
        for message in [
            "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)",
            "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a \
             non-contiguous input.",
            "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: \
             you tried to allocate 858993459200 bytes.",
            "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        ] {
            assert!(is_out_of_memory(&torch(message)), "{message}");
        }
    }

    #[test]
    fn other_errors_are_not() {
        assert!(!is_out_of_memory(&torch(
            "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
        )));
        assert!(!is_out_of_memory(&torch("CUDA error: device-side assert")));
        assert!(!is_out_of_memory(&torch("out of memory")));
        assert!(!is_out_of_memory(&Error::config("x", "CUDA out of memory")));
    }

    #[test]
    fn a_real_cpu_allocation_failure_is_recognised() {
        // An allocation no machine can satisfy: libtorch's CPU allocator refuses it.
        let err: Error = tch::Tensor::f_empty([1i64 << 40], (tch::Kind::Float, tch::Device::Cpu))
            .map(|_| ())
            .map_err(Error::from)
            .unwrap_err();
        assert!(is_out_of_memory(&err), "{err}");
    }
}
