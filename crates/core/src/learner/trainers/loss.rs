use tch::{Kind, Tensor};

use super::Trainer;
use crate::data::{BatchSource, LtrDataset, PreferencePair};
use std::collections::BTreeMap;

use crate::learner::{Metrics, TrainerContext};
use crate::losses::PairwiseLoss;
use crate::models::Model;
use crate::Result;

/// The losses of a trainer, computed together.
pub(crate) struct LossSet {
    losses: Vec<Box<dyn PairwiseLoss>>,
    /// The metric of the weighted sum: the sorted loss names joined by `+`.
    total_name: String,
}

/// Sums of one batch: the weighted total and each loss's own sum.
pub(crate) struct LossSums {
    pub weighted: Tensor,
    pub each: Vec<Tensor>,
}

impl LossSet {
    pub fn new(losses: Vec<Box<dyn PairwiseLoss>>) -> Self {
        let mut names: Vec<&str> = losses.iter().map(|l| l.name()).collect();
        names.sort_unstable();
        let total_name = names.join("+");
        LossSet { losses, total_name }
    }

    pub fn sums(&self, positive: &Tensor, negative: &Tensor) -> Result<LossSums> {
        let mut weighted: Option<Tensor> = None;
        let mut each = Vec::with_capacity(self.losses.len());
        for loss in &self.losses {
            let sum = loss.sum(positive, negative)?;
            let w = sum.f_mul_scalar(loss.weight())?;
            weighted = Some(match weighted {
                Some(t) => t.f_add(&w)?,
                None => w,
            });
            each.push(sum);
        }
        let weighted = match weighted {
            Some(w) => w,
            None => positive.f_sum(None)?.f_mul_scalar(0.0)?,
        };
        Ok(LossSums { weighted, each })
    }

    /// Hands each loss's sum to `add` with its name, then, with two or more losses, their
    /// weighted sum with `None` (the reference logs it only then).
    fn visit(
        &self,
        sums: &LossSums,
        mut add: impl FnMut(Option<&str>, &Tensor) -> Result<()>,
    ) -> Result<()> {
        for (loss, sum) in self.losses.iter().zip(&sums.each) {
            add(Some(loss.name()), sum)?;
        }
        if self.losses.len() >= 2 {
            add(None, &sums.weighted)?;
        }
        Ok(())
    }

    /// Mean weighted loss of `model` over every preference pair of `data`, in chunks, and the
    /// metrics of a validation listener `id`: `<id>/loss/<name>` and, with several losses,
    /// `<id>/loss`.
    pub fn evaluate(
        &self,
        model: &dyn Model,
        data: &EvaluationPairs,
        chunk: usize,
        id: &str,
    ) -> Result<(f64, BTreeMap<String, f64>)> {
        let _no_grad = tch::no_grad_guard();
        let mut metrics = Metrics::default();
        let mut total = 0.0;
        let mut count = 0i64;
        for pairs in data.pairs.chunks(chunk.max(1)) {
            let (pos, neg) = gather(&data.features, pairs)?;
            let sums = self.sums(&model.forward(&pos)?, &model.forward(&neg)?)?;
            let n = pairs.len() as i64;
            self.visit(&sums, |name, sum| {
                let key = match name {
                    Some(name) => format!("{id}/loss/{name}"),
                    None => format!("{id}/loss"),
                };
                metrics.add(&key, sum, n)
            })?;
            total += sums.weighted.f_double_value(&[])?;
            count += n;
        }
        Ok((total / count.max(1) as f64, metrics.means()?))
    }
}

/// A held-out dataset's features and preference pairs.
pub(crate) struct EvaluationPairs {
    pub features: Tensor,
    pub pairs: Vec<PreferencePair>,
}

impl EvaluationPairs {
    pub fn new(data: &LtrDataset) -> Result<Self> {
        Ok(EvaluationPairs {
            features: data.features_tensor()?,
            pairs: data.preference_pairs(),
        })
    }
}

fn gather(features: &Tensor, pairs: &[PreferencePair]) -> Result<(Tensor, Tensor)> {
    let index = |pick: fn(&PreferencePair) -> u32| -> Result<Tensor> {
        let idx: Vec<i64> = pairs.iter().map(|p| i64::from(pick(p))).collect();
        Ok(features.f_index_select(0, &Tensor::f_from_slice(&idx)?)?)
    };
    Ok((index(|p| p.0)?, index(|p| p.1)?))
}

/// `LossTrainer` over preference pairs: the batch's losses, normalised by its pair count.
pub(crate) struct PairwiseLossTrainer {
    pub batches: BatchSource,
    pub losses: LossSet,
}

impl Trainer for PairwiseLossTrainer {
    fn process_step(&mut self, model: &dyn Model, ctx: &mut TrainerContext) -> Result<Tensor> {
        let batch = self.batches.next_batch()?;
        ctx.add_value(
            "data/wait_seconds",
            self.batches.take_waited().as_secs_f64(),
        )?;
        let count = batch.len();
        let positive = model.forward(&batch.positive)?;
        let negative = model.forward(&batch.negative)?;
        let sums = self.losses.sums(&positive, &negative)?;
        let total_name = &self.losses.total_name;
        self.losses.visit(&sums, |name, sum| {
            ctx.add_metric(name.unwrap_or(total_name), sum, count)
        })?;
        let correct = positive
            .f_gt_tensor(&negative)?
            .f_to_kind(Kind::Double)?
            .f_sum(None)?;
        ctx.add_metric("accuracy", &correct, count)?;
        let loss = sums.weighted.f_div_scalar(count as f64)?;
        ctx.backward(&loss)?;
        Ok(loss.f_detach()?)
    }

    fn state(&self) -> serde_json::Value {
        serde_json::json!({ "sampler": self.batches.position() })
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let position = serde_json::from_value(state["sampler"].clone())
            .map_err(|e| crate::Error::checkpoint("trainer state", e.to_string()))?;
        self.batches.restore(position, "learner.trainer.sampler")
    }
}
