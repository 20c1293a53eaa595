//! A done run (every epoch trained, or stopped early) keeps the models of its epoch checkpoints
//! and drops their training state, which only resuming needs, unless `keep_training_state`;
//! running it again returns its result without training; an interrupted or failed run keeps
//! everything; a crash while dropping is finished by the next start.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::checkpoint::{arm, disarm, epoch_dir_name, verify_checkpoint_dir, Stage};
use super::run::tests::learn_cancelled_after;
use super::{learn, LearnOutput, NoObserver};
use crate::config::parse_learner;
use crate::config::tests_support::{demo_config_json, scratch_dir};
use crate::config::LearnerConfig;

/// What a done run's epoch checkpoint holds.
const MODELS_ONLY: [&str; 4] = [
    "MANIFEST.json",
    "final-state.json",
    "info.json",
    "model/model.safetensors",
];
/// What a checkpoint a run may resume from holds.
const WHOLE: [&str; 6] = [
    "MANIFEST.json",
    "generators.safetensors",
    "info.json",
    "model/model.safetensors",
    "optimizer.safetensors",
    "state.json",
];
/// The files only resuming needs.
const TRAINING_STATE: [&str; 3] = [
    "generators.safetensors",
    "optimizer.safetensors",
    "state.json",
];

fn config_in(dir: &Path, json: &str) -> LearnerConfig {
    parse_learner(&json.replace("/tmp/job", &dir.display().to_string())).unwrap()
}

fn run(config: &LearnerConfig) -> crate::Result<LearnOutput> {
    learn(config, &mut NoObserver, &AtomicBool::new(false))
}

/// The files under `dir`, relative to it, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let name = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push(name.replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn epoch_dirs(out: &LearnOutput, root: &Path) -> Vec<PathBuf> {
    assert!(!out.checkpoints.is_empty());
    out.checkpoints
        .keys()
        .map(|e| root.join(epoch_dir_name(*e)))
        .collect()
}

/// Every model file the output names: the learned model, the checkpoints', the listeners' bests.
fn named_models(out: &LearnOutput) -> Vec<PathBuf> {
    let mut models: Vec<PathBuf> = out.checkpoints.values().map(PathBuf::from).collect();
    models.push(PathBuf::from(out.learned_model.as_ref().unwrap()));
    for output in out.listeners.values() {
        for best in output.as_object().into_iter().flat_map(|o| o.values()) {
            if let Some(model) = best["model"].as_str() {
                models.push(PathBuf::from(model));
            }
        }
    }
    models
}

fn assert_models_only(out: &LearnOutput, root: &Path) {
    for dir in epoch_dirs(out, root) {
        assert_eq!(files(&dir), MODELS_ONLY, "{}", dir.display());
        verify_checkpoint_dir(&dir).unwrap();
    }
    for model in named_models(out) {
        assert!(model.is_file(), "{} is gone", model.display());
    }
}

/// The bytes of `files` in `out`'s checkpoints under `root`.
fn bytes_of(out: &LearnOutput, root: &Path, files: &[&str]) -> u64 {
    epoch_dirs(out, root)
        .iter()
        .flat_map(|d| files.iter().map(|f| d.join(f)))
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum()
}

#[test]
fn a_done_run_keeps_its_models_and_drops_the_training_state() {
    let dir = scratch_dir();
    let root = dir.join("checkpoints");
    let config = config_in(&dir, &demo_config_json());
    let out = run(&config).unwrap();
    assert_models_only(&out, &root);
    // The same run keeping its training state: what was dropped, to the byte.
    let kept_dir = scratch_dir();
    let mut keeping = config_in(&kept_dir, &demo_config_json());
    keeping.keep_training_state = true;
    let kept = run(&keeping).unwrap();
    for dir in epoch_dirs(&kept, &kept_dir.join("checkpoints")) {
        assert_eq!(files(&dir), WHOLE, "{}", dir.display());
    }
    assert_eq!(kept.dropped_training_state, None);
    let dropped = out.dropped_training_state.as_ref().unwrap();
    assert_eq!(
        dropped.epochs,
        out.checkpoints.keys().copied().collect::<Vec<_>>()
    );
    // The tensors to the byte; state.json holds paths and timings, whose widths differ between
    // the two runs by some bytes per checkpoint (a scratch folder's name, a duration's digits).
    let kept_root = kept_dir.join("checkpoints");
    let tensors = bytes_of(&kept, &kept_root, &TRAINING_STATE[..2]);
    let state = bytes_of(&kept, &kept_root, &TRAINING_STATE[2..]);
    let dropped_state = dropped.bytes - tensors;
    assert!(
        dropped_state.abs_diff(state) <= 64 * dropped.epochs.len() as u64,
        "dropped {} bytes, kept {tensors} + {state}",
        dropped.bytes
    );

    // Run again, it trains nothing and returns the same result, from what is left.
    let again = run(&config).unwrap();
    assert!(again
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with(&epoch_dir_name(3)));
    assert_eq!(again.loss_bits(), out.loss_bits());
    assert_eq!(again.listeners, out.listeners);
    assert_eq!(again.checkpoints, out.checkpoints);
    assert_eq!(again.learned_model, out.learned_model);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.dropped_training_state, None);
    assert_models_only(&again, &root);
}

