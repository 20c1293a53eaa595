//! `TrainerValidationLoss`: the trainer's losses on held-out pairs; the **lowest** is best.

use std::path::PathBuf;

use super::best::{BestTracker, Direction, ValidationSchedule};
use super::validation::{BatchProgress, Bests, Measures, ValidationListener, Validator};
use crate::learner::trainers::{EvaluationBatching, EvaluationPairs};
use crate::learner::TrainerContext;
use crate::losses::LossSet;
use crate::models::Model;
use crate::Result;

/// The name of the one metric this listener tracks.
const LOSS: &str = "loss";

/// The trainer's losses over held-out pairs.
pub(crate) struct ValidationLoss {
    pub data: EvaluationPairs,
    pub losses: LossSet,
    /// Outer batches of `batch_size`, split by `TrainerValidationLoss.batcher`.
    pub batching: EvaluationBatching,
}

impl ValidationLoss {
    /// The listener: the loss tracked (lowest best), its model saved at `model` when given.
    pub fn listener(
        self,
        id: String,
        model: Option<PathBuf>,
        schedule: ValidationSchedule,
    ) -> ValidationListener<Self> {
        let tracker = BestTracker::new(Direction::Lower, model);
        ValidationListener {
            id,
            validator: self,
            bests: Bests {
                trackers: [(LOSS.to_string(), tracker)].into(),
                kept: vec![LOSS.to_string()],
            },
            schedule,
        }
    }
}

impl Validator for ValidationLoss {
    fn unit(&self) -> &'static str {
        "pairs"
    }

    fn measure(
        &mut self,
        id: &str,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        progress: &mut BatchProgress<'_>,
    ) -> Result<Measures> {
        let mut warnings = Vec::new();
        let (total, mut logged) = self.losses.evaluate(
            model,
            &self.data,
            &mut self.batching,
            id,
            &mut |w| warnings.push(w),
            progress,
        )?;
        for w in warnings {
            ctx.warn(w);
        }
        if let Some(t) = self.data.take_truncation() {
            logged.insert(
                format!("{id}/truncated_fraction"),
                t.cut as f64 / t.inputs.max(1) as f64,
            );
        }
        Ok(Measures {
            logged,
            tracked: vec![(LOSS.to_string(), total)],
        })
    }
}
