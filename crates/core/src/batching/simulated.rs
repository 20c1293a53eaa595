//! A simulated device for tests and benchmarks: a capacity in bytes, a resident baseline, and a
//! true cost formula whose charge per micro-batch carries seeded multiplicative noise. A
//! micro-batch that does not fit fails with the very error libtorch raises on CUDA.

use std::sync::{Arc, Mutex, MutexGuard};

use super::cost::{CostModel, Dims};
use crate::error::TorchMessage;
use crate::rng::Rng;
use crate::runtime::memory::MemoryProbe;
use crate::{Error, Result};

/// What the simulated device has seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimulatedStats {
    /// Bytes charged by each micro-batch (or probe) that fitted, in order.
    pub charged: Vec<f64>,
    /// Out-of-memory errors raised.
    pub out_of_memory: usize,
    /// Cache emptyings requested.
    pub cache_emptied: usize,
}

#[derive(Debug)]
struct State {
    capacity: u64,
    resident: u64,
    truth: CostModel,
    noise: f64,
    rng: Rng,
    peak: u64,
    stats: SimulatedStats,
}

/// A shared handle on a simulated device: clones see the same device, so a test can keep one
/// while a batcher owns another.
#[derive(Debug, Clone)]
pub struct SimulatedDevice(Arc<Mutex<State>>);

impl SimulatedDevice {
    /// A device of `capacity` bytes with `resident` bytes always in use (weights, optimizer
    /// state), whose micro-batches cost `truth.predict(dims) · (1 + noise·u)` bytes with `u`
    /// uniform in [-1, 1) drawn from `seed`. `truth` must be fitted or have its coefficients set.
    pub fn new(capacity: u64, resident: u64, truth: CostModel, noise: f64, seed: u64) -> Self {
        SimulatedDevice(Arc::new(Mutex::new(State {
            capacity,
            resident,
            truth,
            noise,
            rng: Rng::new(seed),
            peak: resident,
            stats: SimulatedStats::default(),
        })))
    }

    fn state(&self) -> Result<MutexGuard<'_, State>> {
        self.0
            .lock()
            .map_err(|_| Error::Panic("the simulated device's lock is poisoned".into()))
    }

    /// What the device has seen so far.
    ///
    /// # Errors
    /// When a thread panicked while holding the device.
    pub fn stats(&self) -> Result<SimulatedStats> {
        Ok(self.state()?.stats.clone())
    }

    /// The noise-free cost of `dims`.
    ///
    /// # Errors
    /// When `dims` lacks a variable of the true formula.
    pub fn true_cost(&self, dims: &Dims) -> Result<f64> {
        self.state()?.truth.predict(dims)
    }

    /// Changes the bytes always in use (memory taken by something else than the batches).
    ///
    /// # Errors
    /// When a thread panicked while holding the device.
    pub fn set_resident(&self, bytes: u64) -> Result<()> {
        let mut s = self.state()?;
        s.resident = bytes;
        s.peak = s.peak.max(bytes);
        Ok(())
    }

    /// The capacity in bytes.
    ///
    /// # Errors
    /// When a thread panicked while holding the device.
    pub fn capacity(&self) -> Result<u64> {
        Ok(self.state()?.capacity)
    }
}

fn mib(bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 20)
}

impl MemoryProbe for SimulatedDevice {
    fn describe(&self) -> String {
        "simulated".into()
    }

    fn peak_bytes(&mut self) -> Result<u64> {
        Ok(self.state()?.peak)
    }

    fn reset_peak(&mut self) -> Result<()> {
        let mut s = self.state()?;
        s.peak = s.resident;
        Ok(())
    }

    fn allocated_bytes(&mut self) -> Result<u64> {
        Ok(self.state()?.resident)
    }

    fn free_bytes(&mut self) -> Result<u64> {
        let s = self.state()?;
        Ok(s.capacity.saturating_sub(s.resident))
    }

    fn empty_cache(&mut self) -> Result<()> {
        self.state()?.stats.cache_emptied += 1;
        Ok(())
    }

    fn charges_micro_batches(&self) -> bool {
        true
    }

    fn before_micro_batch(&mut self, dims: &Dims) -> Result<()> {
        let mut s = self.state()?;
        let clean = s.truth.predict(dims)?;
        let noise = s.noise;
        let factor = 1.0 + noise * s.rng.uniform_in(-1.0, 1.0);
        let cost = (clean * factor).max(0.0);
        let free = s.capacity.saturating_sub(s.resident) as f64;
        if cost > free {
            s.stats.out_of_memory += 1;
            let capacity = s.capacity as f64;
            return Err(Error::Torch(TorchMessage(format!(
                "CUDA out of memory. Tried to allocate {:.2} MiB (GPU 0; {:.2} GiB total capacity; \
                 {:.2} MiB already allocated; {:.2} MiB free; simulated device)",
                mib(cost),
                mib(capacity) / 1024.0,
                mib(s.resident as f64),
                mib(free)
            ))));
        }
        let in_use = s.resident + cost as u64;
        s.peak = s.peak.max(in_use);
        s.stats.charged.push(cost);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batching::formula::tests::square_formula;
    use crate::runtime::memory::is_out_of_memory;

    fn dims(bs: u64, l: u64) -> Dims {
        Dims::from([("bs".to_string(), bs), ("l".to_string(), l)])
    }

    pub(crate) fn truth(a: f64, b: f64, c: f64) -> CostModel {
        let mut m = CostModel::new(square_formula(), "bs", "simulated").unwrap();
        m.set_coefficients(vec![a, b, c, 0.0]).unwrap();
        m
    }

    #[test]
    fn a_batch_over_capacity_raises_libtorchs_out_of_memory() {
        let mut device = SimulatedDevice::new(10_000, 1_000, truth(1.0, 0.0, 0.0), 0.0, 7);
        device.before_micro_batch(&dims(2, 50)).unwrap();
        let err = device.before_micro_batch(&dims(4, 50)).unwrap_err();
        assert!(is_out_of_memory(&err), "{err}");
        assert!(err
            .to_string()
            .starts_with("libtorch error: CUDA out of memory. Tried to allocate"));
        let stats = device.stats().unwrap();
        assert_eq!(stats.out_of_memory, 1);
        assert_eq!(stats.charged, vec![5_000.0]);
    }

    #[test]
    fn the_peak_is_tracked_like_a_device() {
        let mut device = SimulatedDevice::new(1 << 30, 1_000, truth(0.0, 1.0, 10.0), 0.0, 7);
        device.reset_peak().unwrap();
        assert_eq!(device.peak_bytes().unwrap(), 1_000);
        device.before_micro_batch(&dims(2, 100)).unwrap();
        device.before_micro_batch(&dims(1, 100)).unwrap();
        assert_eq!(device.peak_bytes().unwrap(), 1_000 + 210);
        assert_eq!(device.allocated_bytes().unwrap(), 1_000);
        device.reset_peak().unwrap();
        assert_eq!(device.peak_bytes().unwrap(), 1_000);
        assert_eq!(device.free_bytes().unwrap(), (1 << 30) - 1_000);
    }

    #[test]
    fn noise_is_seeded_and_bounded() {
        let run = |seed| {
            let mut d = SimulatedDevice::new(1 << 40, 0, truth(1.0, 0.0, 0.0), 0.1, seed);
            for _ in 0..50 {
                d.before_micro_batch(&dims(1, 100)).unwrap();
            }
            d.stats().unwrap().charged
        };
        let (a, b, c) = (run(1), run(1), run(2));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|x| (9_000.0..=11_000.0).contains(x)));
        assert!(a.iter().any(|x| *x != 10_000.0));
    }
}
