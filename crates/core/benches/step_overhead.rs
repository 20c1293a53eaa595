//! Per-step overhead of the learner against the same forward, backward and optimizer calls
//! written directly against tch: an MLP 16→64→32→1, pairwise hinge loss, Adam, batches of 128
//! preference pairs gathered from a fixed feature matrix (the learner runs the demo's
//! configuration, `tests/support/demo_config.rs`).
//!
//! `cargo bench -p xpm-torch-core --bench step_overhead`; overhead per step =
//! (learner/500 − learner/1) / 499 − direct/500 / 500.
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::atomic::AtomicBool;

use criterion::{criterion_group, criterion_main, Criterion};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};
use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};

#[path = "../tests/support/demo_config.rs"]
mod demo_config;

const BATCH: i64 = 128;
const FEATURES: i64 = 16;

/// The demo Learner for one epoch of `steps` steps, without validation.
fn learner_json(steps: u64) -> String {
    let mut learner = demo_config::demo();
    learner["max_epochs"] = 1.into();
    learner["steps_per_epoch"] = steps.into();
    learner["listeners"] = serde_json::json!([]);
    learner.to_string()
}

fn direct(steps: usize) {
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let model = nn::seq()
        .add(nn::linear(&root / "l0", FEATURES, 64, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l1", 64, 32, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l2", 32, 1, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 0.003).unwrap();
    let features = Tensor::randn([8000, FEATURES], (Kind::Float, Device::Cpu));
    for _ in 0..steps {
        let pos = features.index_select(
            0,
            &Tensor::randint(8000, [BATCH], (Kind::Int64, Device::Cpu)),
        );
        let neg = features.index_select(
            0,
            &Tensor::randint(8000, [BATCH], (Kind::Int64, Device::Cpu)),
        );
        let s_pos = model.forward(&pos).squeeze_dim(-1);
        let s_neg = model.forward(&neg).squeeze_dim(-1);
        let loss = (s_neg - s_pos + 1.0).clamp_min(0.0).sum(Kind::Float) / BATCH as f64;
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("step_overhead");
    group.sample_size(10);
    for steps in [1u64, 500] {
        let config = parse_learner(&learner_json(steps)).unwrap();
        group.bench_function(format!("learner/{steps}"), |b| {
            b.iter(|| black_box(learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()))
        });
    }
    group.bench_function("direct/500", |b| b.iter(|| direct(500)));
    group.finish();
}

criterion_group!(step_overhead, benches);
criterion_main!(step_overhead);
