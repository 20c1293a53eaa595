//! Measured memory of this process on CPU: the resident-set high-water mark (`VmHWM`), reset by
//! writing `5` to `/proc/self/clear_refs`; the budget comes from `MemAvailable`, or a cap on the
//! process's resident memory given at construction. Linux only.

use std::ffi::c_int;

use super::probe::MemoryProbe;
use crate::{Error, Result};

extern "C" {
    /// glibc: returns free heap memory to the operating system, so that memory freed by one
    /// probe does not hide the next probe's growth in resident memory.
    fn malloc_trim(pad: usize) -> c_int;
    fn xpm_cpu_cache_install() -> *mut std::ffi::c_char;
    fn xpm_cpu_cache_release_idle();
    fn xpm_cpu_cache_release();
    fn xpm_cpu_cache_bytes() -> usize;
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
        let resident = match self.cap {
            Some(_) => self.allocated_bytes()?,
            None => 0,
        };
        Ok(free_under_cap(available, self.cap, resident))
    }

    fn empty_cache(&mut self) -> Result<()> {
        release_free_heap();
        Ok(())
    }
}

/// Returns the blocks of the CPU tensor cache and the free memory of glibc's heap to the
/// operating system.
pub fn release_free_heap() {
    release_cpu_tensor_cache();
    // SAFETY: malloc_trim only walks glibc's own heap; any pad value is valid.
    unsafe { malloc_trim(0) };
}

/// Makes libtorch allocate large CPU tensors through the core's cache (`cpp/cpu_cache.cpp`):
/// a block freed at the end of a step is reused by the next step's request of its size instead
/// of being handed back and faulted in again. Idempotent.
///
/// # Errors
/// A libtorch error registering the allocator.
pub fn install_cpu_tensor_cache() -> Result<()> {
    // SAFETY: no arguments; the result is the shim's message convention.
    crate::ffi::checked(unsafe { xpm_cpu_cache_install() })
}

/// Hands the blocks of freed tensors the CPU cache holds back to the system (after a run, and
/// after scoring outside one, where no step would release them).
pub fn release_cpu_tensor_cache() {
    // SAFETY: a plain call; the cache takes its own lock.
    unsafe { xpm_cpu_cache_release() }
}

/// Hands back the cached tensor blocks no request took since the previous call: after a
/// training step, or a batch scored outside a run, so that the cache holds at most what the
/// last two asked for.
pub fn release_idle_cpu_tensors() {
    // SAFETY: a plain call; the cache takes its own lock.
    unsafe { xpm_cpu_cache_release_idle() }
}

/// Bytes of freed tensors the CPU cache holds for reuse.
pub fn cpu_tensor_cache_bytes() -> usize {
    // SAFETY: a read under the cache's lock.
    unsafe { xpm_cpu_cache_bytes() }
}

/// After each training step: hands back the cached tensor blocks the step did not ask for, and
/// trims glibc's heap at most once per `period`.
///
/// Large CPU tensors live in the core's cache (see [`install_cpu_tensor_cache`]): their blocks
/// are reused step after step, and only those idle for a whole step are unmapped. What remains
/// in glibc's heap (small tensors, the tokenizer's and Node's allocations) fragments as it is
/// freed; a trim walks the heap (milliseconds on a large one), hence the period.
#[derive(Debug)]
pub struct HeapTrimmer {
    period: std::time::Duration,
    last: Option<std::time::Instant>,
}

impl HeapTrimmer {
    /// A trimmer that trims at most once per `period`.
    pub fn new(period: std::time::Duration) -> Self {
        HeapTrimmer { period, last: None }
    }

    /// Whether a trim is due at `now` (the first always is); if so, counts it as done.
    pub fn due(&mut self, now: std::time::Instant) -> bool {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.period);
        if due {
            self.last = Some(now);
        }
        due
    }

    /// After a step: hands back the cached tensor blocks no request took during the step, and
    /// trims glibc's heap when due.
    pub fn after_step(&mut self) {
        release_idle_cpu_tensors();
        if self.due(std::time::Instant::now()) {
            // SAFETY: malloc_trim only walks glibc's own heap; any pad value is valid.
            unsafe { malloc_trim(0) };
        }
    }
}

impl Drop for HeapTrimmer {
    /// The run is over: nothing will ask for its blocks again.
    fn drop(&mut self) {
        release_cpu_tensor_cache();
    }
}

/// The free memory under a cap on the process's resident memory: what `available` allows and the
/// cap leaves beyond `resident`.
fn free_under_cap(available: u64, cap: Option<u64>, resident: u64) -> u64 {
    match cap {
        Some(cap) => available.min(cap.saturating_sub(resident)),
        None => available,
    }
}

// The measurements themselves are checked in tests/cpu_memory.rs, a process of their own: the
// resident memory and its high-water mark are the whole process's, which tests running beside
// them in one process would move.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_is_trimmed_at_most_once_per_period() {
        let start = std::time::Instant::now();
        let at = |ms: u64| start + std::time::Duration::from_millis(ms);
        let mut trimmer = HeapTrimmer::new(std::time::Duration::from_millis(1000));
        let due: Vec<bool> = [0, 10, 999, 1000, 1500, 2100, 2200]
            .into_iter()
            .map(|ms| trimmer.due(at(ms)))
            .collect();
        assert_eq!(due, vec![true, false, false, true, false, true, false]);
    }

    #[test]
    fn a_cap_limits_the_free_memory() {
        let gib = 1u64 << 30;
        assert_eq!(free_under_cap(4 * gib, None, gib), 4 * gib);
        assert_eq!(free_under_cap(4 * gib, Some(3 * gib), gib), 2 * gib);
        assert_eq!(free_under_cap(gib, Some(3 * gib), gib), gib);
        assert_eq!(free_under_cap(4 * gib, Some(gib / 2), gib), 0);
    }
}
