//! What validation listeners score: held-out pairs (of a graded dataset, token triplets or text
//! triplets), in outer batches their own batcher splits, and the loss set's mean over them.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

use tch::{Kind, Tensor};

use super::RecordDims;
use crate::batching::Batcher;
use crate::config::AnyBatcher;
use crate::data::{
    strs, Batch, LtrDataset, PairwiseBatch, PreferencePair, ScoreInput, TextEncoding,
    TokenTriplets, TripletTexts, Truncation,
};
use crate::learner::Metrics;
use crate::losses::{score, LossSet, Scores};
use crate::models::Model;
use crate::runtime::memory::MemoryProbe;
use crate::{Error, Result};

impl LossSet {
    /// Mean weighted loss of `model` over every preference pair of `data`, in outer batches of
    /// `batching`'s batch size that its batcher splits into micro-batches, and the metrics of a
    /// validation listener `id`: `<id>/loss/<name>` and, with several losses, `<id>/loss`.
    /// Warnings (out-of-memory replays) go to `warn`; `progress` is told `(done, total)` pairs
    /// after each micro-batch (what a replay scores again is not told twice).
    pub fn evaluate(
        &self,
        model: &dyn Model,
        data: &EvaluationPairs,
        batching: &mut EvaluationBatching,
        id: &str,
        warn: &mut dyn FnMut(String),
        progress: &mut dyn FnMut(u64, u64) -> Result<()>,
    ) -> Result<(f64, BTreeMap<String, f64>)> {
        let _scope = crate::models::ScoringScope::enter(model)?;
        // The running sums: metrics, weighted total, pair count.
        let sums = RefCell::new((Metrics::default(), 0.0f64, 0i64));
        let chunk = batching.batch_size.max(1);
        let dims = &batching.dims;
        let total_pairs = data.len() as u64;
        let mut reported = 0u64;
        for start in (0..data.len()).step_by(chunk) {
            let rows = start..(start + chunk).min(data.len());
            let batch = Batch::Pairwise(data.batch(rows)?);
            // What the outer batch started from, to roll back to when it is replayed.
            let mark = {
                let s = sums.borrow();
                (s.0.mark(), s.1, s.2)
            };
            batching.batcher.process(
                &batch,
                &|b: &Batch| dims.batch_dims(b),
                |micro, _| {
                    let n = micro.len() as i64;
                    let scores = score(model, micro)?;
                    let mut s = sums.borrow_mut();
                    let (metrics, total, count) = &mut *s;
                    if let Scores::Pairs { positive, negative } = &scores {
                        let correct = positive
                            .f_gt_tensor(negative)?
                            .f_to_kind(Kind::Double)?
                            .f_sum(None)?;
                        metrics.add(&format!("{id}/pairwise_accuracy"), &correct, n)?;
                    }
                    let loss_sums = self.sums(&scores)?;
                    self.visit(&loss_sums, |name, sum| {
                        let key = match name {
                            Some(name) => format!("{id}/loss/{name}"),
                            None => format!("{id}/loss"),
                        };
                        metrics.add(&key, sum, n)
                    })?;
                    *total += loss_sums.weighted.f_double_value(&[])?;
                    *count += n;
                    let done = *count as u64;
                    drop(s);
                    if done > reported {
                        reported = done;
                        progress(done, total_pairs)?;
                    }
                    Ok(())
                },
                || {
                    *sums.borrow_mut() = (mark.0.mark(), mark.1, mark.2);
                    Ok(())
                },
                warn,
            )?;
        }
        let (metrics, total, count) = sums.into_inner();
        Ok((total / count.max(1) as f64, metrics.means()?))
    }
}

/// How a validation listener batches its pairs: outer batches of `batch_size`, split into
/// micro-batches by its own batcher (`TrainerValidationLoss.batcher`).
pub(crate) struct EvaluationBatching {
    pub batch_size: usize,
    pub batcher: Batcher,
    pub dims: RecordDims,
}

