//! The checkpoint policy: which epochs get a checkpoint, which checkpoints are kept, what a
//! resumed run still trains and what it puts in order first. Pure decisions over epoch and
//! step numbers and what the checkpoints directory holds (as plain data); the code in
//! `publish.rs` and `learner/run.rs` carries them out.
//!
//! At each epoch's end the loop asks [`CheckpointPolicy::at_epoch_end`]; when a checkpoint is
//! due, it lists the epoch checkpoints on disk, asks [`CheckpointPolicy::retention`] what to
//! keep, writes the new checkpoint (advertising the kept ones), publishes it, and only then
//! deletes what retention gave up. A crash at any moment of that sequence leaves the previous
//! checkpoints in place, and [`CheckpointPolicy::after_resume`] says what the next start
//! finishes. Once the run is done, [`CheckpointPolicy::when_done`] says which checkpoints lose
//! their training state, and [`CheckpointPolicy::done_at`] whether a checkpoint without it can
//! still be resumed from (only when nothing is left to train).

use std::ops::RangeInclusive;

use crate::config::LearnerConfig;

/// A run's checkpoint settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckpointPolicy {
    /// A checkpoint every `interval` epochs (`checkpoint_interval`; 0, which the configuration
    /// refuses, counts as 1).
    pub interval: u64,
    /// The last epoch (`max_epochs`).
    pub max_epochs: u64,
    /// How many of the newest epoch checkpoints to keep (`checkpoint_keep`): the new one always
    /// stays, and so does every listener's best.
    pub keep: u64,
    /// Whether a done run keeps the training state of its checkpoints (`keep_training_state`).
    pub keep_training_state: bool,
}

/// What the end of an epoch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpochEnd {
    /// Whether it writes a checkpoint (then retention decides what stays).
    pub save: bool,
    /// Whether the run ends after it: the last epoch, or a stop.
    pub finished: bool,
}

/// What retention decides once the checkpoint of an epoch is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retention {
    /// The epochs whose checkpoints stay, the new one included, in increasing order: what the
    /// new checkpoint advertises.
    pub kept: Vec<u64>,
    /// The epochs whose checkpoints go, once the new one is committed (with `interrupted/`,
    /// which an epoch checkpoint always supersedes).
    pub delete: Vec<u64>,
}

/// The checkpoint a run resumed from, as far as the policy needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResumePoint {
    /// Its last completed epoch.
    pub epoch: u64,
    /// Its global step.
    pub step: u64,
    /// Whether it is `interrupted/` (taken inside an epoch) rather than an epoch checkpoint.
    pub interrupted: bool,
    /// The epoch checkpoints it advertises.
    pub advertised: Vec<u64>,
}

/// Where the learned model of a resumed run comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LearnedModel {
    /// `last/` is missing, damaged or older than the resumed epoch checkpoint (a crash
    /// interrupted its publication): publish that checkpoint's weights again.
    Republish,
    /// `last/` is complete and current.
    Last,
    /// None yet (a fresh start, or an interrupted one before any `last/`).
    None,
}

/// What a new start puts in order in the checkpoints directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AfterResume {
    /// Epoch checkpoints the crashed run had given up but not deleted yet.
    pub delete: Vec<u64>,
    pub learned_model: LearnedModel,
}

impl CheckpointPolicy {
    pub fn of(config: &LearnerConfig) -> Self {
        CheckpointPolicy {
            interval: config.checkpoint_interval,
            max_epochs: config.max_epochs,
            keep: config.checkpoint_keep,
            keep_training_state: config.keep_training_state,
        }
    }

    /// The epoch checkpoints whose training state a done run drops, with `kept` the ones it
    /// keeps (as advertised): all of them, unless it keeps the training state. Only a run that
    /// trained its last epoch or stopped early asks: an interrupted or failed one keeps
    /// everything, to resume from.
    pub fn when_done(&self, kept: &[u64]) -> Vec<u64> {
        if self.keep_training_state {
            return Vec::new();
        }
        kept.to_vec()
    }

    /// Whether a run is done once `done` epochs are complete and it stopped early or not
    /// (`stopped`): nothing is left to train, so a checkpoint holding only models (see
    /// [`Self::when_done`]) is enough to resume from.
    pub fn done_at(&self, done: u64, stopped: bool) -> bool {
        self.epochs_left(done, stopped).is_empty()
    }

    /// The epochs a run still trains when `done` epochs are complete: none once it stopped
    /// early (`stopped`, as its checkpoint says), so that resuming a run that had stopped
    /// finishes at once with the result it had.
    pub fn epochs_left(&self, done: u64, stopped: bool) -> RangeInclusive<u64> {
        let first = if stopped { self.max_epochs } else { done };
        first.saturating_add(1)..=self.max_epochs
    }

    /// The end of `epoch`, stopping early or not: a checkpoint every `interval` epochs, and
    /// always at the last epoch or a stop (so `last/` is never stale, and the stop is recorded
    /// for a resume).
    pub fn at_epoch_end(&self, epoch: u64, stopping: bool) -> EpochEnd {
        let finished = stopping || epoch >= self.max_epochs;
        EpochEnd {
            save: epoch.is_multiple_of(self.interval.max(1)) || finished,
            finished,
        }
    }

