use tch::{Kind, Tensor};

use super::Trainer;
use crate::data::{BatchSource, LtrDataset, PreferencePair};
use crate::learner::TrainerContext;
use crate::losses::PairwiseLoss;
use crate::models::Model;
use crate::Result;

/// The losses of a trainer, computed together.
pub(crate) struct LossSet {
    pub losses: Vec<Box<dyn PairwiseLoss>>,
}

/// Sums of one batch: the weighted total and each loss's own sum.
pub(crate) struct LossSums {
    pub weighted: Tensor,
    pub each: Vec<Tensor>,
}

impl LossSet {
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

    /// Records each loss under its name and, with two or more, their weighted sum under the
    /// sorted names joined by `+`.
    pub fn record(
        &self,
        sums: &LossSums,
        count: i64,
        ctx: &mut TrainerContext,
        prefix: &str,
    ) -> Result<()> {
        for (loss, sum) in self.losses.iter().zip(&sums.each) {
            ctx.add_metric(&format!("{prefix}{}", loss.name()), sum, count)?;
        }
        if self.losses.len() >= 2 {
            let mut names: Vec<&str> = self.losses.iter().map(|l| l.name()).collect();
            names.sort_unstable();
            ctx.add_metric(
                &format!("{prefix}{}", names.join("+")),
                &sums.weighted,
                count,
            )?;
        }
        Ok(())
    }

    /// Mean weighted loss of `model` over every preference pair of `data`, in chunks.
    pub fn evaluate(
        &self,
        model: &dyn Model,
        data: &EvaluationPairs,
        chunk: usize,
        ctx: &mut TrainerContext,
        prefix: &str,
    ) -> Result<f64> {
        let _no_grad = tch::no_grad_guard();
        let mut total = 0.0;
        let mut count = 0i64;
        for pairs in data.pairs.chunks(chunk.max(1)) {
            let (pos, neg) = gather(&data.features, pairs)?;
            let sums = self.sums(&model.forward(&pos)?, &model.forward(&neg)?)?;
            let n = pairs.len() as i64;
            self.record(&sums, n, ctx, prefix)?;
            total += sums.weighted.f_double_value(&[])?;
            count += n;
        }
        Ok(total / count.max(1) as f64)
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
        self.losses.record(&sums, count, ctx, "")?;
        let correct = positive
            .f_gt_tensor(&negative)?
            .f_to_kind(Kind::Double)?
            .f_sum(None)?;
        ctx.add_metric("accuracy", &correct, count)?;
        let loss = sums.weighted.f_div_scalar(count as f64)?;
        loss.f_backward()?;
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