impl EvaluationBatching {
    /// The batching `config` describes at `path`, measuring `memory`. The predictive batcher is
    /// refused: its memory formula is fitted on training steps (forward and backward), which a
    /// validation forward does not resemble.
    ///
    /// # Errors
    /// [`crate::Error::Config`] for a predictive batcher or a zero batch size.
    pub fn new(
        config: &AnyBatcher,
        batch_size: usize,
        memory: Box<dyn MemoryProbe>,
        path: &str,
    ) -> Result<Self> {
        if let AnyBatcher::PredictiveBatcher(_) = config {
            return Err(Error::config(
                path,
                "the PredictiveBatcher is for training (its memory formula is fitted on \
                 forward and backward passes); validate with a Batcher, or a \
                 PowerAdaptativeBatcher to shrink the validation batches when they run out \
                 of memory",
            ));
        }
        Ok(EvaluationBatching {
            batch_size,
            batcher: Batcher::new(config, batch_size, memory, path)?,
            dims: RecordDims::new(config, &None, path)?,
        })
    }
}

/// Held-out preference pairs: those of a graded dataset (features), token triplets, or text
/// triplets encoded for a pretrained text model.
pub(crate) enum EvaluationPairs {
    /// A dataset's features and its preference pairs.
    Features {
        features: Tensor,
        pairs: Vec<PreferencePair>,
    },
    /// (query, positive, negative) token sequences.
    Triplets(TokenTriplets),
    /// (query, positive, negative) texts, encoded batch by batch as the model wants them.
    Texts {
        triplets: Arc<dyn TripletTexts>,
        encoding: TextEncoding,
        /// Inputs cut by truncation since the last [`EvaluationPairs::take_truncation`].
        truncation: Cell<Truncation>,
    },
}

impl EvaluationPairs {
    pub fn new(data: &LtrDataset) -> Result<Self> {
        Ok(EvaluationPairs::Features {
            features: data.features_tensor()?,
            pairs: data.preference_pairs(),
        })
    }

    /// Text triplets encoded by `encoding`.
    pub fn texts(triplets: Arc<dyn TripletTexts>, encoding: TextEncoding) -> Self {
        EvaluationPairs::Texts {
            triplets,
            encoding,
            truncation: Cell::new(Truncation::default()),
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        match self {
            EvaluationPairs::Features { pairs, .. } => pairs.len(),
            EvaluationPairs::Triplets(t) => t.len(),
            EvaluationPairs::Texts { triplets, .. } => triplets.count(),
        }
    }

    /// Pairs `rows` as a batch.
    pub(crate) fn batch(&self, rows: std::ops::Range<usize>) -> Result<PairwiseBatch> {
        match self {
            EvaluationPairs::Features { features, pairs } => gather(features, &pairs[rows]),
            EvaluationPairs::Triplets(t) => t.batch(&rows.collect::<Vec<_>>()),
            EvaluationPairs::Texts {
                triplets,
                encoding,
                truncation,
            } => {
                let [queries, positives, negatives] = triplets.texts(&rows.collect::<Vec<_>>())?;
                let queries = strs(&queries);
                let (positive, cut_p) = encoding.encode(&queries, &strs(&positives))?;
                let (negative, cut_n) = encoding.encode(&queries, &strs(&negatives))?;
                truncation.set(truncation.get().plus(cut_p).plus(cut_n));
                Ok(PairwiseBatch::new(positive, negative))
            }
        }
    }

    /// The inputs cut by truncation since the last call, for text triplets.
    pub fn take_truncation(&self) -> Option<Truncation> {
        match self {
            EvaluationPairs::Texts { truncation, .. } => Some(truncation.take()),
            _ => None,
        }
    }
}

fn gather(features: &Tensor, pairs: &[PreferencePair]) -> Result<PairwiseBatch> {
    let index = |pick: fn(&PreferencePair) -> u32| -> Result<ScoreInput> {
        let idx: Vec<i64> = pairs.iter().map(|p| i64::from(pick(p))).collect();
        Ok(ScoreInput::Features(
            features.f_index_select(0, &Tensor::f_from_slice(&idx)?)?,
        ))
    };
    Ok(PairwiseBatch::new(index(|p| p.0)?, index(|p| p.1)?))
}
