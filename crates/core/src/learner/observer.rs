//! The [`Observer`] the loop reports to (epoch reports, step progress) and through which it runs
//! what lives on the JavaScript side (listeners, hooks).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ListenerStatus, ListenerView};
use crate::{Error, Result};

/// What one epoch produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochReport {
    /// Epoch number, from 1.
    pub epoch: u64,
    /// Global step count at the end of the epoch.
    pub step: u64,
    /// Mean over the epoch's records of the weighted sum of the losses.
    pub loss: f64,
    /// Every training metric of the epoch (`pair-hinge`, `accuracy`, learning rates, ...).
    pub train: BTreeMap<String, f64>,
    /// Listener metrics, e.g. `heldout/ndcg@10`.
    pub metrics: BTreeMap<String, f64>,
    /// Optimizer steps per second of wall time during the epoch.
    pub steps_per_second: f64,
    /// Seconds the listeners took at the end of the epoch (validation, TypeScript listeners).
    #[serde(default)]
    pub validation_seconds: f64,
    /// The training loss of each of the epoch's steps, when the Learner's `step_losses` asks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_losses: Vec<f64>,
}

/// Progress inside an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepProgress {
    /// Current epoch, from 1.
    pub epoch: u64,
    /// Global step count.
    pub step: u64,
    /// Steps the whole run will take (at most).
    pub total_steps: u64,
}

/// Where a run starts, reported once before its first step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStart {
    /// Epochs already completed (by the run this one resumes).
    pub epochs_done: u64,
    /// The global step the run starts from.
    pub step: u64,
    /// Steps the whole run will take (at most).
    pub total_steps: u64,
    /// Every how many epochs each listener runs (1 for those run every epoch).
    pub listener_intervals: Vec<u64>,
    /// The checkpoint directory the run resumes from.
    pub resumed_from: Option<String>,
    /// The model's parameters drawn new rather than read from its pretrained files (a
    /// cross-encoder's head; see [`crate::models::Model::new_weights`]); empty when resuming.
    pub new_weights: Vec<String>,
}

/// A listener validating at the end of an epoch: `done` of `total` units scored (`total` is 0
/// while unknown, as for a TypeScript listener).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationProgress<'a> {
    /// The epoch that just ended.
    pub epoch: u64,
    /// The listener's id.
    pub listener: &'a str,
    /// Units scored so far.
    pub done: u64,
    /// Units to score (0 while unknown).
    pub total: u64,
    /// What `done` counts: `queries` (a ranking validation on features), `pairs` (query-document
    /// pairs re-ranked, preference pairs of a validation loss), or empty while unknown.
    pub unit: &'static str,
}

impl<'a> ValidationProgress<'a> {
    /// Listener `listener` starts validating the model of `epoch` (0: before the first step).
    pub fn starting(epoch: u64, listener: &'a str) -> Self {
        ValidationProgress {
            epoch,
            listener,
            done: 0,
            total: 0,
            unit: "",
        }
    }
}

/// Scores rows with the model being trained (evaluation mode, no gradients), for a listener
/// written in JavaScript.
pub type ListenerScorer<'a> = dyn FnMut(&crate::data::ScoreInput) -> Result<Vec<f32>> + 'a;

/// What a JavaScript listener answered.
#[derive(Debug, Clone, Deserialize)]
pub struct JsListenerReply {
    /// Its vote.
    pub status: ListenerStatus,
    /// Metrics it wants logged, by tag.
    #[serde(default)]
    pub metrics: Option<BTreeMap<String, f64>>,
    /// What `learn()` reports for it.
    #[serde(default)]
    pub output: serde_json::Value,
}

/// Receives what the loop reports and runs what lives on the JavaScript side. Returning an
/// error stops the run with that error.
pub trait Observer {
    /// After every optimizer step; implementations throttle what they forward.
    fn on_step(&mut self, _progress: StepProgress) -> Result<()> {
        Ok(())
    }
    /// Whether the next step's report should carry the epoch's running loss. Reading it waits
    /// for the device, so observers ask only for the steps they forward.
    fn wants_running_loss(&mut self) -> bool {
        false
    }
    /// After every optimizer step, with the mean loss of the epoch's steps so far when
    /// [`Observer::wants_running_loss`] asked for it; by default the same as `on_step`.
    fn on_step_with_loss(
        &mut self,
        progress: StepProgress,
        _running_loss: Option<f64>,
    ) -> Result<()> {
        self.on_step(progress)
    }
    /// Once, before the first step (after a resume's checkpoint is loaded).
    fn on_start(&mut self, _start: &RunStart) -> Result<()> {
        Ok(())
    }
    /// As listeners validate: when each starts, then as it scores; implementations throttle
    /// what they forward.
    fn on_validation(&mut self, _progress: ValidationProgress<'_>) -> Result<()> {
        Ok(())
    }
    /// After every epoch.
    fn on_epoch(&mut self, _report: &EpochReport) -> Result<()> {
        Ok(())
    }
    /// Runs phase `phase` (`before` or `after`) of the JavaScript hook `key` and waits for it.
    ///
    /// # Errors
    /// [`Error::Callback`] when the hook fails or there is no JavaScript side.
    fn js_hook(&mut self, key: &str, _phase: &str, _progress: StepProgress) -> Result<()> {
        Err(Error::Callback(format!(
            "hook {key:?} is written in JavaScript, but this run has no JavaScript side"
        )))
    }
    /// Something the user should know that does not stop the run (a skipped checkpoint, ...).
    fn warning(&mut self, _message: &str) {}
    /// The way to data held or generated on the JavaScript side, if there is one.
    fn js_data(&self) -> Option<std::sync::Arc<dyn crate::data::JsData>> {
        None
    }
    /// Runs the JavaScript listener `key` and waits for its vote; meanwhile the listener may
    /// score records with the model being trained through `score`, on this thread.
    ///
    /// # Errors
    /// [`Error::Callback`] when the listener fails or there is no JavaScript side.
    fn js_listener(
        &mut self,
        key: &str,
        _view: &ListenerView<'_>,
        _score: &mut ListenerScorer<'_>,
    ) -> Result<JsListenerReply> {
        Err(Error::Callback(format!(
            "listener {key:?} is written in JavaScript, but this run has no JavaScript side"
        )))
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}
