//! Crash safety of checkpoints, by fault injection: a save that fails at any of its stages
//! (as on a full disk, or a process killed there) leaves a checkpoint that the next start
//! resumes from, with the bytes of an uninterrupted run; damaged checkpoints are named, skipped
//! and kept.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::checkpoint::{
    arm, checkpoint_dirs, disarm, epoch_dir_name, verify_checkpoint_dir, Stage, LAST,
};
use super::{learn, LearnOutput, NoObserver};
use crate::config::parse_learner;
use crate::config::tests_support::{demo_config_json, scratch_dir};
use crate::config::LearnerConfig;

/// The demo run (3 epochs of 20 steps) with an MLP with dropout, in `dir`, keeping one
/// checkpoint.
fn config_in(dir: &Path) -> LearnerConfig {
    let json = demo_config_json()
        .replace("/tmp/job", &dir.display().to_string())
        .replace(
            r#"{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":8,"hidden_dims":[16]}"#,
            r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":8,"hidden_dims":[16],"activation":"relu","dropout":0.2,"layer_norm":false}"#,
        );
    // The demo keeps one epoch checkpoint (and the listener's best), as by default.
    parse_learner(&json).unwrap()
}

fn run(config: &LearnerConfig) -> crate::Result<LearnOutput> {
    learn(config, &mut NoObserver, &AtomicBool::new(false))
}

fn weights(out: &LearnOutput) -> Vec<u8> {
    std::fs::read(out.learned_model.as_ref().unwrap()).unwrap()
}

fn entries(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn uninterrupted() -> Vec<u8> {
    weights(&run(&config_in(&scratch_dir())).unwrap())
}

/// The checkpoint directory of an uninterrupted run: the last epoch's checkpoint, `last/` and
/// the best epochs of the heldout listener, which depend on the masks dropout draws.
fn uninterrupted_entries() -> Vec<String> {
    let dir = scratch_dir();
    run(&config_in(&dir)).unwrap();
    let names = entries(&dir.join("checkpoints"));
    assert!(
        names.ends_with(&["epoch-00000003".to_string(), "last".to_string()]),
        "{names:?}"
    );
    names
}

/// What resume would take: every checkpoint directory it reads verifies.
fn assert_no_half_checkpoint(root: &Path, case: &str) {
    for dir in checkpoint_dirs(root) {
        assert!(
            verify_checkpoint_dir(&dir).is_ok(),
            "{case}: {} does not verify",
            dir.display()
        );
    }
}

#[test]
fn a_save_failing_at_any_stage_leaves_a_checkpoint_that_resume_uses() {
    let whole = uninterrupted();
    let expected = uninterrupted_entries();
    let expected_epochs: Vec<u64> = expected
        .iter()
        .filter_map(|n| n.strip_prefix("epoch-")?.parse().ok())
        .collect();
    // (stage, directory, saves of it let through first, where the next start resumes)
    let cases: [(Stage, &str, usize, &str); 8] = [
        (Stage::Files, "epoch-00000002", 0, "epoch-00000001"),
        (Stage::Manifest, "epoch-00000002", 0, "epoch-00000001"),
        (Stage::Commit, "epoch-00000002", 0, "epoch-00000001"),
        (Stage::Manifest, "last", 1, "epoch-00000002"),
        (Stage::Swap, "last", 0, "epoch-00000002"),
        (Stage::Cleanup, "last", 0, "epoch-00000002"),
        (Stage::Prune, "epoch-00000001", 0, "epoch-00000002"),
        // Between the renames of the last epoch's `last/`: nothing is left to train, and the
        // next start publishes `last/` again.
        (Stage::Swap, "last", 1, "epoch-00000003"),
    ];
    for (stage, name, skip, resumes_from) in cases {
        let case = format!("{stage:?} of {name} (after {skip})");
        let dir = scratch_dir();
        let root = dir.join("checkpoints");
        let config = config_in(&dir);
        arm(stage, name, skip);
        let err = run(&config).unwrap_err();
        disarm();
        assert!(
            err.code() == "ERR_IO" && err.to_string().contains("injected failure"),
            "{case}: {err}"
        );
        assert_no_half_checkpoint(&root, &case);
        if resumes_from == "epoch-00000001" {
            // The previous checkpoint is intact, and the half-written one is a temporary
            // directory, which resume does not read.
            assert_eq!(
                checkpoint_dirs(&root),
                [root.join("epoch-00000001")],
                "{case}"
            );
            assert!(
                entries(&root)
                    .iter()
                    .any(|n| n.starts_with(".epoch-00000002.tmp-")),
                "{case}: {:?}",
                entries(&root)
            );
        }
        let resumed = run(&config).unwrap();
        assert!(
            resumed
                .resumed_from
                .as_ref()
                .unwrap()
                .ends_with(resumes_from),
            "{case}: resumed from {:?}",
            resumed.resumed_from
        );
        assert!(weights(&resumed) == whole, "{case}: other weights");
        // In order again: no temporary left, the checkpoints of an uninterrupted run kept and
        // advertised, `last/` whole.
        assert_eq!(entries(&root), expected, "{case}: left behind");
        assert_eq!(
            resumed.checkpoints.keys().copied().collect::<Vec<_>>(),
            expected_epochs,
            "{case}"
        );
        verify_checkpoint_dir(&root.join("last")).unwrap();
        assert!(
            resumed.warnings.is_empty(),
            "{case}: {:?}",
            resumed.warnings
        );
    }
}

#[test]
fn a_flipped_byte_is_named_and_its_checkpoint_skipped_and_kept() {
    let whole = uninterrupted();
    let dir = scratch_dir();
    let root = dir.join("checkpoints");
    let mut config = config_in(&dir);
    config.checkpoint_keep = u64::MAX;
    // Whole checkpoints, to resume from an older one.
    config.keep_training_state = true;
    run(&config).unwrap();
    // Same size, one byte changed.
    let damaged: PathBuf = root.join("epoch-00000003").join("optimizer.safetensors");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&damaged, &bytes).unwrap();
    let resumed = run(&config).unwrap();
    assert!(resumed
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with("epoch-00000002"));
    // Named with the file that does not match, then where it is kept.
    assert_eq!(resumed.warnings.len(), 2, "{:?}", resumed.warnings);
    let skipped = &resumed.warnings[0];
    assert!(
        skipped.starts_with("skipped checkpoint ")
            && skipped.contains("epoch-00000003")
            && skipped.contains("optimizer.safetensors does not match its checksum"),
        "{skipped}"
    );
    assert!(
        resumed.warnings[1].contains("kept as")
            && resumed.warnings[1]
                .ends_with("epoch-00000003.damaged, where resume no longer reads it"),
        "{:?}",
        resumed.warnings
    );
    assert!(weights(&resumed) == whole);
    // Kept as it was, out of resume's way.
    let kept = root
        .join("epoch-00000003.damaged")
        .join("optimizer.safetensors");
    assert_eq!(std::fs::read(kept).unwrap(), bytes);
    // The next start does not read it again.
    let again = run(&config).unwrap();
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert!(again
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with("epoch-00000003"));
}

