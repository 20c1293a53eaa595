//! Slates through the loss trainer: micro-batches and probe batches.

use tch::Kind;

use super::{probe_batch, RecordDims};
use crate::config::{AnyBatcher, BatcherConfig, MlpScorerConfig, SyntheticLtrDatasetConfig};
use crate::data::{synthetic_ltr, Batch, RecordKind, Sampler, Shard, SlateSampler};
use crate::learner::TrainerContext;
use crate::losses::listwise::{LambdaLoss, LambdaWeighting, ListNet, ListwiseLoss, Reduction};
use crate::losses::{AnyLoss, LossSet};
use crate::models::{MlpScorer, Model};
use crate::rng::Rng;

fn slates(count: usize, slate_length: usize) -> Batch {
    let data = synthetic_ltr(&SyntheticLtrDatasetConfig {
        signal_seed: 1,
        seed: 2,
        num_queries: 12,
        docs_per_query: 9,
        num_features: 4,
        noise: 0.5,
    });
    let mut sampler =
        SlateSampler::new(&data, slate_length, Rng::new(3), Shard::WHOLE, "s").unwrap();
    sampler.next_batch(count).unwrap()
}

fn losses() -> LossSet {
    let lambda: Box<dyn ListwiseLoss> = Box::new(LambdaLoss {
        weight: 0.5,
        weighting: LambdaWeighting::NdcgLoss2PlusPlus { mu: 10.0 },
        k: Some(5),
        sigma: 1.0,
        reduction: Reduction::Sum,
        binary_log: true,
    });
    LossSet::new(
        vec![
            AnyLoss::Listwise(Box::new(ListNet { weight: 1.0 })),
            AnyLoss::Listwise(lambda),
        ],
        RecordKind::Slate,
        "t",
    )
    .unwrap()
}

fn gradients(model: &dyn Model) -> Vec<f64> {
    let grads = model
        .named_parameters()
        .iter()
        .flat_map(|p| {
            Vec::<f64>::try_from(p.tensor.grad().flatten(0, -1).to_kind(Kind::Double)).unwrap()
        })
        .collect();
    for p in model.named_parameters() {
        let _ = p.tensor.grad().zero_();
    }
    grads
}

#[test]
fn micro_batches_of_slates_give_the_gradients_of_the_whole_batch() {
    let model = MlpScorer::new(
        &MlpScorerConfig {
            input_dim: 4,
            hidden_dims: vec![6],
        },
        &mut Rng::new(5),
    )
    .unwrap();
    let batch = slates(6, 7);
    let losses = losses();
    let mut ctx = TrainerContext::new(None);
    let _ = losses.backward(&model, &batch, 6, &mut ctx).unwrap();
    let whole = gradients(&model);
    for part in [&[0usize, 1, 2][..], &[3, 4], &[5]] {
        let micro = batch.select(part).unwrap();
        let _ = losses.backward(&model, &micro, 6, &mut ctx).unwrap();
    }
    let split = gradients(&model);
    assert!(whole.iter().any(|g| *g != 0.0));
    for (a, b) in whole.iter().zip(&split) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
}

#[test]
fn probe_slates_take_the_width_the_batcher_asks_for() {
    let template = slates(2, 5);
    let dims = RecordDims::new(&AnyBatcher::Batcher(BatcherConfig {}), &None, "b").unwrap();
    let probe = [("bs".to_string(), 3u64), ("l".to_string(), 8u64)]
        .into_iter()
        .collect();
    let Batch::Slate(b) = probe_batch(&template, &dims, &probe).unwrap() else {
        panic!("slates expected")
    };
    assert_eq!(b.labels.size(), vec![3, 8]);
    assert_eq!(b.mask.size(), vec![3, 8]);
    assert_eq!(b.input.len(), 24);
    let read = dims.batch_dims(&Batch::Slate(b)).unwrap();
    assert_eq!(read.group(&[0, 1])["l"], 8);
    assert_eq!(read.group(&[0, 1])["bs"], 2);
}
