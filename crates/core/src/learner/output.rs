//! [`LearnOutput`]: what a finished run returns (epoch reports, listeners' results, model
//! weights, checkpoints, why it stopped, what it dropped from them, warnings).

use std::collections::BTreeMap;

use serde::Serialize;

use super::EpochReport;

/// What a finished run returns (the Learner's output).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LearnOutput {
    /// One report per epoch run, in order.
    pub epochs: Vec<EpochReport>,
    /// Each listener's result (best epochs, values, model paths), by id.
    pub listeners: BTreeMap<String, serde_json::Value>,
    /// The final model's weights (safetensors).
    pub learned_model: Option<String>,
    /// Saved checkpoints' model weights by epoch.
    pub checkpoints: BTreeMap<u64, String>,
    /// Why training ended before `max_epochs`, if it did.
    pub stopped: Option<String>,
    /// The checkpoint this run continued from, if it resumed.
    pub resumed_from: Option<String>,
    /// What went wrong without stopping the run (skipped checkpoints, ...).
    pub warnings: Vec<String>,
    /// The validation listeners' metrics before the first step, when the Learner's
    /// `validate_at_start` asks.
    pub start_metrics: Option<BTreeMap<String, f64>>,
    /// The training state this run dropped from the kept epoch checkpoints once it was done
    /// (none with the Learner's `keep_training_state`, or when it dropped nothing).
    pub dropped_training_state: Option<DroppedTrainingState>,
}

/// What a done run dropped from its epoch checkpoints: what only resuming needs (optimizer
/// moments, sampler positions, random generators), their models kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedTrainingState {
    /// The epochs of the checkpoints it was dropped from.
    pub epochs: Vec<u64>,
    /// The bytes of the files deleted.
    pub bytes: u64,
}

#[cfg(test)]
impl LearnOutput {
    /// The epochs' losses bit for bit, to compare runs that must be identical.
    pub(crate) fn loss_bits(&self) -> Vec<u64> {
        self.epochs.iter().map(|e| e.loss.to_bits()).collect()
    }
}