    /// What to keep when epoch `epoch` is checkpointed, with epoch checkpoints `on_disk` and the
    /// listeners' best epochs `bests`.
    ///
    /// The newest `keep` epochs (the new one counts, and is kept even when `keep` is 0) and
    /// every best epoch are kept. Checkpoints of later epochs than
    /// `epoch` (left by a crashed timeline, or damaged and skipped when resuming) are neither
    /// kept nor deleted: writing their epoch again replaces them.
    pub fn retention(&self, epoch: u64, on_disk: &[u64], bests: &[u64]) -> Retention {
        let mut candidates: Vec<u64> = on_disk.iter().copied().filter(|e| *e < epoch).collect();
        candidates.push(epoch);
        candidates.sort_unstable();
        candidates.dedup();
        // The new checkpoint is always kept: it is what resume needs.
        let keep = usize::try_from(self.keep.max(1)).unwrap_or(usize::MAX);
        let newest = candidates.len().saturating_sub(keep);
        let (mut kept, mut delete) = (Vec::new(), Vec::new());
        for (i, epoch) in candidates.into_iter().enumerate() {
            if i >= newest || bests.contains(&epoch) {
                kept.push(epoch);
            } else {
                delete.push(epoch);
            }
        }
        Retention { kept, delete }
    }

