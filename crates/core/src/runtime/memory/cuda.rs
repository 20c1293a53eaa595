//! CUDA memory through libtorch's caching allocator, read by the CUDA library
//! ([`crate::runtime::cuda_library`]): peak and current allocated bytes, reserved bytes, device
//! free memory, peak reset and cache emptying.

use super::probe::MemoryProbe;
pub use crate::runtime::CudaMemoryStats;
use crate::runtime::{cuda_library, CudaLibrary};
use crate::Result;

/// Reads the allocator statistics of CUDA device `device`.
///
/// # Errors
/// Why CUDA is unusable, or the CUDA runtime's error (no such device).
pub fn cuda_memory_stats(device: usize) -> Result<CudaMemoryStats> {
    library()?.memory(device)
}

fn library() -> Result<&'static CudaLibrary> {
    cuda_library().map_err(|reason| {
        tch::TchError::Torch(format!("CUDA memory cannot be probed: {reason}")).into()
    })
}

/// The memory of one CUDA device as libtorch's caching allocator sees it.
#[derive(Debug, Clone)]
pub struct CudaMemory {
    device: usize,
    library: &'static CudaLibrary,
}

impl CudaMemory {
    /// A probe of CUDA device `device`.
    ///
    /// # Errors
    /// When CUDA is not usable (saying why) or there is no such device.
    pub fn new(device: usize) -> Result<Self> {
        let library = library()?;
        let count = library.device_count();
        if device >= count {
            return Err(tch::TchError::Torch(format!(
                "no CUDA device {device}: this machine has {count}"
            ))
            .into());
        }
        Ok(CudaMemory { device, library })
    }

    fn stats(&self) -> Result<CudaMemoryStats> {
        self.library.memory(self.device)
    }
}

impl MemoryProbe for CudaMemory {
    fn describe(&self) -> String {
        format!("cuda:{}", self.device)
    }

    fn peak_bytes(&mut self) -> Result<u64> {
        Ok(self.stats()?.peak_allocated)
    }

    fn reset_peak(&mut self) -> Result<()> {
        self.library.reset_peak(self.device)
    }

    fn allocated_bytes(&mut self) -> Result<u64> {
        Ok(self.stats()?.allocated)
    }

    /// Free on the device plus what the cache holds unused: both are available to batches.
    fn free_bytes(&mut self) -> Result<u64> {
        let s = self.stats()?;
        Ok(s.device_free + s.reserved.saturating_sub(s.allocated))
    }

    fn empty_cache(&mut self) -> Result<()> {
        self.library.empty_cache()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_cuda_the_probe_says_why() {
        let Err(reason) = cuda_library() else {
            return;
        };
        let err = CudaMemory::new(0).unwrap_err();
        assert_eq!(err.code(), "ERR_TORCH");
        let text = err.to_string();
        assert!(
            text.contains("CUDA memory cannot be probed") && text.contains(&reason.to_string()),
            "{text}"
        );
        assert_eq!(cuda_memory_stats(0).unwrap_err().code(), "ERR_TORCH");
    }
}
