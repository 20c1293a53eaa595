//! [`resume`]: the run built from its configuration and restored from the newest checkpoint
//! that loads, and [`StartAt`], where the epoch loop takes it up.

use std::path::{Path, PathBuf};

use tch::Tensor;

use super::Placement;
use crate::config::LearnerConfig;
use crate::learner::build::{build, Run};
use crate::learner::checkpoint::{
    checkpoint_dirs, load_checkpoint, recorded_step, CheckpointPolicy, Progress,
};
use crate::learner::Observer;
use crate::{Error, Result};

/// A checkpoint that failed to load, and why.
pub(super) type Skipped = Vec<(PathBuf, Error)>;

/// The run as built and restored.
pub(super) struct Resumed {
    pub(super) run: Run,
    pub(super) progress: Progress,
    /// The checkpoint it continues from.
    pub(super) from: Option<PathBuf>,
    /// Those that failed to load (damaged or not fitting: never deleted, see
    /// [`tidy`](super::tidy)).
    pub(super) skipped: Skipped,
}

/// Builds the run and restores the newest checkpoint that loads.
pub(super) fn resume(
    config: &LearnerConfig,
    placement: &Placement,
    observer: &mut dyn Observer,
) -> Result<Resumed> {
    let js = observer.js_data();
    let (runtime, shard) = (&placement.runtime, placement.shard);
    let mut resumed = Resumed {
        run: build(config, runtime, shard, &js)?,
        progress: Progress::default(),
        from: None,
        skipped: Vec::new(),
    };
    let Some(root) = config.checkpointspath.as_deref().map(Path::new) else {
        return Ok(resumed);
    };
    let policy = CheckpointPolicy::of(config);
    let mut candidates: Vec<(u64, PathBuf)> = checkpoint_dirs(root)
        .into_iter()
        .map(|d| (recorded_step(&d), d))
        .collect();
    candidates.sort_by(|a, b| b.cmp(a));
    for (_, dir) in candidates {
        match load_checkpoint(&mut resumed.run, &dir, shard.rank, &policy) {
            Ok(progress) => {
                resumed.progress = progress;
                resumed.from = Some(dir);
                return Ok(resumed);
            }
            Err(err) => {
                resumed.skipped.push((dir, err));
                // A failed restore may have changed some of the run: start from a fresh one.
                resumed.run = build(config, runtime, shard, &js)?;
            }
        }
    }
    Ok(resumed)
}

/// Where the epoch loop starts: inside an epoch when resuming from an interruption.
pub(super) struct StartAt {
    /// The last completed epoch.
    pub(super) epoch: u64,
    /// Steps already done in the next epoch.
    pub(super) steps_in_epoch: u64,
    /// Their summed losses.
    pub(super) partial_loss: Option<Tensor>,
}

impl StartAt {
    pub(super) fn of(progress: &Progress) -> Result<Self> {
        Ok(StartAt {
            epoch: progress.epoch,
            steps_in_epoch: progress.steps_in_epoch,
            partial_loss: match progress.partial_loss {
                Some(v) => Some(Tensor::f_from_slice(&[v as f32])?.f_squeeze()?),
                None => None,
            },
        })
    }
}
