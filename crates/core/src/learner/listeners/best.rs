//! What validation listeners share: the best value of a metric and its saved model
//! ([`BestTracker`]), the early-stopping vote, atomic JSON writes and the [`ValidationSchedule`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ListenerStatus;
use crate::models::Model;
use crate::{Error, Result};

/// Whether higher or lower values are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Higher,
    Lower,
}

/// The best value of one metric so far, and where its model was saved.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub(crate) struct Best {
    pub epoch: u64,
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
}

/// Tracks one metric's best value; saves the model when it improves.
#[derive(Debug)]
pub(crate) struct BestTracker {
    direction: Direction,
    /// Where to save the best model, or None when it is not kept.
    model_path: Option<PathBuf>,
    pub best: Option<Best>,
}

impl BestTracker {
    pub fn new(direction: Direction, model_path: Option<PathBuf>) -> Self {
        BestTracker {
            direction,
            model_path,
            best: None,
        }
    }

    /// Keeps tracking, without saving models (another rank saves them).
    pub fn mute(&mut self) {
        self.model_path = None;
    }

    /// Continues from a saved best.
    pub fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        self.best = serde_json::from_value(state.clone())
            .map_err(|e| Error::checkpoint("listener state", e.to_string()))?;
        Ok(())
    }

    /// Records `value` for `epoch`; returns whether it is a new best.
    pub fn observe(&mut self, epoch: u64, value: f64, model: &dyn Model) -> Result<bool> {
        let better = match &self.best {
            None => value.is_finite(),
            Some(b) => match self.direction {
                Direction::Higher => value > b.value,
                Direction::Lower => value < b.value,
            },
        };
        if !better {
            return Ok(false);
        }
        let saved = match &self.model_path {
            Some(path) => {
                model.save(path)?;
                Some(path.clone())
            }
            None => None,
        };
        self.best = Some(Best {
            epoch,
            value,
            model: saved,
        });
        Ok(true)
    }
}

/// The early-stopping vote at `epoch` given the best epoch so far. Without early stopping a
/// listener has no opinion, so it never vetoes another listener's STOP.
pub(crate) fn early_stop_vote(
    early_stop: u64,
    best_epoch: Option<u64>,
    epoch: u64,
) -> ListenerStatus {
    if early_stop == 0 {
        return ListenerStatus::NoDecision;
    }
    match best_epoch {
        Some(best) if epoch.saturating_sub(best) >= early_stop => ListenerStatus::Stop,
        _ => ListenerStatus::DontStop,
    }
}

/// Writes JSON through a temporary file and a rename.
pub(crate) fn write_json_atomic(path: &Path, value: &serde_json::Value) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let tmp = crate::fsutil::temporary_sibling(path);
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_follow_the_reference_example_without_its_veto() {
        // early_stop=3, best at epoch 5: epochs 6 and 7 keep going, epoch 8 stops.
        assert_eq!(early_stop_vote(3, Some(5), 6), ListenerStatus::DontStop);
        assert_eq!(early_stop_vote(3, Some(5), 7), ListenerStatus::DontStop);
        assert_eq!(early_stop_vote(3, Some(5), 8), ListenerStatus::Stop);
        assert_eq!(early_stop_vote(3, None, 8), ListenerStatus::DontStop);
        assert_eq!(early_stop_vote(0, Some(1), 100), ListenerStatus::NoDecision);
        // Votes combine by maximum: NO_DECISION never vetoes STOP, DONT_STOP does.
        assert_eq!(
            ListenerStatus::Stop.max(ListenerStatus::NoDecision),
            ListenerStatus::Stop
        );
        assert_eq!(
            ListenerStatus::Stop.max(ListenerStatus::DontStop),
            ListenerStatus::DontStop
        );
    }
}

/// When a validation listener validates, tracks bests, writes `info.json` and votes: the part
/// the loss and ranking listeners share.
#[derive(Debug)]
pub(crate) struct ValidationSchedule {
    /// Epochs before bests are tracked (-1: from the start).
    pub warmup: i64,
    pub validation_interval: u64,
    pub early_stop: u64,
    pub info: Option<PathBuf>,
}

impl ValidationSchedule {
    /// STOP at once when the previous epoch already decided it (the reference's pre-check).
    pub fn stopped_before(&self, best_epoch: Option<u64>, epoch: u64) -> bool {
        early_stop_vote(self.early_stop, best_epoch, epoch.saturating_sub(1))
            == ListenerStatus::Stop
    }

    /// Whether this epoch is validated.
    pub fn due(&self, epoch: u64) -> bool {
        epoch.is_multiple_of(self.validation_interval)
    }

    /// Whether a value measured at this epoch may become a best.
    pub fn tracks(&self, epoch: u64) -> bool {
        epoch as i64 >= self.warmup
    }

    /// Records the listener's bests in `info.json`, when it has one.
    pub fn write_info(&self, output: &serde_json::Value) -> Result<()> {
        match &self.info {
            Some(info) => write_json_atomic(info, output),
            None => Ok(()),
        }
    }

    pub fn vote(&self, best_epoch: Option<u64>, epoch: u64) -> ListenerStatus {
        early_stop_vote(self.early_stop, best_epoch, epoch)
    }
}
