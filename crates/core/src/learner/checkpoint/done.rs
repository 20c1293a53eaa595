//! What a done run keeps of its epoch checkpoints: their models, and what its result is read
//! from. Once the run has trained its last epoch or stopped early, nothing resumes from it but
//! a run that returns that same result, so the training state (optimizer moments, sampler
//! positions, random generators: for Adam twice the model) goes, unless the Learner's
//! `keep_training_state` says otherwise (the decision is [`CheckpointPolicy::when_done`]).
//!
//! Each checkpoint changes in three steps, none of which leaves it unusable: [`FINAL_STATE`] is
//! written beside the files; the manifest is replaced (atomically) by one listing the model,
//! `info.json` and [`FINAL_STATE`]; then the files it no longer lists are deleted. A crash
//! before the replacement leaves the whole checkpoint, after it one that resumes the done run;
//! the next start, done at once, drops again and deletes what is left.

use std::path::Path;

use super::faults::{check, Stage};
use super::{
    epoch_dir_name, listed_files, relist_checkpoint_dir, remove_unlisted, write_final_state,
    CheckpointPolicy, FINAL_STATE, INFO, MODEL,
};
use crate::learner::DroppedTrainingState;
use crate::{Error, Result};

/// What dropping the training state did.
#[derive(Debug, Default)]
pub(crate) struct Dropped {
    /// What was deleted (None when nothing was).
    pub state: Option<DroppedTrainingState>,
    /// The checkpoints that could not be read, whose files are left as they were.
    pub warnings: Vec<String>,
}

/// Drops the training state of the epoch checkpoints under `root` that `policy` gives up once
/// the run is done, with `kept` the kept ones.
///
/// # Errors
/// [`Error::Io`] when a write, rename or deletion fails. A checkpoint that cannot be read (a
/// damaged manifest or state) is reported in a warning and left as it is.
pub(crate) fn drop_training_state(
    root: &Path,
    kept: &[u64],
    policy: &CheckpointPolicy,
) -> Result<Dropped> {
    let mut dropped = Dropped::default();
    let mut epochs = Vec::new();
    let mut bytes = 0;
    for epoch in policy.when_done(kept) {
        let dir = root.join(epoch_dir_name(epoch));
        match models_only(&dir) {
            Ok(0) => {}
            Ok(n) => {
                epochs.push(epoch);
                bytes += n;
            }
            Err(err @ Error::Checkpoint { .. }) => dropped.warnings.push(format!(
                "kept the training state of {}, which could not be read: {err}",
                dir.display()
            )),
            Err(err) => return Err(err),
        }
    }
    if !epochs.is_empty() {
        dropped.state = Some(DroppedTrainingState { epochs, bytes });
    }
    Ok(dropped)
}

/// Reduces checkpoint `dir` to its models and [`FINAL_STATE`] (again after a crash: a manifest
/// already replaced is kept); returns the bytes deleted.
fn models_only(dir: &Path) -> Result<u64> {
    if !listed_files(dir)?.contains(FINAL_STATE) {
        write_final_state(dir)?;
        check(Stage::Drop, dir)?;
        relist_checkpoint_dir(dir, &[MODEL, INFO], &[FINAL_STATE])?;
    }
    check(Stage::Drop, dir)?;
    remove_unlisted(dir)
}
