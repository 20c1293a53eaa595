//! [`LossTrainer`]: each step splits a batch into micro-batches as its batcher says and
//! backpropagates the losses divided by the whole batch's record count (any split, same gradients).

use std::cell::RefCell;

use tch::{Kind, Tensor};

use super::{probe_batch, RecordDims, Trainer};
use crate::batching::Batcher;
use crate::data::{Batch, BatchSource};
use crate::learner::TrainerContext;
use crate::losses::{score, LossSet, Scores};
use crate::models::Model;
use crate::Result;

impl LossSet {
    /// Runs forward and backward on `batch`, a micro-batch of an outer batch of
    /// `outer_count` records: the loss backpropagated is the weighted sum divided by the outer
    /// count, so any split of the outer batch gives the gradients of no split. Returns that
    /// (detached) loss; metrics are added with the micro-batch's count.
    pub fn backward(
        &self,
        model: &dyn Model,
        batch: &Batch,
        outer_count: usize,
        ctx: &mut TrainerContext,
    ) -> Result<Tensor> {
        let count = batch.len() as i64;
        let scores = score(model, batch)?;
        let sums = self.sums(&scores)?;
        let total_name = &self.total_name;
        self.visit(&sums, |name, sum| {
            ctx.add_metric(name.unwrap_or(total_name), sum, count)
        })?;
        if let Scores::Pairs { positive, negative } = &scores {
            let correct = positive.f_gt_tensor(negative)?.f_sum(Kind::Double)?;
            ctx.add_metric("accuracy", &correct, count)?;
        }
        let loss = sums.weighted.f_div_scalar(outer_count.max(1) as f64)?;
        ctx.backward(&loss)?;
        Ok(loss.f_detach()?)
    }
}

/// `LossTrainer`: each step takes a batch of records, splits it into micro-batches as its
/// batcher says, and minimises the weighted sum of the losses normalised by the record count of
/// the whole batch (so any split gives the gradients of no split).
pub(crate) struct LossTrainer {
    pub batches: BatchSource,
    pub losses: LossSet,
    pub batcher: Batcher,
    pub dims: RecordDims,
}

/// Sets the gradients of `model`'s parameters to zero (a failed attempt's partial sums).
fn zero_gradients(model: &dyn Model) -> Result<()> {
    for p in model.named_parameters() {
        let mut grad = p.tensor.grad();
        if grad.defined() {
            let _ = grad.f_zero_()?;
        }
    }
    Ok(())
}

impl Trainer for LossTrainer {
    fn prepare(&mut self, model: &dyn Model, ctx: &mut TrainerContext) -> Result<()> {
        if !self.batcher.needs_fit() {
            return Ok(());
        }
        // Real records as the template of the probe batches, without moving the sampler.
        let template = self.batches.peek()?;
        let dims = self.dims.clone();
        let losses = &self.losses;
        let ctx = RefCell::new(ctx);
        let mut warnings = Vec::new();
        let result = ctx.borrow_mut().sandboxed(|ctx| {
            self.batcher.probe(
                |probe| {
                    let batch = probe_batch(&template, &dims, probe)?;
                    losses.backward(model, &batch, batch.len(), ctx).map(|_| ())
                },
                || zero_gradients(model),
                &mut |w| warnings.push(w),
            )
        });
        let ctx = ctx.into_inner();
        for w in warnings {
            ctx.warn(w);
        }
        result
    }

