//! Whole runs of the demo: training, resuming, damaged checkpoints, precisions.

use super::*;
use crate::config::parse_learner;
use crate::config::tests_support::{demo_config_json, scratch_dir};
use crate::learner::NoObserver;

/// Raises `flag` once step `steps` is done: a cancellation at a chosen step.
struct CancelAfter<'a> {
    steps: u64,
    flag: &'a AtomicBool,
}

impl Observer for CancelAfter<'_> {
    fn on_step(&mut self, progress: StepProgress) -> Result<()> {
        if progress.step >= self.steps {
            self.flag.store(true, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// `config`'s run, cancelled once step `steps` is done.
pub(in crate::learner) fn learn_cancelled_after(
    config: &LearnerConfig,
    steps: u64,
) -> Result<LearnOutput> {
    let flag = AtomicBool::new(false);
    learn(config, &mut CancelAfter { steps, flag: &flag }, &flag)
}

pub(super) fn config_in(dir: &Path) -> LearnerConfig {
    let json = demo_config_json().replace("/tmp/job", &dir.display().to_string());
    parse_learner(&json).unwrap()
}

fn run_demo(json: &str) -> LearnOutput {
    let dir = scratch_dir();
    let json = json.replace("/tmp/job", &dir.display().to_string());
    let config = parse_learner(&json).unwrap();
    learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
}

#[test]
fn loss_falls_and_heldout_accuracy_rises() {
    let out = run_demo(&demo_config_json());
    assert_eq!(out.epochs.len(), 3);
    let first = &out.epochs[0];
    let last = &out.epochs[2];
    assert!(last.loss < first.loss, "{} !< {}", last.loss, first.loss);
    assert!(
        last.metrics["heldout/pairwise_accuracy"] > 0.8,
        "{:?}",
        last.metrics
    );
    assert_eq!(last.step, 60);
    assert!((last.train["pair-hinge"] - last.loss).abs() < 1e-6);
    assert!((last.train["gradient/scheduler/1/1"] - 0.01).abs() < 1e-12);
}

const ADAM: &str = r#"{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.01,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}"#;
const ADAFACTOR: &str = r#"{"__xpmtype__":"xpm_torch.optim.Adafactor","weight_decay":0.0,"relative_step":true,
    "eps":[1e-30,1e-3],"clip_threshold":1.0,"decay_rate":-0.8,"scale_parameter":true,"warmup_init":false}"#;

#[test]
fn adafactor_with_relative_steps_trains_and_refuses_a_scheduler() {
    let json = demo_config_json().replace(ADAM, ADAFACTOR);
    assert_ne!(json, demo_config_json());
    let out = run_demo(&json);
    let (first, last) = (&out.epochs[0], &out.epochs[2]);
    assert!(last.loss < first.loss, "{} !< {}", last.loss, first.loss);
    // The logged rate is the relative step size, min(1e-2, 1/√t).
    assert!((last.train["gradient/scheduler/1/1"] - 1e-2).abs() < 1e-12);

    let scheduled = json.replace(
        r#""filter":"#,
        r#""scheduler":{"__xpmtype__":"xpm_torch.schedulers.CosineWithWarmup","num_warmup_steps":2,"num_cycles":0.5},"filter":"#,
    );
    let dir = scratch_dir();
    let config = parse_learner(&scheduled.replace("/tmp/job", &dir.display().to_string())).unwrap();
    let err = learn(&config, &mut NoObserver, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("learner.optimizers[0].scheduler:"), "{err}");
}

#[test]
fn same_seed_gives_identical_losses() {
    let a = run_demo(&demo_config_json());
    let b = run_demo(&demo_config_json());
    assert_eq!(a.loss_bits(), b.loss_bits());
}

#[test]
fn cancellation_writes_a_checkpoint_and_resuming_matches_an_uninterrupted_run() {
    let whole = run_demo(&demo_config_json());
    let dir = scratch_dir();
    let config = config_in(&dir);
    // Interrupted in the middle of the second epoch (20 steps per epoch).
    let err = learn_cancelled_after(&config, 27).unwrap_err();
    assert_eq!(err.code(), "ERR_INTERRUPTED");
    assert!(
        err.to_string()
            .starts_with("training was interrupted at step 27;"),
        "{err}"
    );
    let resumed = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    assert!(resumed
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with("interrupted"));
    let model = |o: &LearnOutput| std::fs::read(o.learned_model.as_ref().unwrap()).unwrap();
    assert_eq!(model(&resumed), model(&whole));
    assert_eq!(resumed.loss_bits(), whole.loss_bits());
    assert!(!dir.join("checkpoints").join(INTERRUPTED).exists());
}

#[test]
fn a_damaged_checkpoint_is_skipped_with_a_warning_and_kept() {
    let whole = run_demo(&demo_config_json());
    let dir = scratch_dir();
    let mut config = config_in(&dir);
    // Every epoch's checkpoint, whole, for an older one to resume from.
    config.checkpoint_keep = config.max_epochs;
    config.keep_training_state = true;
    learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    // Damage the newest checkpoint and forget the two after the first epoch.
    let root = dir.join("checkpoints");
    std::fs::remove_dir_all(root.join("epoch-00000002")).unwrap();
    let newest = root.join("epoch-00000003").join("model/model.safetensors");
    let bytes = std::fs::read(&newest).unwrap();
    std::fs::write(&newest, &bytes[..bytes.len() / 2]).unwrap();
    let resumed = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    assert!(resumed
        .resumed_from
        .as_ref()
        .unwrap()
        .ends_with("epoch-00000001"));
    // The skip, then where the damaged checkpoint is kept.
    assert_eq!(resumed.warnings.len(), 2);
    assert!(resumed.warnings[1].contains("epoch-00000003.damaged"));
    assert!(
        resumed.warnings[0].contains("epoch-00000003")
            && resumed.warnings[0].contains("model/model.safetensors"),
        "{:?}",
        resumed.warnings
    );
    let model = |o: &LearnOutput| std::fs::read(o.learned_model.as_ref().unwrap()).unwrap();
    assert_eq!(model(&resumed), model(&whole));
}

/// The demo under another precision; the float32 matmul precision stays the one the other
/// tests run with (it is process-wide and tests run in parallel).
fn demo_in(precision: &str) -> String {
    demo_config_json().replace(
        "\"precision\":\"32-true\",",
        &format!("\"precision\":\"{precision}\",\"torch_fp32_precision\":\"high\","),
    )
}

#[test]
fn bf16_mixed_still_reaches_the_demo_accuracy() {
    let out = run_demo(&demo_in("bf16-mixed"));
    let last = &out.epochs[2];
    assert!(
        last.metrics["heldout/pairwise_accuracy"] > 0.8,
        "{:?}",
        last.metrics
    );
    assert!(last.loss < out.epochs[0].loss);
    // Float32 master weights.
    let saved = Tensor::read_safetensors(out.learned_model.as_ref().unwrap()).unwrap();
    assert!(saved.iter().all(|(_, t)| t.kind() == Kind::Float));
    // Its losses differ from a float32 run's: autocast really changed the arithmetic.
    let fp32 = run_demo(&demo_config_json());
    assert_ne!(out.epochs[0].loss.to_bits(), fp32.epochs[0].loss.to_bits());
}

#[test]
fn sixty_four_true_trains_and_saves_in_float64() {
    let json = demo_in("64-true").replace(
        "\"keep_training_state\":false",
        "\"keep_training_state\":true",
    );
    let out = run_demo(&json);
    let saved = Tensor::read_safetensors(out.learned_model.as_ref().unwrap()).unwrap();
    assert!(!saved.is_empty());
    assert!(saved.iter().all(|(_, t)| t.kind() == Kind::Double));
    assert!(out.epochs[2].metrics["heldout/pairwise_accuracy"] > 0.8);
    // The optimizer state follows the parameters.
    let dir = PathBuf::from(out.learned_model.unwrap());
    let checkpoint = dir.ancestors().nth(3).unwrap().join("epoch-00000003");
    let optimizer = Tensor::read_safetensors(checkpoint.join("optimizer.safetensors")).unwrap();
    let moments: Vec<Kind> = optimizer.iter().map(|(_, t)| t.kind()).collect();
    assert!(moments.contains(&Kind::Double), "{moments:?}");
}

#[test]
fn a_legacy_precision_runs_with_a_deprecation_warning() {
    let json = demo_in("32").replace("\"max_epochs\":3", "\"max_epochs\":1");
    let out = run_demo(&json);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(
        out.warnings[0]
            .starts_with("learner.fabric_config.precision: precision \"32\" is deprecated"),
        "{:?}",
        out.warnings
    );
    let err = parse_learner(&demo_in("8-bit"))
        .and_then(|c| learn(&c, &mut NoObserver, &AtomicBool::new(false)))
        .err()
        .unwrap();
    assert_eq!(err.code(), "ERR_CONFIG");
}

#[test]
fn mismatched_input_width_is_a_torch_error() {
    let json = demo_config_json().replace("\"input_dim\":8", "\"input_dim\":5");
    let config = parse_learner(&json).unwrap();
    let err = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(err.code(), "ERR_TORCH");
}
