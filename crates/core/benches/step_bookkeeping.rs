//! What the learner's loop records at each step besides the step itself, one piece at a time,
//! as `LossTrainer` and `train_step` do it: the data-wait and learning-rate values, the loss
//! metric, and the pairwise accuracy (a comparison, a cast, a sum, then the metric). Set against
//! `step_overhead`'s direct step, this is the part of the framework's per-step overhead that
//! lives in its metrics; one thread, batches of 32 pairs as the small side-by-side job.
//!
//! `cargo bench -p xpm-torch-core --bench step_bookkeeping`.
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tch::{Kind, Tensor};
use xpm_torch_core::learner::TrainerContext;

const PAIRS: i64 = 32;

/// The step's values: a loss sum and the positive and negative scores.
fn step_tensors() -> (Tensor, Tensor, Tensor) {
    let positive = Tensor::randn([PAIRS], (Kind::Float, tch::Device::Cpu));
    let negative = Tensor::randn([PAIRS], (Kind::Float, tch::Device::Cpu));
    let sum = (&negative - &positive + 1.0)
        .clamp_min(0.0)
        .sum(Kind::Float);
    (sum, positive, negative)
}

fn accuracy(ctx: &mut TrainerContext, positive: &Tensor, negative: &Tensor) {
    let correct = positive
        .gt_tensor(negative)
        .to_kind(Kind::Double)
        .sum(Kind::Double);
    ctx.add_metric("accuracy", &correct, PAIRS).unwrap();
}

fn bench(c: &mut Criterion) {
    tch::set_num_threads(1);
    let (sum, positive, negative) = step_tensors();
    let mut group = c.benchmark_group("step_bookkeeping");
    // Every piece runs many times per epoch: a fresh context per sample would measure its
    // allocation, so one lives through each benchmark, as through an epoch.
    let mut ctx = TrainerContext::new(None);
    group.bench_function("value (data wait or learning rate)", |b| {
        b.iter(|| ctx.add_value("data/wait_seconds", black_box(1e-6)).unwrap())
    });
    let mut ctx = TrainerContext::new(None);
    group.bench_function("loss metric", |b| {
        b.iter(|| {
            ctx.add_metric("pair-hinge", black_box(&sum), PAIRS)
                .unwrap()
        })
    });
    let mut ctx = TrainerContext::new(None);
    group.bench_function("pairwise accuracy", |b| {
        b.iter(|| accuracy(&mut ctx, black_box(&positive), black_box(&negative)))
    });
    let mut ctx = TrainerContext::new(None);
    group.bench_function("all of one step", |b| {
        b.iter(|| {
            ctx.add_value("data/wait_seconds", black_box(1e-6)).unwrap();
            ctx.add_value("gradient/scheduler/1/1", black_box(1e-3))
                .unwrap();
            ctx.add_metric("pair-hinge", black_box(&sum), PAIRS)
                .unwrap();
            accuracy(&mut ctx, black_box(&positive), black_box(&negative));
        })
    });
    group.finish();
}

criterion_group!(step_bookkeeping, bench);
criterion_main!(step_bookkeeping);
