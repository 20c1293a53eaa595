//! Which epochs get a checkpoint and which checkpoints are kept: pure decisions over epoch
//! numbers, apart from the code that writes and deletes files.
//!
//! The loop asks [`save_due`] at each epoch's end; when it says yes, it lists the epoch
//! checkpoints on disk, asks [`retention`] what to keep, writes the new checkpoint (advertising
//! the kept ones), publishes it, and only then deletes what [`retention`] gave up. A crash at any
//! moment of that sequence leaves the previous checkpoints in place.

/// Whether the end of `epoch` writes a checkpoint: every `interval` epochs, and always at the
/// last epoch or when the run stops early (so `last/` is never stale).
pub(crate) fn save_due(epoch: u64, interval: u64, max_epochs: u64, stopping: bool) -> bool {
    epoch.is_multiple_of(interval.max(1)) || stopping || epoch == max_epochs
}

/// What retention decides once the checkpoint of an epoch is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retention {
    /// The epochs whose checkpoints stay, the new one included, in increasing order: what the
    /// new checkpoint advertises.
    pub kept: Vec<u64>,
    /// The epochs whose checkpoints go, once the new one is committed.
    pub delete: Vec<u64>,
}

/// What to keep when epoch `epoch` is checkpointed, with epoch checkpoints `on_disk`, the
/// listeners' best epochs `bests` and `checkpoint_keep` = `keep`.
///
/// The newest `keep` epochs (the new one counts, and is kept even when `keep` is 0) and every
/// best epoch are kept; without `keep`, all are. Checkpoints of later epochs than `epoch` (left by a crashed timeline, or damaged
/// and skipped when resuming) are neither kept nor deleted: writing their epoch again replaces
/// them.
pub(crate) fn retention(
    epoch: u64,
    on_disk: &[u64],
    bests: &[u64],
    keep: Option<u64>,
) -> Retention {
    let mut candidates: Vec<u64> = on_disk.iter().copied().filter(|e| *e < epoch).collect();
    candidates.push(epoch);
    candidates.sort_unstable();
    candidates.dedup();
    let Some(keep) = keep else {
        return Retention {
            kept: candidates,
            delete: Vec::new(),
        };
    };
    // The new checkpoint is always kept: it is what resume needs.
    let keep = usize::try_from(keep.max(1)).unwrap_or(usize::MAX);
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

/// The epoch checkpoints to delete when a run resumes from a checkpoint of epoch `resumed`
/// (inside epoch `resumed + 1` for an interrupted one) that advertises `advertised`: those up
/// to `resumed` that it does not advertise, which the crashed run had decided to delete but
/// had not deleted yet. Later ones are left alone (see [`retention`]); nothing is deleted
/// without `keep`.
pub(crate) fn leftovers(
    resumed: u64,
    advertised: &[u64],
    on_disk: &[u64],
    keep: Option<u64>,
) -> Vec<u64> {
    if keep.is_none() {
        return Vec::new();
    }
    on_disk
        .iter()
        .copied()
        .filter(|e| *e <= resumed && !advertised.contains(e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_every_interval_at_the_end_and_on_stopping() {
        let due: Vec<u64> = (1..=7).filter(|e| save_due(*e, 3, 7, false)).collect();
        assert_eq!(due, [3, 6, 7]);
        assert!(save_due(4, 3, 7, true));
        assert!(save_due(1, 1, 7, false));
        // A zero interval (refused by the configuration) counts as 1, not a division by zero.
        assert!(save_due(2, 0, 7, false));
    }

    #[test]
    fn keeps_the_newest_and_the_bests_and_deletes_the_rest() {
        let r = retention(5, &[1, 2, 3, 4], &[2], Some(2));
        assert_eq!(r.kept, [2, 4, 5]);
        assert_eq!(r.delete, [1, 3]);
        // The new epoch is always kept, even with keep 0 (it is what resume needs).
        let r = retention(5, &[3, 4], &[], Some(0));
        assert_eq!(r.kept, [5]);
        assert_eq!(r.delete, [3, 4]);
        let r = retention(5, &[4], &[], Some(1));
        assert_eq!((r.kept, r.delete), (vec![5], vec![4]));
    }

    #[test]
    fn without_keep_nothing_is_deleted() {
        let r = retention(3, &[1, 2], &[], None);
        assert_eq!(r.kept, [1, 2, 3]);
        assert!(r.delete.is_empty());
    }

    #[test]
    fn a_best_epoch_not_on_disk_is_not_advertised() {
        let r = retention(4, &[2], &[3, 4], Some(1));
        assert_eq!(r.kept, [4]);
        assert_eq!(r.delete, [2]);
    }

    #[test]
    fn later_checkpoints_are_neither_kept_nor_deleted() {
        // Resumed from epoch 3 (epoch 5's checkpoint was damaged): writing epoch 4 must not
        // count epoch 5 as the newest, nor delete it.
        let r = retention(4, &[1, 2, 3, 5], &[], Some(1));
        assert_eq!(r.kept, [4]);
        assert_eq!(r.delete, [1, 2, 3]);
        // Rewriting an epoch that is already on disk counts it once.
        let r = retention(3, &[2, 3], &[], Some(2));
        assert_eq!(r.kept, [2, 3]);
        assert!(r.delete.is_empty());
    }

    #[test]
    fn leftovers_of_an_interrupted_deletion_are_found_when_resuming() {
        // The run saved epoch 4 advertising [4], then crashed while deleting 2 and 3.
        assert_eq!(leftovers(4, &[4], &[2, 3, 4, 6], Some(1)), [2, 3]);
        assert!(leftovers(4, &[2, 3, 4], &[2, 3, 4], Some(1)).is_empty());
        assert!(leftovers(4, &[4], &[2, 3, 4], None).is_empty());
    }
}