    fn process_step(&mut self, model: &dyn Model, ctx: &mut TrainerContext) -> Result<Tensor> {
        let batch = self.batches.next_batch()?;
        ctx.add_value(
            "data/wait_seconds",
            self.batches.take_waited().as_secs_f64(),
        )?;
        if let Some(cut) = self.batches.take_truncation() {
            let count = Tensor::f_from_slice(&[cut.cut as f64])?;
            ctx.add_metric("data/truncated_fraction", &count, cut.inputs as i64)?;
        }
        let replayable = self.batcher.micro_batch_size().is_some();
        let mark = replayable.then(|| ctx.metrics_mark());
        let ctx = RefCell::new(ctx);
        let total: RefCell<Option<Tensor>> = RefCell::new(None);
        let mut warnings = Vec::new();
        let dims = &self.dims;
        let losses = &self.losses;
        let agree_ctx = &ctx;
        let report = self.batcher.process_agreed(
            &batch,
            &|b: &Batch| dims.batch_dims(b),
            |micro, outer_count| {
                let loss = losses.backward(model, micro, outer_count, &mut ctx.borrow_mut())?;
                let mut total = total.borrow_mut();
                *total = Some(match total.take() {
                    Some(t) => t.f_add(&loss)?,
                    None => loss,
                });
                Ok(())
            },
            || {
                zero_gradients(model)?;
                *total.borrow_mut() = None;
                if let Some(mark) = &mark {
                    ctx.borrow_mut().metrics_rollback(mark);
                }
                Ok(())
            },
            &mut |w| warnings.push(w),
            &mut |flag| agree_ctx.borrow().any_rank(flag),
        )?;
        let ctx = ctx.into_inner();
        for w in warnings {
            ctx.warn(w);
        }
        if report.micro_batches > 1 || report.out_of_memory > 0 {
            ctx.add_value("batcher/micro_batches", report.micro_batches as f64)?;
        }
        total
            .into_inner()
            .ok_or_else(|| crate::Error::Panic("an empty batch".into()))
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!({ "sampler": self.batches.position() })
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        self.batches
            .restore(&state["sampler"], "learner.trainer.sampler")
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EvaluationBatching, EvaluationPairs};
    use super::*;
    use crate::config::MlpScorerConfig;
    use crate::data::{LtrDataset, PairwiseBatch, RecordKind, ScoreInput, Staging};
    use crate::losses::{AnyLoss, HingeLoss};
    use crate::models::MlpScorer;
    use crate::rng::Rng;

    /// Validation in outer batches of `chunk`, not split.
    fn plain(chunk: usize) -> EvaluationBatching {
        EvaluationBatching::new(
            &crate::config::AnyBatcher::Batcher(crate::config::BatcherConfig {}),
            chunk,
            Box::new(crate::runtime::memory::CpuMemory::new(None).unwrap()),
            "v.batcher",
        )
        .unwrap()
    }

    /// The reference's validation iterator yields items again (D9/scenario 29); ours sees each
    /// held-out pair exactly once whatever the chunk size, so the mean cannot depend on it.
    #[test]
    fn validation_sees_each_pair_once_whatever_the_chunk() {
        let data = LtrDataset {
            features: vec![0.3, -1.2, 0.8, 2.0, -0.4, 1.1, 0.0],
            num_features: 1,
            relevance: vec![2, 1, 0, 1, 0, 1, 0],
            query_bounds: vec![0, 3, 5, 7],
        };
        let pairs = EvaluationPairs::new(&data).unwrap();
        assert_eq!(pairs.len(), 5);
        let EvaluationPairs::Features {
            features,
            pairs: list,
        } = &pairs
        else {
            panic!("feature pairs expected")
        };
        let model = MlpScorer::new(
            &MlpScorerConfig {
                input_dim: 1,
                hidden_dims: vec![4],
            },
            &mut Rng::new(3),
        )
        .unwrap();
        let losses = LossSet::new(
            vec![AnyLoss::Pairwise(Box::new(HingeLoss {
                weight: 1.0,
                margin: 1.0,
            }))],
            RecordKind::Pairwise,
            "t",
        )
        .unwrap();
        let whole = losses
            .evaluate(
                &model,
                &pairs,
                &mut plain(5),
                "v",
                &mut |_| {},
                &mut |_, _| Ok(()),
            )
            .unwrap()
            .0;
        let one_by_one: f64 = list
            .iter()
            .map(|p| {
                let single = EvaluationPairs::Features {
                    features: features.shallow_clone(),
                    pairs: vec![*p],
                };
                losses
                    .evaluate(
                        &model,
                        &single,
                        &mut plain(1),
                        "v",
                        &mut |_| {},
                        &mut |_, _| Ok(()),
                    )
                    .unwrap()
                    .0
            })
            .sum::<f64>()
            / 5.0;
        for chunk in 1..=6 {
            let mut reported = Vec::new();
            let mean = losses
                .evaluate(
                    &model,
                    &pairs,
                    &mut plain(chunk),
                    "v",
                    &mut |_| {},
                    &mut |d, t| {
                        reported.push((d, t));
                        Ok(())
                    },
                )
                .unwrap()
                .0;
            // Pairs scored, after each batch (a plain batcher scores it in one micro-batch).
            let batches = 5u64.div_ceil(chunk as u64);
            let expected: Vec<_> = (1..=batches)
                .map(|d| ((d * chunk as u64).min(5), 5))
                .collect();
            assert_eq!(reported, expected, "progress of chunk {chunk}");
            assert!(
                (mean - whole).abs() < 1e-6,
                "chunk {chunk}: {mean} vs {whole}"
            );
        }
        assert!((one_by_one - whole).abs() < 1e-6);
    }

