//! Scoring and embedding outside a run go through the CPU tensor cache, handed back batch by
//! batch: through glibc, the freed tensors of each batch raised its mapping threshold and the
//! later batches' stayed in its heaps, so a model kept ~80 MiB more resident after embedding
//! 2,000 texts than after opening. Alone in a binary of its own: the cache is the whole
//! process's.
#![allow(clippy::unwrap_used)]

#[path = "support/demo_config.rs"]
mod demo_config;

use std::sync::Mutex;

use tch::{Device, Kind, Tensor};
use xpm_torch_core::data::ScoreInput;
use xpm_torch_core::models::{
    features_input, score_rows, Model, NamedParameter, OpenOptions, TrainedModel,
};
use xpm_torch_core::runtime::memory::{cpu_tensor_cache_bytes, release_free_heap};
use xpm_torch_core::Result;

const MIB: usize = 1 << 20;

/// Frees an activation of `k + 1` MiB at its `k`-th batch (a size no earlier batch freed, as
/// batches padded to their own longest text do), noting what the cache holds when each starts.
#[derive(Default)]
struct GrowingActivations {
    cached_at_start: Mutex<Vec<usize>>,
}

impl Model for GrowingActivations {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let mut seen = self.cached_at_start.lock().unwrap();
        let k = seen.len();
        seen.push(cpu_tensor_cache_bytes());
        let activation = Tensor::f_ones([((k + 1) * MIB / 4) as i64], (Kind::Float, Device::Cpu))?;
        drop(activation);
        Ok(Tensor::f_zeros([input.len()], (Kind::Float, Device::Cpu))?)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        Vec::new()
    }

    fn share(&mut self, _: &str, _: &str) -> Result<()> {
        Ok(())
    }
}

#[test]
fn opening_a_model_installs_the_cache_and_scoring_hands_it_back_batch_by_batch() {
    let config = demo_config::demo()["model"].to_string();
    let options = OpenOptions {
        weights: None,
        device: Device::Cpu,
        seed: 0,
        num_threads: None,
        precision: xpm_torch_core::runtime::Precision::True32,
    };
    let _opened = TrainedModel::open_with(&config, options).unwrap();
    drop(Tensor::f_ones([MIB as i64], (Kind::Float, Device::Cpu)).unwrap());
    assert!(
        cpu_tensor_cache_bytes() >= 4 * MIB,
        "a freed large tensor waits in the cache once a model is opened"
    );
    release_free_heap();

    let batches = 8;
    let input = features_input(&vec![0.0; batches * 3], batches, 3).unwrap();
    let model = GrowingActivations::default();
    score_rows(&model, Device::Cpu, &input, 1).unwrap();
    let seen = model.cached_at_start.into_inner().unwrap();
    assert_eq!(seen.len(), batches);
    // Batch k starts with at most batch k - 1's block (k MiB) cached, never the earlier ones'.
    for (k, &bytes) in seen.iter().enumerate() {
        assert!(
            bytes <= k * MIB + 4096,
            "batch {k} started with {bytes} bytes cached: {seen:?}"
        );
    }
    assert!(seen[batches - 1] >= (batches - 1) * MIB, "{seen:?}");
}
