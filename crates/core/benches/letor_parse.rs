//! Throughput of the LETOR parser on an MSLR-like file held in memory: 100,000 documents of 136
//! features, values written as integers or with six decimals as MSLR-WEB does.
//!
//! `cargo bench -p xpm-torch-core --bench letor_parse`; criterion reports bytes per second.
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::fmt::Write;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use xpm_torch_core::data::parse_letor;

const DOCUMENTS: usize = 100_000;
const FEATURES: usize = 136;

/// A deterministic MSLR-like text: about 120 documents per query, grades 0–4.
fn mslr_like() -> String {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut text = String::with_capacity(DOCUMENTS * FEATURES * 10);
    for doc in 0..DOCUMENTS {
        write!(text, "{} qid:{}", next() % 5, doc / 120).unwrap();
        for f in 1..=FEATURES {
            let r = next();
            match r % 4 {
                0 => write!(text, " {f}:0"),
                1 => write!(text, " {f}:{}", (r >> 8) % 500),
                2 => write!(text, " {f}:{:.6}", ((r >> 8) % 1_000_000) as f64 / 1e6),
                _ => write!(text, " {f}:-{:.6}", ((r >> 8) % 100_000_000) as f64 / 1e4),
            }
            .unwrap();
        }
        text.push('\n');
    }
    text
}

fn parse(c: &mut Criterion) {
    let text = mslr_like();
    let mut group = c.benchmark_group("letor");
    group
        .throughput(Throughput::Bytes(text.len() as u64))
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("parse_mslr_like_100k_x_136", |b| {
        b.iter(|| {
            let data = parse_letor(black_box(&text), "bench", Some(FEATURES)).unwrap();
            black_box(data.summary.documents)
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
