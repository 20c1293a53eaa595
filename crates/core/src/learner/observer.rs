use std::collections::BTreeMap;

use serde::Serialize;

use crate::Result;

/// What one epoch produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EpochReport {
    /// Epoch number, from 1.
    pub epoch: u64,
    /// Global step count at the end of the epoch.
    pub step: u64,
    /// Mean over the epoch's pairs of the weighted sum of the losses.
    pub loss: f64,
    /// Mean of each loss (unweighted) by its name, e.g. `pair-hinge`.
    pub losses: BTreeMap<String, f64>,
    /// Listener metrics, e.g. `heldout/accuracy`.
    pub metrics: BTreeMap<String, f64>,
    /// Optimizer steps per second of wall time during the epoch.
    pub steps_per_second: f64,
}

/// Progress inside an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepProgress {
    /// Current epoch, from 1.
    pub epoch: u64,
    /// Global step count.
    pub step: u64,
    /// Steps the whole run will take.
    pub total_steps: u64,
}

/// Receives what the loop reports. Returning an error stops the run with that error.
pub trait Observer {
    /// After every optimizer step; implementations throttle what they forward.
    fn on_step(&mut self, _progress: StepProgress) -> Result<()> {
        Ok(())
    }
    /// After every epoch.
    fn on_epoch(&mut self, _report: &EpochReport) -> Result<()> {
        Ok(())
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoObserver;

impl Observer for NoObserver {}
