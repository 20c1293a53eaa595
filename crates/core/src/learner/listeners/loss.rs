use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;

use super::best::{early_stop_vote, write_json_atomic, BestTracker};
use super::{Listener, ListenerCall, ListenerStatus, ListenerView};
use crate::learner::trainers::{EvaluationPairs, LossSet};
use crate::learner::{Observer, TrainerContext};
use crate::models::Model;
use crate::Result;

/// `TrainerValidationLoss`: the trainer's losses on held-out pairs; the **lowest** is best.
pub(crate) struct ValidationLoss {
    pub id: String,
    pub data: EvaluationPairs,
    pub losses: LossSet,
    pub batch_size: usize,
    pub tracker: BestTracker,
    pub warmup: i64,
    pub validation_interval: u64,
    pub early_stop: u64,
    pub info: Option<PathBuf>,
}

impl Listener for ValidationLoss {
    fn id(&self) -> &str {
        &self.id
    }

    fn call(
        &mut self,
        view: &ListenerView<'_>,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        _: &mut dyn Observer,
    ) -> Result<ListenerCall> {
        let epoch = view.epoch;
        let best_epoch = |t: &BestTracker| t.best.as_ref().map(|b| b.epoch);
        if early_stop_vote(
            self.early_stop,
            best_epoch(&self.tracker),
            epoch.saturating_sub(1),
        ) == ListenerStatus::Stop
        {
            return Ok(ListenerCall {
                status: ListenerStatus::Stop,
                metrics: BTreeMap::new(),
            });
        }
        let mut logged = BTreeMap::new();
        if epoch.is_multiple_of(self.validation_interval) {
            let prefix = format!("{}/loss/", self.id);
            let mut scratch = TrainerContext::new(ctx.steps_per_epoch, None, None);
            let total =
                self.losses
                    .evaluate(model, &self.data, self.batch_size, &mut scratch, &prefix)?;
            logged = scratch.take_metrics()?;
            // With several losses the weighted sum is logged as `<id>/loss`, as the reference does.
            if let Some(sum) = logged.keys().find(|k| k.contains('+')).cloned() {
                if let Some(v) = logged.remove(&sum) {
                    logged.insert(format!("{}/loss", self.id), v);
                }
            }
            if epoch as i64 >= self.warmup {
                self.tracker.observe(epoch, total, model)?;
            }
            if let Some(info) = &self.info {
                write_json_atomic(info, &self.output())?;
            }
        }
        Ok(ListenerCall {
            status: early_stop_vote(self.early_stop, best_epoch(&self.tracker), epoch),
            metrics: logged,
        })
    }

    fn output(&self) -> serde_json::Value {
        json!({ "loss": self.tracker.best })
    }
}
