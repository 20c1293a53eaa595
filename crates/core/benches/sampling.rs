//! Records per second drawn from memory by the samplers: pairwise triplets of an MSLR-sized
//! feature dataset (136 features), pointwise records, batchwise groups, and token-id triplets
//! of variable length (padded into tensors). One thread, batches of 128 records.
//!
//! `cargo bench -p xpm-torch-core --bench sampling`; criterion reports elements (records) per second.
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use xpm_torch_core::config::{SyntheticLtrDatasetConfig, SyntheticTokenTripletsConfig};
use xpm_torch_core::data::{
    synthetic_ltr, synthetic_triplets, BatchwiseSampler, PairwiseSampler, PointwiseSampler,
    Sampler, Shard, TokenTripletSampler,
};
use xpm_torch_core::rng::Rng;

const BATCH: usize = 128;

fn bench(c: &mut Criterion) {
    // One core, as the target is stated; libtorch's pool would only measure contention here.
    tch::set_num_threads(1);
    // 1,000 queries × 120 documents, as MSLR-WEB10K's training folds.
    let data = synthetic_ltr(&SyntheticLtrDatasetConfig {
        signal_seed: 1,
        seed: 2,
        num_queries: 1000,
        docs_per_query: 120,
        num_features: 136,
        noise: 0.5,
    });
    let triplets = synthetic_triplets(
        &SyntheticTokenTripletsConfig {
            seed: 3,
            num_triplets: 100_000,
            vocab_size: 30_000,
            query_length: 8,
            min_length: 16,
            max_length: 128,
        },
        "bench",
    )
    .unwrap();
    let samplers: Vec<(&str, Box<dyn Sampler>)> = vec![
        (
            "pairwise",
            Box::new(PairwiseSampler::new(&data, Rng::new(1), Shard::WHOLE, "b").unwrap()),
        ),
        (
            "pointwise",
            Box::new(PointwiseSampler::new(&data, Rng::new(1), Shard::WHOLE, "b").unwrap()),
        ),
        (
            "batchwise-8",
            Box::new(BatchwiseSampler::new(&data, 8, Rng::new(1), Shard::WHOLE, "b").unwrap()),
        ),
        (
            "token-triplets",
            Box::new(TokenTripletSampler::new(triplets, Rng::new(1), Shard::WHOLE, "b").unwrap()),
        ),
    ];
    let mut group = c.benchmark_group("sampling");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.measurement_time(Duration::from_secs(3));
    for (name, mut sampler) in samplers {
        group.bench_function(name, |b| {
            b.iter(|| black_box(sampler.next_batch(BATCH).unwrap()));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