#[test]
fn a_run_that_stopped_early_drops_it_too() {
    let dir = scratch_dir();
    let json = demo_config_json()
        .replace(r#""early_stop":0"#, r#""early_stop":2"#)
        .replace(r#""max_epochs":3"#, r#""max_epochs":12"#);
    let config = config_in(&dir, &json);
    let out = run(&config).unwrap();
    assert!(out.stopped.is_some(), "the demo does not stop early");
    assert_models_only(&out, &dir.join("checkpoints"));
    let again = run(&config).unwrap();
    assert_eq!(again.loss_bits(), out.loss_bits());
    assert_eq!(again.stopped, out.stopped);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

#[test]
fn an_interrupted_run_keeps_it_to_resume_from() {
    let dir = scratch_dir();
    let root = dir.join("checkpoints");
    let config = config_in(&dir, &demo_config_json());
    let err = learn_cancelled_after(&config, 27).unwrap_err();
    assert_eq!(err.code(), "ERR_INTERRUPTED");
    assert_eq!(files(&root.join(epoch_dir_name(1))), WHOLE);
    assert_eq!(files(&root.join("interrupted")), WHOLE);
    let resumed = run(&config).unwrap();
    assert!(resumed.dropped_training_state.is_some());
    assert_models_only(&resumed, &root);
}

#[test]
fn the_models_of_a_done_run_do_not_continue_a_longer_one() {
    let dir = scratch_dir();
    run(&config_in(&dir, &demo_config_json())).unwrap();
    let longer = config_in(
        &dir,
        &demo_config_json().replace(r#""max_epochs":3"#, r#""max_epochs":4"#),
    );
    let out = run(&longer).unwrap();
    // Not resumed from models alone (an exact resume needs the training state): trained afresh.
    assert_eq!(out.resumed_from, None);
    assert_eq!(out.epochs.len(), 4);
    let skipped = &out.warnings[0];
    assert!(
        skipped.contains("epoch-00000003")
            && skipped.contains("holds the models of a done run, not its training state")
            && skipped.contains("keep_training_state"),
        "{:?}",
        out.warnings
    );
}

#[test]
fn a_crash_while_dropping_it_is_finished_by_the_next_start() {
    let whole = run(&config_in(&scratch_dir(), &demo_config_json())).unwrap();
    let weights = |o: &LearnOutput| std::fs::read(o.learned_model.as_ref().unwrap()).unwrap();
    // Before the manifest of the last epoch's checkpoint is replaced, and after.
    for skip in [0, 1] {
        let dir = scratch_dir();
        let root = dir.join("checkpoints");
        let config = config_in(&dir, &demo_config_json());
        arm(Stage::Drop, &epoch_dir_name(3), skip);
        let err = run(&config).unwrap_err();
        disarm();
        assert!(err.to_string().contains("injected failure"), "{err}");
        verify_checkpoint_dir(&root.join(epoch_dir_name(3))).unwrap();
        let resumed = run(&config).unwrap();
        assert!(resumed
            .resumed_from
            .as_ref()
            .unwrap()
            .ends_with(&epoch_dir_name(3)));
        assert!(resumed.warnings.is_empty(), "{:?}", resumed.warnings);
        assert!(resumed.dropped_training_state.is_some(), "after {skip}");
        assert_eq!(resumed.loss_bits(), whole.loss_bits());
        assert!(weights(&resumed) == weights(&whole));
        assert_models_only(&resumed, &root);
    }
}
