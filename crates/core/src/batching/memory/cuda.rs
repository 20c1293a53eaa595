//! CUDA memory through libtorch's caching allocator (`cpp/memory.cpp`): peak and current
//! allocated bytes, reserved bytes, device free memory, peak reset and cache emptying.

use std::ffi::{c_char, c_int, CStr};

use super::base::MemoryProbe;
use crate::error::TorchMessage;
use crate::{Error, Result};

extern "C" {
    fn xpm_cuda_memory(device: c_int, out: *mut u64) -> *mut c_char;
    fn xpm_cuda_reset_peak(device: c_int) -> *mut c_char;
    fn xpm_cuda_empty_cache() -> *mut c_char;
    fn xpm_free_message(message: *mut c_char);
}

/// Turns the shim's message (null on success) into a result.
fn checked(message: *mut c_char) -> Result<()> {
    if message.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null result is a NUL-terminated string malloc'ed by the shim, ours to free.
    let text = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    unsafe { xpm_free_message(message) };
    Err(tch::TchError::Torch(text).into())
}

/// One reading of the allocator of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaMemoryStats {
    /// Bytes held by tensors now.
    pub allocated: u64,
    /// Highest `allocated` since the last peak reset.
    pub peak_allocated: u64,
    /// Bytes the caching allocator holds (allocated or cached).
    pub reserved: u64,
    /// Free bytes on the device, outside the cache.
    pub device_free: u64,
    /// The device's total memory.
    pub device_total: u64,
}

/// Reads the allocator statistics of CUDA device `device`, without checking first that CUDA is
/// there (the shim reports that).
///
/// # Errors
/// libtorch's error, e.g. no CUDA accelerator registered.
pub fn cuda_memory_stats(device: usize) -> Result<CudaMemoryStats> {
    let index = c_int::try_from(device)
        .map_err(|_| Error::Torch(TorchMessage(format!("no CUDA device {device}"))))?;
    let mut out = [0u64; 5];
    // SAFETY: `out` has the five slots the shim writes.
    checked(unsafe { xpm_cuda_memory(index, out.as_mut_ptr()) })?;
    Ok(CudaMemoryStats {
        allocated: out[0],
        peak_allocated: out[1],
        reserved: out[2],
        device_free: out[3],
        device_total: out[4],
    })
}

/// The memory of one CUDA device as libtorch's caching allocator sees it.
#[derive(Debug, Clone)]
pub struct CudaMemory {
    device: c_int,
}

impl CudaMemory {
    /// A probe of CUDA device `device`.
    ///
    /// # Errors
    /// When CUDA is not available or there is no such device.
    pub fn new(device: usize) -> Result<Self> {
        let count = if tch::Cuda::is_available() {
            tch::Cuda::device_count()
        } else {
            0
        };
        if count == 0 {
            return Err(Error::Torch(TorchMessage(
                "CUDA is not available (no GPU, no driver, or a libtorch without CUDA), so CUDA \
                 memory cannot be probed; run on a CUDA machine or use the CPU memory probe"
                    .into(),
            )));
        }
        let index = c_int::try_from(device)
            .ok()
            .filter(|d| i64::from(*d) < count);
        let Some(device) = index else {
            return Err(Error::Torch(TorchMessage(format!(
                "no CUDA device {device}: this machine has {count}"
            ))));
        };
        Ok(CudaMemory { device })
    }

    fn stats(&self) -> Result<CudaMemoryStats> {
        cuda_memory_stats(self.device as usize)
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
        // SAFETY: plain call; the shim catches every exception.
        checked(unsafe { xpm_cuda_reset_peak(self.device) })
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
        // SAFETY: plain call; the shim catches every exception.
        checked(unsafe { xpm_cuda_empty_cache() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_cuda_the_probe_says_so() {
        if tch::Cuda::is_available() {
            return;
        }
        let err = CudaMemory::new(0).unwrap_err().to_string();
        assert!(err.contains("CUDA is not available"), "{err}");
        // The shim itself reports the missing accelerator as an error, not a crash.
        let err = cuda_memory_stats(0).unwrap_err();
        assert_eq!(err.code(), "ERR_TORCH");
        // SAFETY: plain calls; the shim catches every exception.
        assert!(checked(unsafe { xpm_cuda_empty_cache() }).is_err());
        assert!(checked(unsafe { xpm_cuda_reset_peak(0) }).is_err());
    }

    #[test]
    #[ignore = "needs a CUDA device: run with --ignored there"]
    fn with_cuda_the_peak_follows_an_allocation() {
        let mut probe = CudaMemory::new(0).unwrap();
        probe.empty_cache().unwrap();
        probe.reset_peak().unwrap();
        let start = probe.allocated_bytes().unwrap();
        let t = tch::Tensor::f_ones([1 << 24], (tch::Kind::Float, tch::Device::Cuda(0))).unwrap();
        assert!(probe.peak_bytes().unwrap() >= start + (1 << 26));
        drop(t);
        assert!(probe.free_bytes().unwrap() > 0);
    }
}
