//! The CPU memory probe on this process's real memory. One test in a binary of its own: the
//! resident memory and its high-water mark are the whole process's, so nothing may allocate
//! beside it.
#![allow(clippy::unwrap_used)]

use tch::{Device, Kind, Tensor};
use xpm_torch_core::runtime::memory::{CpuMemory, MemoryProbe};

#[test]
fn the_probe_measures_resident_memory_its_peak_and_a_cap() {
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

    // A cap below the resident memory leaves nothing (the arithmetic: cpu.rs's unit test).
    assert!(cpu.free_bytes().unwrap() > 0);
    let mut tiny = CpuMemory::new(Some(1)).unwrap();
    assert_eq!(tiny.free_bytes().unwrap(), 0);
    assert_eq!(tiny.describe(), "cpu");
}
