//! Listeners: called after every epoch; they validate, keep best models and vote on stopping.

pub(crate) mod best;
mod js;
mod loss;
mod rank_metrics;
mod ranking;
mod validation;

pub(crate) use js::*;
pub(crate) use loss::*;
pub use rank_metrics::*;
pub(crate) use ranking::*;
pub(crate) use validation::ValidationListener;

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Observer, TrainerContext};
use crate::models::Model;
use crate::Result;

/// A listener's vote. Votes combine by maximum: training stops when some listener says
/// `Stop` and none says `DontStop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ListenerStatus {
    /// No opinion (also what a listener without early stopping says).
    NoDecision = 0,
    /// Stop training.
    Stop = 1,
    /// Keep training, whatever others say.
    DontStop = 2,
}

/// What a listener sees of the epoch that just ended.
#[derive(Debug, Clone, Serialize)]
pub struct ListenerView<'a> {
    /// The epoch, from 1.
    pub epoch: u64,
    /// The global step.
    pub step: u64,
    /// The epoch's training metrics.
    pub train: &'a BTreeMap<String, f64>,
}

/// A listener's result for one epoch.
pub(crate) struct ListenerCall {
    pub status: ListenerStatus,
    /// Metrics it measured, by tag (`<id>/<metric>`).
    pub metrics: BTreeMap<String, f64>,
}

impl ListenerCall {
    /// STOP, having measured nothing.
    pub fn stop() -> Self {
        ListenerCall {
            status: ListenerStatus::Stop,
            metrics: BTreeMap::new(),
        }
    }
}

pub(crate) trait Listener: Send {
    fn id(&self) -> &str;
    fn call(
        &mut self,
        view: &ListenerView<'_>,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        observer: &mut dyn Observer,
    ) -> Result<ListenerCall>;
    /// Measures the model without tracking a best or voting: the validation before the first
    /// step (`epoch` 0). Listeners that do not validate measure nothing.
    fn measure(
        &mut self,
        _epoch: u64,
        _model: &dyn Model,
        _ctx: &mut TrainerContext,
        _observer: &mut dyn Observer,
    ) -> Result<BTreeMap<String, f64>> {
        Ok(BTreeMap::new())
    }
    /// Every how many epochs it runs (what the progress display plans validations with).
    fn interval(&self) -> u64 {
        1
    }
    /// What `learn()` reports for this listener (best epochs, values, model paths).
    fn output(&self) -> serde_json::Value;
    /// The epochs of its best values (their checkpoints are kept).
    fn best_epochs(&self) -> Vec<u64> {
        Vec::new()
    }
    /// What it must remember across a resume.
    fn state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Continues from a saved [`Listener::state`].
    fn restore(&mut self, _state: &serde_json::Value) -> Result<()> {
        Ok(())
    }
    /// Stops writing files (best models, info files) while still validating and voting: on
    /// the ranks other than 0 of a distributed run, where rank 0 writes them.
    fn mute_files(&mut self) {}
}