    /// Passes on to an MLP, recording the row count of each forward.
    struct Counting {
        inner: MlpScorer,
        forwards: std::sync::Mutex<Vec<i64>>,
    }

    impl Model for Counting {
        fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
            self.forwards.lock().unwrap().push(input.len());
            self.inner.forward(input)
        }

        fn named_parameters(&self) -> Vec<crate::models::NamedParameter> {
            self.inner.named_parameters()
        }

        fn share(&mut self, target: &str, source: &str) -> Result<()> {
            self.inner.share(target, source)
        }
    }

    #[test]
    fn a_pairwise_batch_is_scored_in_one_forward() {
        let data = LtrDataset {
            features: vec![0.3, -1.2, 0.8, 2.0, -0.4, 1.1, 0.0, 0.5, -0.7, 1.4],
            num_features: 2,
            relevance: vec![2, 1, 0, 1, 0],
            query_bounds: vec![0, 3, 5],
        };
        let model = Counting {
            inner: MlpScorer::new(
                &MlpScorerConfig {
                    input_dim: 2,
                    hidden_dims: vec![4],
                },
                &mut Rng::new(3),
            )
            .unwrap(),
            forwards: Default::default(),
        };
        let pairs = EvaluationPairs::new(&data).unwrap();
        let batch = pairs.batch(0..pairs.len()).unwrap();
        let apart = |input: &ScoreInput| Vec::<f32>::try_from(model.inner.forward(input).unwrap());
        let (want_positive, want_negative) = (
            apart(&batch.positive).unwrap(),
            apart(&batch.negative).unwrap(),
        );
        let Scores::Pairs { positive, negative } = score(&model, &Batch::Pairwise(batch)).unwrap()
        else {
            panic!("pairs expected")
        };
        assert_eq!(*model.forwards.lock().unwrap(), vec![8]);
        for (got, want) in [(positive, want_positive), (negative, want_negative)] {
            let got = Vec::<f32>::try_from(got).unwrap();
            assert_eq!(got.len(), 4);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
            }
        }
    }

    /// Staged pairwise batches come with their rows joined by the data producer; scoring uses
    /// those rows (here deliberately the negatives first) rather than joining them again.
    #[test]
    fn a_staged_pairwise_batch_is_scored_from_its_joined_rows() {
        let model = MlpScorer::new(
            &MlpScorerConfig {
                input_dim: 1,
                hidden_dims: vec![3],
            },
            &mut Rng::new(5),
        )
        .unwrap();
        let rows = |v: &[f32]| ScoreInput::Features(Tensor::from_slice(v).view([-1, 1]));
        let staged = Batch::Pairwise(PairwiseBatch::new(rows(&[1.0, 2.0]), rows(&[3.0, 4.0])))
            .staged(Staging::Host)
            .unwrap();
        let Batch::Pairwise(mut pairs) = staged else {
            panic!("pairs expected")
        };
        let joined = pairs.joined.as_ref().expect("staging joins the halves");
        let ScoreInput::Features(f) = joined else {
            panic!("features expected")
        };
        assert_eq!(
            Vec::<f32>::try_from(f.flatten(0, -1)).unwrap(),
            [1.0, 2.0, 3.0, 4.0]
        );
        pairs.joined = Some(rows(&[3.0, 4.0, 1.0, 2.0]));
        let Scores::Pairs { positive, .. } = score(&model, &Batch::Pairwise(pairs)).unwrap() else {
            panic!("pairs expected")
        };
        let negatives = model.forward(&rows(&[3.0, 4.0])).unwrap();
        assert!(positive.allclose(&negatives, 0.0, 0.0, false));
    }

    mod micro_batching {
        use std::collections::BTreeMap;

        use super::*;
        use crate::batching::SimulatedDevice;
        use crate::batching::{CostModel, Formula};
        use crate::config::{
            AnyBatchDimsProvider, AnyBatcher, AnyMicroBatchPacker, BatchDimsProviderConfig,
            BatcherConfig, FormulaTerm, PowerAdaptativeBatcherConfig, PredictiveBatcherConfig,
            ProbePointConfig, Typed, UniformPackerConfig,
        };
        use crate::data::{PairwiseSampler, Shard};
        use crate::losses::CrossEntropyLoss;
        use crate::models::PlacedModel;
        use crate::runtime::Runtime;

        const BATCH: usize = 16;
        /// Simulated bytes per record: the device holds 5 records at once.
        const PER_RECORD: f64 = 1000.0;

        fn data() -> LtrDataset {
            crate::data::synthetic_ltr(&crate::config::SyntheticLtrDatasetConfig {
                signal_seed: 1,
                seed: 2,
                num_queries: 10,
                docs_per_query: 8,
                num_features: 4,
                noise: 0.5,
            })
        }

        fn model() -> Box<dyn Model> {
            let mlp = MlpScorer::new(
                &MlpScorerConfig {
                    input_dim: 4,
                    hidden_dims: vec![6],
                },
                &mut Rng::new(5),
            )
            .unwrap();
            let config = crate::config::tests_support::cpu_fabric("64-true");
            let runtime = Runtime::from_config(&config).unwrap().0;
            Box::new(PlacedModel::new(Box::new(mlp), runtime).unwrap())
        }

        fn device(capacity: u64) -> SimulatedDevice {
            let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            let terms = [FormulaTerm::of("a", &[("bs", 1)])];
            let f = Formula::new(&terms, &names(&["a"]), &names(&["bs"]), "truth").unwrap();
            let mut truth = CostModel::new(f, "bs", "truth").unwrap();
            truth.set_coefficients(vec![PER_RECORD, 0.0]).unwrap();
            SimulatedDevice::new(capacity, 0, truth, 0.0, 1)
        }

        fn predictive(packer: AnyMicroBatchPacker) -> AnyBatcher {
            let probe = |bs: u64| {
                Typed(ProbePointConfig {
                    values: BTreeMap::from([("bs".into(), bs)]),
                })
            };
            AnyBatcher::PredictiveBatcher(PredictiveBatcherConfig {
                formula: "a*bs + c".into(),
                formula_terms: vec![
                    FormulaTerm::of("a", &[("bs", 1)]),
                    FormulaTerm::of("c", &[]),
                ],
                coefficient_names: vec!["a".into(), "c".into()],
                variable_names: vec!["bs".into()],
                batch_size_variable: "bs".into(),
                memory_fraction: 1.0,
                extra_overhead_bytes: 0,
                min_batch_size: 1,
                dims_provider: AnyBatchDimsProvider::BatchDimsProvider(BatchDimsProviderConfig {
                    probe_dims: vec![probe(1), probe(2), probe(4)],
                }),
                packer,
            })
        }

        /// Gradients after one step of a LossTrainer with `config` on a device of `capacity`,
        /// the micro-batch count logged and the warnings.
        fn one_step(config: &AnyBatcher, capacity: u64) -> (Vec<f64>, f64, Vec<String>) {
            let sampler = PairwiseSampler::new(&data(), Rng::new(3), Shard::WHOLE, "s").unwrap();
            step_of(model(), Box::new(sampler), config, capacity)
        }

        /// [`one_step`] of `model` on `sampler`'s first batch.
        fn step_of(
            model: Box<dyn Model>,
            sampler: Box<dyn crate::data::Sampler>,
            config: &AnyBatcher,
            capacity: u64,
        ) -> (Vec<f64>, f64, Vec<String>) {
            let losses = LossSet::new(
                vec![
                    AnyLoss::Pairwise(Box::new(HingeLoss {
                        weight: 1.0,
                        margin: 1.0,
                    })),
                    AnyLoss::Pairwise(Box::new(CrossEntropyLoss { weight: 0.5 })),
                ],
                RecordKind::Pairwise,
                "t",
            )
            .unwrap();
            let mut trainer = LossTrainer {
                batches: BatchSource::new(sampler, BATCH, 0, Staging::Host),
                losses,
                batcher: Batcher::new(config, BATCH, Box::new(device(capacity)), "t.batcher")
                    .unwrap(),
                dims: RecordDims::new(config, &None, "t.batcher").unwrap(),
            };
            let mut ctx = TrainerContext::new(None);
            trainer.prepare(model.as_ref(), &mut ctx).unwrap();
            let _ = trainer.process_step(model.as_ref(), &mut ctx).unwrap();
            let grads = model
                .named_parameters()
                .iter()
                .flat_map(|p| Vec::<f64>::try_from(p.tensor.grad().flatten(0, -1)).unwrap())
                .collect();
            let metrics = ctx.metrics_mark().means().unwrap();
            let micro = metrics.get("batcher/micro_batches").copied().unwrap_or(1.0);
            assert!(!metrics.keys().any(|k| k.contains("probe")));
            (grads, micro, ctx.take_warnings())
        }

        fn assert_close(a: &[f64], b: &[f64], what: &str) {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() < 1e-9, "{what}: {x} vs {y}");
            }
        }

        /// The tiny BERT fixture as a cross-encoder with its head, dropout off, in float64,
        /// and a sampler of triplets of varied lengths encoded by its tokenizer.
        fn cross_encoder() -> (Box<dyn Model>, Box<dyn crate::data::Sampler>) {
            let dir =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hf/bert");
            let config: crate::config::AnyModule = serde_json::from_str(&format!(
                r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","max_length":32,
                "encoder":{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-bert","path":"{}"}}}}"#,
                dir.display()
            ))
            .unwrap();
            let mut model = crate::models::build(&config, &mut Rng::new(1), "model").unwrap();
            model.set_training(false);
            let runtime =
                Runtime::from_config(&crate::config::tests_support::cpu_fabric("64-true"))
                    .unwrap()
                    .0;
            let model = Box::new(PlacedModel::new(model, runtime).unwrap());
            let encoding = crate::models::hf::text_encoding(&config, "model")
                .unwrap()
                .unwrap();
            let words = [
                "paris",
                "river",
                "the",
                "capital",
                "of",
                "many",
                "mountains",
                "city",
            ];
            let text = |start: usize, count: usize| -> String {
                (0..count)
                    .map(|k| words[(start + k) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let mut triplets = crate::data::TextTriplets::default();
            for i in 0..2 * BATCH {
                triplets.query.push(text(i, 1 + i % 3));
                triplets.positive.push(text(i + 1, 2 + i % 7));
                triplets.negative.push(text(i + 2, 1 + (i * 5) % 11));
            }
            let sampler = crate::data::TextTripletSampler::new(
                std::sync::Arc::new(triplets),
                encoding,
                Rng::new(3),
                Shard::WHOLE,
                "s",
            )
            .unwrap();
            (model, Box::new(sampler))
        }

        #[test]
        fn micro_batches_give_the_gradients_of_the_whole_batch_for_a_transformer() {
            let step = |config: &AnyBatcher, capacity: u64| {
                let (model, sampler) = cross_encoder();
                step_of(model, sampler, config, capacity)
            };
            let (whole, n, _) = step(&AnyBatcher::Batcher(BatcherConfig {}), u64::MAX / 2);
            assert_eq!(n, 1.0);
            assert!(whole.iter().any(|g| g.abs() > 1e-6), "no gradient");
            let (split, n, warnings) = step(
                &predictive(AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {})),
                5 * PER_RECORD as u64,
            );
            assert!(n >= 4.0, "{n} micro-batches for 16 records of 5 per batch");
            assert!(warnings.is_empty(), "{warnings:?}");
            assert_close(&split, &whole, "predictive");
            let power = AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {});
            let (replayed, n, _) = step(&power, 5 * PER_RECORD as u64);
            assert_eq!(n, 4.0);
            assert_close(&replayed, &whole, "power-adaptative");
        }

        #[test]
        fn micro_batches_give_the_gradients_of_the_whole_batch() {
            let plain = AnyBatcher::Batcher(BatcherConfig {});
            let (whole, n, _) = one_step(&plain, u64::MAX / 2);
            assert_eq!(n, 1.0);
            let adaptive = |sort_by: Option<&str>| {
                AnyMicroBatchPacker::AdaptivePacker(crate::config::AdaptivePackerConfig {
                    sort_by: sort_by.map(str::to_string),
                })
            };
            for (name, packer) in [
                (
                    "uniform",
                    AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {}),
                ),
                ("adaptive", adaptive(None)),
                ("adaptive sorted", adaptive(Some("bs"))),
            ] {
                let (split, n, warnings) = one_step(&predictive(packer), 5 * PER_RECORD as u64);
                assert!(
                    n >= 4.0,
                    "{name}: {n} micro-batches for 16 records of 5 per batch"
                );
                assert!(warnings.is_empty(), "{name}: {warnings:?}");
                assert_close(&split, &whole, name);
            }
        }

        /// A validation's loss, metrics, warnings and the progress it reported.
        type Validated = (f64, Vec<f64>, Vec<String>, Vec<(u64, u64)>);

        /// The validation loss and metrics of `model` on `data()`'s pairs in batches of 16
        /// with `config` on a device of `capacity`, the warnings and the progress reported.
        fn validate(config: &AnyBatcher, capacity: u64) -> Validated {
            let losses = LossSet::new(
                vec![AnyLoss::Pairwise(Box::new(HingeLoss {
                    weight: 1.0,
                    margin: 1.0,
                }))],
                RecordKind::Pairwise,
                "t",
            )
            .unwrap();
            let pairs = EvaluationPairs::new(&data()).unwrap();
            let mut batching =
                EvaluationBatching::new(config, BATCH, Box::new(device(capacity)), "v.batcher")
                    .unwrap();
            let mut warnings = Vec::new();
            let mut reported = Vec::new();
            let (loss, metrics) = losses
                .evaluate(
                    model().as_ref(),
                    &pairs,
                    &mut batching,
                    "v",
                    &mut |w| warnings.push(w),
                    &mut |done, total| {
                        reported.push((done, total));
                        Ok(())
                    },
                )
                .unwrap();
            (loss, metrics.into_values().collect(), warnings, reported)
        }

        #[test]
        fn validation_batches_are_micro_batched_with_the_same_result() {
            let plain = AnyBatcher::Batcher(BatcherConfig {});
            let (whole, metrics, none, by_batch) = validate(&plain, u64::MAX / 2);
            assert!(none.is_empty());
            // Outer batches of 16 do not fit a device of 5 records: each is replayed in
            // micro-batches of 8, then 5, once (the batcher keeps the size that fits).
            let power = AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {});
            let (split, split_metrics, warnings, by_micro) =
                validate(&power, 5 * PER_RECORD as u64);
            assert_eq!(warnings.len(), 2, "{warnings:?}");
            // Progress in pairs, after each micro-batch: it moves inside an outer batch.
            let pairs = by_batch.last().unwrap().1;
            assert_eq!(by_batch.last(), Some(&(pairs, pairs)));
            assert_eq!(by_micro.last(), Some(&(pairs, pairs)));
            assert!(by_micro.len() > by_batch.len(), "{by_micro:?}");
            assert!(by_micro.windows(2).all(|w| w[0].0 < w[1].0), "{by_micro:?}");
            assert!(by_micro.iter().any(|(done, _)| done % BATCH as u64 != 0));
            assert!((split - whole).abs() < 1e-9, "{split} vs {whole}");
            assert_close(&split_metrics, &metrics, "validation metrics");
            // The predictive batcher is for training only.
            let err = EvaluationBatching::new(
                &predictive(AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {})),
                BATCH,
                Box::new(device(1000)),
                "learner.listeners[0].batcher",
            )
            .err()
            .unwrap()
            .to_string();
            assert!(
                err.starts_with(
                    "learner.listeners[0].batcher: the PredictiveBatcher is for training"
                ),
                "{err}"
            );
        }

        #[test]
        fn an_out_of_memory_batch_is_replayed_smaller_with_the_same_gradients() {
            let plain = AnyBatcher::Batcher(BatcherConfig {});
            let (whole, _, _) = one_step(&plain, u64::MAX / 2);
            let power = AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {});
            let (replayed, n, warnings) = one_step(&power, 5 * PER_RECORD as u64);
            // 16 and 8 do not fit, 5 does: four micro-batches.
            assert_eq!(n, 4.0);
            assert_eq!(warnings.len(), 2, "{warnings:?}");
            assert!(warnings[1].contains("replaying the batch with micro-batches of 5"));
            assert_close(&replayed, &whole, "power-adaptative");
        }
    }
}
