//! Measured memory of this process on CPU: the resident-set high-water mark (`VmHWM`), reset by
//! writing `5` to `/proc/self/clear_refs`; the budget comes from `MemAvailable`, or a cap on the
//! process's resident memory given at construction. Linux only.

use std::ffi::c_int;

use super::base::MemoryProbe;
use crate::{Error, Result};

extern "C" {
    /// glibc: returns free heap memory to the operating system, so that memory freed by one
    /// probe does not hide the next probe's growth in resident memory.
    fn malloc_trim(pad: usize) -> c_int;
}

const STATUS: &str = "/proc/self/status";
const CLEAR_REFS: &str = "/proc/self/clear_refs";
const MEMINFO: &str = "/proc/meminfo";

/// Resident memory of this process, measured through `/proc`.
#[derive(Debug, Clone)]
pub struct CpuMemory {
    cap: Option<u64>,
}

impl CpuMemory {
    /// A probe whose free memory is `MemAvailable`, further limited by `cap` bytes of resident
    /// memory for the whole process when given.
    ///
    /// # Errors
    /// When `/proc` cannot be read (not Linux, or a sandbox hiding it).
    pub fn new(cap: Option<u64>) -> Result<Self> {
        let probe = CpuMemory { cap };
        read_kib(STATUS, "VmHWM:")?;
        read_kib(MEMINFO, "MemAvailable:")?;
        Ok(probe)
    }
}

/// The value of the `key` line of a `/proc` file, in bytes (the files give kB).
fn read_kib(file: &str, key: &str) -> Result<u64> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib * 1024)
        .ok_or_else(|| Error::Io {
            path: file.to_string(),
            message: format!("no readable \"{key}\" line: measuring CPU memory needs Linux /proc"),
        })
}

impl MemoryProbe for CpuMemory {
    fn describe(&self) -> String {
        "cpu".into()
    }

    fn peak_bytes(&mut self) -> Result<u64> {
        read_kib(STATUS, "VmHWM:")
    }

    fn reset_peak(&mut self) -> Result<()> {
        std::fs::write(CLEAR_REFS, "5").map_err(|e| Error::io(CLEAR_REFS, e))
    }

    fn allocated_bytes(&mut self) -> Result<u64> {
        read_kib(STATUS, "VmRSS:")
    }

    fn free_bytes(&mut self) -> Result<u64> {
        let available = read_kib(MEMINFO, "MemAvailable:")?;
        Ok(match self.cap {
            Some(cap) => available.min(cap.saturating_sub(self.allocated_bytes()?)),
            None => available,
        })
    }

    fn empty_cache(&mut self) -> Result<()> {
        // SAFETY: malloc_trim only walks glibc's own heap; any pad value is valid.
        unsafe { malloc_trim(0) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind, Tensor};

    #[test]
    fn the_peak_grows_with_a_big_tensor() {
        let mut cpu = CpuMemory::new(None).unwrap();
        cpu.empty_cache().unwrap();
        cpu.reset_peak().unwrap();
        let start = cpu.allocated_bytes().unwrap();
        assert!(cpu.peak_bytes().unwrap() >= start);
        let bytes = 64i64 << 20;
        // Filled, so every page is really resident.
        let big = Tensor::f_full([bytes / 4], 1.0, (Kind::Float, Device::Cpu)).unwrap();
        let peak_with = cpu.peak_bytes().unwrap();
        drop(big);
        cpu.empty_cache().unwrap();
        assert!(
            peak_with >= start + (bytes as u64) * 9 / 10,
            "peak {peak_with} start {start}"
        );
        // The high-water mark stays after the tensor is freed (the kernel records it when the
        // memory is unmapped, a few pages short of the live reading), until the next reset.
        let peak_after = cpu.peak_bytes().unwrap();
        assert!(
            peak_after >= start + (bytes as u64) * 9 / 10,
            "peak after free {peak_after} start {start}"
        );
        cpu.reset_peak().unwrap();
        assert!(cpu.peak_bytes().unwrap() < peak_after);
    }

    #[test]
    fn a_cap_limits_the_free_memory() {
        let mut uncapped = CpuMemory::new(None).unwrap();
        let resident = uncapped.allocated_bytes().unwrap();
        let mut capped = CpuMemory::new(Some(resident + (100 << 20))).unwrap();
        let free = capped.free_bytes().unwrap();
        assert!(free <= 100 << 20, "{free}");
        assert!(uncapped.free_bytes().unwrap() > 0);
        let mut tiny = CpuMemory::new(Some(1)).unwrap();
        assert_eq!(tiny.free_bytes().unwrap(), 0);
        assert_eq!(tiny.describe(), "cpu");
    }
}
