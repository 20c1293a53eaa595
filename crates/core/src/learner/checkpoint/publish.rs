//! The order in which a run's checkpoints directory changes, and how a new start puts it back
//! in order after a crash.
//!
//! At the end of a checkpointed epoch: write `epoch-XXXXXXXX/` (temporary directory, manifest,
//! rename), verify it, publish its weights as `last/`, then delete what retention gave up
//! and the `interrupted/` checkpoint it supersedes (the decisions are [`CheckpointPolicy`]'s). A crash before the rename leaves the
//! previous checkpoints untouched; a crash after it leaves a complete checkpoint that resume
//! takes, and [`tidy`] finishes the publication and the deletions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::faults::{check, Stage};
use super::{
    epoch_checkpoints, epoch_dir_name, model_file, quarantine, remove_temporaries, save_checkpoint,
    verify_checkpoint_dir, write_checkpoint_dir, CheckpointPolicy, LearnedModel, Progress,
    RankState, ResumePoint, MODEL,
};
use crate::learner::build::Run;
use crate::{Error, Result};

/// The directory holding the weights of the newest epoch checkpoint (the learned model).
pub(crate) const LAST: &str = "last";
/// The checkpoint written when a run is interrupted inside an epoch.
pub(crate) const INTERRUPTED: &str = "interrupted";
/// The small file of a checkpoint saying which epoch and step it holds.
pub(crate) const INFO: &str = "info.json";

/// The checkpoints `epochs` as the run's output lists them: epoch to model weights file.
fn advertised(root: &Path, epochs: &[u64]) -> BTreeMap<u64, String> {
    epochs
        .iter()
        .map(|e| (*e, model_file(&root.join(epoch_dir_name(*e)))))
        .collect()
}

/// What an epoch's checkpoint left: the learned model's weights file and the kept checkpoints.
pub(crate) struct Published {
    pub learned_model: String,
    pub checkpoints: BTreeMap<u64, String>,
}

/// Checkpoints the end of epoch `at.epoch` under `root`: the checkpoint (with the state of every
/// rank, `ranks`), then `last/`, then retention's deletions (`bests` the listeners' best
/// epochs). `at.checkpoints` is replaced by the kept ones.
///
/// # Errors
/// [`Error::Io`] or [`Error::Checkpoint`] when a write, the verification or a deletion fails;
/// what was committed before stays valid.
pub(crate) fn checkpoint_epoch(
    run: &Run,
    mut at: Progress,
    ranks: &[RankState],
    root: &Path,
    bests: &[u64],
    policy: &CheckpointPolicy,
) -> Result<Published> {
    let plan = policy.retention(at.epoch, &epoch_checkpoints(root), bests);
    // The checkpoint advertises only what is kept, itself included.
    at.checkpoints = advertised(root, &plan.kept);
    let dir = root.join(epoch_dir_name(at.epoch));
    save_checkpoint(run, &at, ranks, &dir)?;
    // The newest only once complete and verified: then publish it, then delete.
    verify_checkpoint_dir(&dir)?;
    let learned_model = publish_last(&dir, &root.join(LAST))?;
    for epoch in &plan.delete {
        let old = root.join(epoch_dir_name(*epoch));
        check(Stage::Prune, &old)?;
        remove_dir(&old)?;
    }
    remove_dir(&root.join(INTERRUPTED))?;
    Ok(Published {
        learned_model,
        checkpoints: at.checkpoints,
    })
}

fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// Publishes the weights of checkpoint `from` as `last` (replaced whole); returns its weights
/// file.
fn publish_last(from: &Path, last: &Path) -> Result<String> {
    write_checkpoint_dir(last, |tmp| {
        let model = tmp.join(MODEL);
        if let Some(parent) = model.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        for (source, target) in [(from.join(MODEL), model), (from.join(INFO), tmp.join(INFO))] {
            std::fs::copy(&source, &target).map_err(|e| Error::io(&source, e))?;
        }
        Ok(())
    })?;
    Ok(model_file(last))
}

/// The global step a checkpoint directory says it holds (0 when unreadable).
pub(crate) fn recorded_step(dir: &Path) -> u64 {
    std::fs::read(dir.join(INFO))
        .ok()
        .and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok())
        .and_then(|v| v["steps"].as_u64())
        .unwrap_or(0)
}

/// What [`tidy`] found and did.
#[derive(Debug, Default)]
pub(crate) struct Tidied {
    /// Reports for the user (damaged checkpoints moved aside).
    pub warnings: Vec<String>,
    /// The learned model's weights, when `last/` holds the resumed epoch's.
    pub learned_model: Option<String>,
}

/// Puts the checkpoints directory `root` in order at the start of a run that resumed from
/// `resumed` (at `progress`), or started afresh: removes what killed saves left, moves the
/// checkpoints that failed to load (`skipped`, with why) out of resume's way while keeping
/// them, deletes the checkpoints the crashed run had given up, and publishes `last/` again
/// when a crash interrupted its publication (see [`CheckpointPolicy::after_resume`]).
///
/// # Errors
/// [`Error::Io`] when a removal, rename or copy fails.
pub(crate) fn tidy(
    root: &Path,
    resumed: Option<&Path>,
    progress: &Progress,
    policy: &CheckpointPolicy,
    skipped: &[(PathBuf, Error)],
) -> Result<Tidied> {
    let mut tidied = Tidied::default();
    remove_temporaries(root)?;
    for (dir, _) in skipped {
        let kept = quarantine(dir)?;
        tidied.warnings.push(format!(
            "the checkpoint {} that was skipped is kept as {}, where resume no longer reads it",
            dir.display(),
            kept.display()
        ));
    }
    // A fresh start has nothing more to finish.
    let Some(resumed) = resumed else {
        return Ok(tidied);
    };
    let at = ResumePoint {
        epoch: progress.epoch,
        step: progress.step,
        interrupted: resumed.file_name().is_some_and(|n| n == INTERRUPTED),
        advertised: progress.checkpoints.keys().copied().collect(),
    };
    let last = root.join(LAST);
    let last_step = verify_checkpoint_dir(&last)
        .is_ok()
        .then(|| recorded_step(&last));
    let plan = policy.after_resume(Some(&at), &epoch_checkpoints(root), last_step);
    for epoch in plan.delete {
        remove_dir(&root.join(epoch_dir_name(epoch)))?;
    }
    tidied.learned_model = match plan.learned_model {
        LearnedModel::Republish => Some(publish_last(resumed, &last)?),
        LearnedModel::Last => Some(model_file(&last)),
        LearnedModel::None => None,
    };
    Ok(tidied)
}