    /// What a start that resumed from `resumed` (None: a fresh start) finishes, with epoch
    /// checkpoints `on_disk` and `last_step` the step of a complete `last/` (None when it is
    /// missing or damaged).
    ///
    /// Deleted: the epoch checkpoints up to the resumed epoch that it does not advertise, which
    /// the crashed run had decided to delete; later ones are left alone (see
    /// [`Self::retention`]).
    pub fn after_resume(
        &self,
        resumed: Option<&ResumePoint>,
        on_disk: &[u64],
        last_step: Option<u64>,
    ) -> AfterResume {
        let Some(at) = resumed else {
            return AfterResume {
                delete: Vec::new(),
                learned_model: LearnedModel::None,
            };
        };
        let delete = on_disk
            .iter()
            .copied()
            .filter(|e| *e <= at.epoch && !at.advertised.contains(e))
            .collect();
        let learned_model = match last_step {
            Some(step) if at.interrupted || step == at.step => LearnedModel::Last,
            _ if !at.interrupted => LearnedModel::Republish,
            _ => LearnedModel::None,
        };
        AfterResume {
            delete,
            learned_model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(interval: u64, max_epochs: u64, keep: u64) -> CheckpointPolicy {
        CheckpointPolicy {
            interval,
            max_epochs,
            keep,
            keep_training_state: false,
        }
    }

    #[test]
    fn a_done_run_drops_the_training_state_of_every_kept_checkpoint_unless_told_to_keep_it() {
        let dropping = policy(1, 5, 1);
        assert_eq!(dropping.when_done(&[2, 5]), [2, 5]);
        assert_eq!(dropping.when_done(&[]), Vec::<u64>::new());
        let keeping = CheckpointPolicy {
            keep_training_state: true,
            ..dropping
        };
        assert_eq!(keeping.when_done(&[2, 5]), Vec::<u64>::new());
        // Models alone resume a run only when nothing is left to train.
        // (epochs done, stopped) → done
        let table = [
            ((5, false), true),
            ((3, true), true),
            ((4, false), false),
            ((0, false), false),
        ];
        for ((done, stopped), expected) in table {
            assert_eq!(
                dropping.done_at(done, stopped),
                expected,
                "{done} epochs done, stopped {stopped}"
            );
        }
    }

    #[test]
    fn epoch_ends_save_every_interval_at_the_last_epoch_and_on_stopping() {
        // (interval, max_epochs, epoch, stopping) → (save, finished)
        type Case = ((u64, u64, u64, bool), (bool, bool));
        let table: [Case; 9] = [
            ((3, 7, 1, false), (false, false)),
            ((3, 7, 3, false), (true, false)),
            ((3, 7, 6, false), (true, false)),
            ((3, 7, 7, false), (true, true)),
            ((3, 7, 4, true), (true, true)),
            ((1, 7, 1, false), (true, false)),
            ((1, 7, 2, true), (true, true)),
            // A zero interval (refused by the configuration) counts as 1, not a division by 0.
            ((0, 7, 2, false), (true, false)),
            ((5, 2, 2, false), (true, true)),
        ];
        for ((interval, max, epoch, stopping), (save, finished)) in table {
            let end = policy(interval, max, 1).at_epoch_end(epoch, stopping);
            assert_eq!(
                end,
                EpochEnd { save, finished },
                "interval {interval}, max {max}, epoch {epoch}, stopping {stopping}"
            );
        }
        let due: Vec<u64> = (1..=7)
            .filter(|e| policy(3, 7, 1).at_epoch_end(*e, false).save)
            .collect();
        assert_eq!(due, [3, 6, 7]);
    }

    #[test]
    fn a_resumed_run_trains_the_remaining_epochs_unless_it_had_stopped() {
        let p = policy(1, 5, 1);
        assert_eq!(p.epochs_left(0, false).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        assert_eq!(p.epochs_left(3, false).collect::<Vec<_>>(), [4, 5]);
        assert_eq!(p.epochs_left(5, false).count(), 0);
        assert_eq!(p.epochs_left(3, true).count(), 0);
        assert_eq!(p.epochs_left(0, true).count(), 0);
    }

    #[test]
    fn retention_keeps_the_newest_and_the_bests() {
        // (epoch, on disk, bests, keep) → (kept, deleted)
        type Case = (
            (u64, &'static [u64], &'static [u64], u64),
            (Vec<u64>, Vec<u64>),
        );
        let table: Vec<Case> = vec![
            ((5, &[1, 2, 3, 4], &[2], 2), (vec![2, 4, 5], vec![1, 3])),
            // The new epoch is always kept, even with keep 0 (it is what resume needs).
            ((5, &[3, 4], &[], 0), (vec![5], vec![3, 4])),
            ((5, &[4], &[], 1), (vec![5], vec![4])),
            // Keeping more than there are (a run that keeps them all) deletes nothing.
            ((3, &[1, 2], &[], u64::MAX), (vec![1, 2, 3], vec![])),
            // A best epoch not on disk is not advertised.
            ((4, &[2], &[3, 4], 1), (vec![4], vec![2])),
            // Resumed from epoch 3 (epoch 5's checkpoint was damaged): writing epoch 4 must
            // not count epoch 5 as the newest, nor delete it.
            ((4, &[1, 2, 3, 5], &[], 1), (vec![4], vec![1, 2, 3])),
            // Rewriting an epoch that is already on disk counts it once.
            ((3, &[2, 3], &[], 2), (vec![2, 3], vec![])),
        ];
        for ((epoch, on_disk, bests, keep), (kept, delete)) in table {
            let r = policy(1, 10, keep).retention(epoch, on_disk, bests);
            assert_eq!(
                r,
                Retention { kept, delete },
                "epoch {epoch}, on disk {on_disk:?}, bests {bests:?}, keep {keep}"
            );
        }
    }

    fn resumed(epoch: u64, step: u64, interrupted: bool, advertised: &[u64]) -> ResumePoint {
        ResumePoint {
            epoch,
            step,
            interrupted,
            advertised: advertised.to_vec(),
        }
    }

    #[test]
    fn a_new_start_finishes_the_deletions_and_the_publication_a_crash_interrupted() {
        let (last, republish, no_model) = (
            LearnedModel::Last,
            LearnedModel::Republish,
            LearnedModel::None,
        );
        // (keep, resumed from, on disk, step of last/) → (deleted, learned model)
        type Case = (
            (u64, Option<ResumePoint>, &'static [u64], Option<u64>),
            (Vec<u64>, LearnedModel),
        );
        let table: Vec<Case> = vec![
            // A fresh start: nothing to finish, whatever is there.
            ((1, None, &[], None), (vec![], no_model)),
            ((1, None, &[2], Some(40)), (vec![], no_model)),
            // Saved epoch 4 advertising [4], crashed while deleting 2 and 3; epoch 6 is later.
            (
                (
                    1,
                    Some(resumed(4, 80, false, &[4])),
                    &[2, 3, 4, 6],
                    Some(80),
                ),
                (vec![2, 3], last),
            ),
            (
                (
                    1,
                    Some(resumed(4, 80, false, &[2, 3, 4])),
                    &[2, 3, 4],
                    Some(80),
                ),
                (vec![], last),
            ),
            // A run that keeps them all advertises every earlier one: nothing is deleted.
            (
                (
                    u64::MAX,
                    Some(resumed(4, 80, false, &[2, 3, 4])),
                    &[2, 3, 4],
                    Some(80),
                ),
                (vec![], last),
            ),
            // last/ older than the resumed epoch, or missing: published again.
            (
                (1, Some(resumed(4, 80, false, &[4])), &[4], Some(60)),
                (vec![], republish),
            ),
            (
                (1, Some(resumed(4, 80, false, &[4])), &[4], None),
                (vec![], republish),
            ),
            // Interrupted inside epoch 3: last/ is epoch 2's, and stays.
            (
                (1, Some(resumed(2, 50, true, &[2])), &[1, 2], Some(40)),
                (vec![1], last),
            ),
            (
                (1, Some(resumed(0, 10, true, &[])), &[], None),
                (vec![], no_model),
            ),
        ];
        for ((keep, at, on_disk, last_step), (delete, learned_model)) in table {
            let after = policy(1, 10, keep).after_resume(at.as_ref(), on_disk, last_step);
            assert_eq!(
                after,
                AfterResume {
                    delete,
                    learned_model
                },
                "keep {keep}, resumed {at:?}, on disk {on_disk:?}, last/ at {last_step:?}"
            );
        }
    }
}
