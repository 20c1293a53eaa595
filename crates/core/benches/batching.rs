//! Costs of the predictive batcher's own work per outer batch: fitting the cost model, choosing
//! a micro-batch size, and packing 64 variable-length records uniformly and adaptively.
//!
//! `cargo bench -p xpm-torch-core --bench batching`
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use xpm_torch_core::batching::{
    BatchDims, Combine, CostModel, Dims, Formula, MicroBatchable, Packer, PackingLimits,
};
use xpm_torch_core::config::FormulaTerm;
use xpm_torch_core::rng::Rng;
use xpm_torch_core::Result;

struct Lengths(Vec<u64>);

impl MicroBatchable for Lengths {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn select(&self, indices: &[usize]) -> Result<Self> {
        Ok(Lengths(indices.iter().map(|i| self.0[*i]).collect()))
    }
}

fn dims(bs: u64, l: u64) -> Dims {
    Dims::from([("bs".to_string(), bs), ("l".to_string(), l)])
}

fn length_dims(batch: &Lengths) -> Result<BatchDims> {
    BatchDims::new("bs", batch.0.len()).with("l", Combine::Max, batch.0.clone())
}

/// An unfitted model with nine probe observations of 64·bs·l² + 12288·bs·l + 50 MiB.
fn observed() -> CostModel {
    let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let terms = [
        FormulaTerm::of("a", &[("bs", 1), ("l", 2)]),
        FormulaTerm::of("b", &[("bs", 1), ("l", 1)]),
        FormulaTerm::of("c", &[]),
    ];
    let f = Formula::new(
        &terms,
        &names(&["a", "b", "c"]),
        &names(&["bs", "l"]),
        "bench",
    )
    .unwrap();
    let mut m = CostModel::new(f, "bs", "bench").unwrap();
    for bs in [1u64, 4, 16] {
        for l in [64u64, 256, 512] {
            let y = 64.0 * (bs * l * l) as f64 + 12_288.0 * (bs * l) as f64 + 52_428_800.0;
            m.observe(&dims(bs, l), y).unwrap();
        }
    }
    m
}

fn bench(c: &mut Criterion) {
    let mut model = observed();
    c.bench_function("fit/9 probes", |b| {
        b.iter(|| black_box(&mut model).fit().unwrap())
    });
    let budget = 576.0 * 1048576.0;
    c.bench_function("choose_batch_size/64", |b| {
        b.iter(|| {
            model
                .choose_batch_size(black_box(&dims(64, 384)), budget, 1, 64)
                .unwrap()
        })
    });
    let mut rng = Rng::new(42);
    let batch = Lengths(
        (0..64)
            .map(|_| (16f64 * 32f64.powf(rng.uniform())).round() as u64)
            .collect(),
    );
    let limits = PackingLimits {
        model: &model,
        budget,
        batch_size: 64,
        min_batch_size: 1,
    };
    for (name, packer) in [
        ("pack/uniform/64", Packer::Uniform),
        ("pack/adaptive/64", Packer::Adaptive { sort_by: None }),
        (
            "pack/adaptive_sorted/64",
            Packer::Adaptive {
                sort_by: Some("l".into()),
            },
        ),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                packer
                    .pack(
                        &length_dims(black_box(&batch)).unwrap(),
                        &limits,
                        &mut |_| {},
                    )
                    .unwrap()
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
