use std::collections::BTreeMap;

use serde_json::json;

use super::best::{BestTracker, ValidationSchedule};
use super::{Listener, ListenerCall, ListenerView};
use crate::learner::trainers::{EvaluationBatching, EvaluationPairs};
use crate::learner::{Observer, TrainerContext};
use crate::losses::LossSet;
use crate::models::Model;
use crate::Result;

/// `TrainerValidationLoss`: the trainer's losses on held-out pairs; the **lowest** is best.
pub(crate) struct ValidationLoss {
    pub id: String,
    pub data: EvaluationPairs,
    pub losses: LossSet,
    /// Outer batches of `batch_size`, split by `TrainerValidationLoss.batcher`.
    pub batching: EvaluationBatching,
    pub tracker: BestTracker,
    pub schedule: ValidationSchedule,
}

impl ValidationLoss {
    fn best_epoch(&self) -> Option<u64> {
        self.tracker.best.as_ref().map(|b| b.epoch)
    }
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
        if self.schedule.stopped_before(self.best_epoch(), epoch) {
            return Ok(ListenerCall::stop());
        }
        let mut logged = BTreeMap::new();
        if self.schedule.due(epoch) {
            let mut warnings = Vec::new();
            let (total, metrics) = self.losses.evaluate(
                model,
                &self.data,
                &mut self.batching,
                &self.id,
                &mut |w| warnings.push(w),
            )?;
            for w in warnings {
                ctx.warn(w);
            }
            logged = metrics;
            if let Some(t) = self.data.take_truncation() {
                logged.insert(
                    format!("{}/truncated_fraction", self.id),
                    t.cut as f64 / t.inputs.max(1) as f64,
                );
            }
            if self.schedule.tracks(epoch) {
                self.tracker.observe(epoch, total, model)?;
            }
            self.schedule.write_info(&self.output())?;
        }
        Ok(ListenerCall {
            status: self.schedule.vote(self.best_epoch(), epoch),
            metrics: logged,
        })
    }

    fn output(&self) -> serde_json::Value {
        json!({ "loss": self.tracker.best })
    }

    fn state(&self) -> serde_json::Value {
        json!(self.tracker.best)
    }

    fn best_epochs(&self) -> Vec<u64> {
        self.best_epoch().into_iter().collect()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        self.tracker.restore(state)
    }

    fn mute_files(&mut self) {
        self.tracker.mute();
        self.schedule.info = None;
    }
}