#[test]
fn temporaries_of_a_killed_save_are_ignored_and_removed_at_the_next_start() {
    let dir = scratch_dir();
    let root = dir.join("checkpoints");
    let config = config_in(&dir);
    arm(Stage::Manifest, "epoch-00000003", 0);
    run(&config).unwrap_err();
    disarm();
    // As a killed process would leave them: a save in progress, a file being written.
    std::fs::create_dir_all(root.join(".interrupted.tmp-999-0/model")).unwrap();
    std::fs::write(root.join(".last.tmp-999-1"), b"partial").unwrap();
    let resumed = run(&config).unwrap();
    assert!(resumed
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with("epoch-00000002"));
    assert_eq!(entries(&root), uninterrupted_entries());
}

/// The demo run with early stopping (after 2 epochs without a better heldout accuracy),
/// for at most 12 epochs, in `dir`.
fn early_stopping_config_in(dir: &Path) -> LearnerConfig {
    let json = demo_config_json()
        .replace("/tmp/job", &dir.display().to_string())
        .replace(r#""early_stop":0"#, r#""early_stop":2"#)
        .replace(r#""max_epochs":3"#, r#""max_epochs":12"#);
    parse_learner(&json).unwrap()
}

#[test]
fn a_run_that_stopped_early_and_then_crashed_finishes_at_once_when_resumed() {
    let whole = run(&early_stopping_config_in(&scratch_dir())).unwrap();
    let stopped_at = whole.epochs.len() as u64;
    assert!(
        whole.stopped.is_some() && stopped_at < 12,
        "the demo does not stop early: {:?}",
        whole.stopped
    );
    let dir = scratch_dir();
    let config = early_stopping_config_in(&dir);
    // Killed once the stopping epoch's checkpoint is committed and `last/` replaced, while the
    // previous `last/` is being removed: the first `last/` is new, later ones replace one.
    arm(Stage::Cleanup, LAST, stopped_at as usize - 2);
    let err = run(&config).unwrap_err();
    disarm();
    assert!(err.to_string().contains("injected failure"), "{err}");
    let resumed = run(&config).unwrap();
    assert!(resumed
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with(&epoch_dir_name(stopped_at)));
    // No epoch is trained again, and the result is the uninterrupted run's.
    assert_eq!(resumed.stopped, whole.stopped);
    assert_eq!(resumed.loss_bits(), whole.loss_bits());
    assert_eq!(resumed.listeners, whole.listeners);
    assert!(weights(&resumed) == weights(&whole));
    assert!(resumed.warnings.is_empty(), "{:?}", resumed.warnings);
}
