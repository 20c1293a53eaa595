//! The cache of large CPU tensor blocks (`cpp/cpu_cache.cpp`), alone in a binary of its own: the
//! cache is the whole process's, so nothing may allocate beside it.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tch::{Device, Kind, Tensor};
use xpm_torch_core::runtime::memory::{
    cpu_tensor_cache_bytes, install_cpu_tensor_cache, release_free_heap, HeapTrimmer,
};

fn floats(n: i64) -> Tensor {
    Tensor::f_empty([n], (Kind::Float, Device::Cpu)).unwrap()
}

fn address(t: &Tensor) -> usize {
    t.data_ptr() as usize
}

#[test]
fn freed_blocks_serve_the_next_request_of_their_size_and_go_back_when_idle() {
    install_cpu_tensor_cache().unwrap();
    install_cpu_tensor_cache().unwrap();
    release_free_heap();
    assert_eq!(cpu_tensor_cache_bytes(), 0);

    // About 3 MiB, not a whole number of pages: the block is rounded up to one.
    let n: i64 = (3 << 20) / 4 + 1000;
    let bytes = n as usize * 4;
    let first = floats(n);
    let block = address(&first);
    drop(first);
    let cached = cpu_tensor_cache_bytes();
    assert!(cached >= bytes && cached < bytes + 4096, "{cached}");

    // The next request of that size takes the same block, filled as asked.
    let zeros = Tensor::f_zeros([n], (Kind::Float, Device::Cpu)).unwrap();
    assert_eq!(address(&zeros), block);
    assert_eq!(cpu_tensor_cache_bytes(), 0);
    assert_eq!(zeros.sum(Kind::Double).double_value(&[]), 0.0);
    drop(zeros);

    // A somewhat smaller request reuses it too; half the size gets a block of its own.
    let smaller = floats(n * 9 / 10);
    assert_eq!(address(&smaller), block);
    drop(smaller);
    let half = floats(n / 2);
    assert_ne!(address(&half), block);
    assert!(cpu_tensor_cache_bytes() >= bytes);

    // Small tensors are never cached.
    let before = cpu_tensor_cache_bytes();
    drop(floats(1000));
    assert_eq!(cpu_tensor_cache_bytes(), before);

    // A block nobody asked for during a whole step goes back to the system at the next.
    let mut steps = HeapTrimmer::new(Duration::from_secs(3600));
    steps.after_step();
    assert!(cpu_tensor_cache_bytes() >= bytes);
    steps.after_step();
    assert_eq!(cpu_tensor_cache_bytes(), 0);

    // The end of a run (its trimmer dropped) hands back everything, and so does emptying the
    // cache before memory is measured.
    drop(half);
    assert!(cpu_tensor_cache_bytes() > 0);
    drop(steps);
    assert_eq!(cpu_tensor_cache_bytes(), 0);
    drop(floats(n));
    assert!(cpu_tensor_cache_bytes() >= bytes);
    release_free_heap();
    assert_eq!(cpu_tensor_cache_bytes(), 0);
}
