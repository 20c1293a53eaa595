//! Forward and backward of each loss on its own, from leaf scores: pairwise losses on 256
//! (positive, negative) score pairs, batchwise losses on 32 queries × 16 documents, for each
//! output type the loss reads, listwise losses on 32 slates of 32 positions (half of them with 8
//! padded positions), graded 0–4. One thread; the time is the loss's dispatcher and kernel cost
//! that a training step pays on top of the model.
//!
//! `cargo bench -p xpm-torch-core --bench losses`.
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tch::{Kind, Tensor};
use xpm_torch_core::losses::batchwise::{CrossEntropyLoss as BatchBce, SoftmaxCrossEntropy};
use xpm_torch_core::losses::listwise::{
    ApproxNdcg, LambdaLoss, LambdaWeighting, ListMle, ListNet, ListwiseLoss, NeuralNdcg,
    PairWeighting, RankNet, Reduction,
};
use xpm_torch_core::losses::{
    BatchwiseLoss, CrossEntropyLoss, HingeLoss, PairwiseLoss, PointwiseCrossEntropyLoss,
};
use xpm_torch_core::models::OutputType;

const PAIRS: i64 = 256;
const QUERIES: i64 = 32;
const DOCUMENTS: i64 = 16;
const SLATES: i64 = 32;
const SLATE_LENGTH: i64 = 32;

/// Scores of the given kind, as leaves that collect gradients.
fn scores(shape: &[i64], output: OutputType) -> Tensor {
    let real = Tensor::randn(shape, (Kind::Float, tch::Device::Cpu));
    match output {
        OutputType::Real => real,
        OutputType::Probability => real.sigmoid(),
        OutputType::LogProbability => real.sigmoid().log(),
    }
    .detach()
    .set_requires_grad(true)
}

fn outputs() -> [(&'static str, OutputType); 3] {
    [
        ("real", OutputType::Real),
        ("probability", OutputType::Probability),
        ("log-probability", OutputType::LogProbability),
    ]
}

fn pairwise(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss/pairwise");
    let mut losses: Vec<(String, Box<dyn PairwiseLoss>, OutputType)> = vec![
        (
            "hinge".into(),
            Box::new(HingeLoss {
                weight: 1.0,
                margin: 1.0,
            }),
            OutputType::Real,
        ),
        (
            "cross-entropy".into(),
            Box::new(CrossEntropyLoss { weight: 1.0 }),
            OutputType::Real,
        ),
    ];
    for (name, output) in outputs() {
        losses.push((
            format!("pointwise-cross-entropy/{name}"),
            Box::new(PointwiseCrossEntropyLoss {
                weight: 1.0,
                output,
            }),
            output,
        ));
    }
    for (name, loss, output) in &losses {
        let positive = scores(&[PAIRS], *output);
        let negative = scores(&[PAIRS], *output);
        group.bench_function(name.as_str(), |b| {
            b.iter(|| {
                let sum = loss.sum(&positive, &negative).unwrap();
                sum.backward();
                black_box(sum)
            })
        });
    }
    group.finish();
}

fn batchwise(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss/batchwise");
    // Graded relevance in {0, 0.5, 1}: every query keeps a relevant document.
    let relevance = Tensor::randint(3, [QUERIES, DOCUMENTS], (Kind::Float, tch::Device::Cpu))
        .f_div_scalar(2.0)
        .unwrap();
    let _ = relevance.select(1, 0).fill_(1.0);
    let mut losses: Vec<(String, Box<dyn BatchwiseLoss>, OutputType)> = vec![(
        "bce/probability".into(),
        Box::new(BatchBce { weight: 1.0 }),
        OutputType::Probability,
    )];
    for (name, output) in outputs() {
        losses.push((
            format!("infonce/{name}"),
            Box::new(SoftmaxCrossEntropy {
                weight: 1.0,
                output,
            }),
            output,
        ));
    }
    for (name, loss, output) in &losses {
        let scores = scores(&[QUERIES, DOCUMENTS], *output);
        group.bench_function(name.as_str(), |b| {
            b.iter(|| {
                let (sum, _) = loss.sum(&scores, &relevance).unwrap();
                sum.backward();
                black_box(sum)
            })
        });
    }
    group.finish();
}

fn listwise(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss/listwise");
    let shape = [SLATES, SLATE_LENGTH];
    let labels = Tensor::randint(5, shape, (Kind::Float, tch::Device::Cpu));
    let positions = Tensor::arange(SLATE_LENGTH, (Kind::Int64, tch::Device::Cpu));
    let odd = Tensor::arange(SLATES, (Kind::Int64, tch::Device::Cpu))
        .remainder(2)
        .eq(1);
    let mask = positions
        .lt(SLATE_LENGTH - 8)
        .unsqueeze(0)
        .logical_or(&odd.unsqueeze(1).logical_not());
    let lambda = |weighting, k| -> Box<dyn ListwiseLoss> {
        Box::new(LambdaLoss {
            weight: 1.0,
            weighting,
            k,
            sigma: 1.0,
            reduction: Reduction::Sum,
            binary_log: true,
        })
    };
    let losses: Vec<(&str, Box<dyn ListwiseLoss>)> = vec![
        ("listnet", Box::new(ListNet { weight: 1.0 })),
        ("listmle", Box::new(ListMle { weight: 1.0 })),
        (
            "ranknet",
            Box::new(RankNet {
                weight: 1.0,
                weighting: PairWeighting::Uniform,
            }),
        ),
        (
            "ranknet/label-difference",
            Box::new(RankNet {
                weight: 1.0,
                weighting: PairWeighting::LabelDifference,
            }),
        ),
        (
            "lambdaloss/ndcgLoss2PP",
            lambda(LambdaWeighting::NdcgLoss2PlusPlus { mu: 10.0 }, None),
        ),
        (
            "lambdaloss/lambdaRank@10",
            lambda(LambdaWeighting::LambdaRank, Some(10)),
        ),
        (
            "approx-ndcg",
            Box::new(ApproxNdcg {
                weight: 1.0,
                alpha: 1.0,
            }),
        ),
        (
            "neural-ndcg",
            Box::new(NeuralNdcg {
                weight: 1.0,
                temperature: 1.0,
                powered_relevancies: true,
                k: None,
            }),
        ),
    ];
    for (name, loss) in &losses {
        let scores = scores(&shape, OutputType::Real);
        group.bench_function(*name, |b| {
            b.iter(|| {
                let (sum, _) = loss.sum(&scores, &labels, &mask).unwrap();
                sum.backward();
                black_box(sum)
            })
        });
    }
    group.finish();
}

fn setup(c: &mut Criterion) {
    tch::set_num_threads(1);
    pairwise(c);
    batchwise(c);
    listwise(c);
}

criterion_group!(losses, setup);
criterion_main!(losses);
