//! Dropout draws from the run's seeded, checkpointed generators: two runs with one seed end
//! with the same bytes, side by side in one process or one after the other, and a run
//! interrupted and resumed ends like an uninterrupted one — for the built-in models and for a
//! TorchScript module's own dropout.

use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::{parse_learner, LearnerConfig};
use xpm_torch_core::learner::{learn, LearnOutput, NoObserver};

use super::cancel::learn_cancelled_at;
use super::{features_learner_json, fixture, loss_bits, text_learner_json, CROSS_ENCODER, LENGTHS};

const DROPOUT_MLP: &str = r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":8,"hidden_dims":[16,16],"activation":"relu","dropout":0.3,"layer_norm":false}"#;

fn cross_encoder_with_dropout() -> String {
    CROSS_ENCODER.replace("\"dropout\":0.0", "\"dropout\":0.2")
}

fn scripted_dropout() -> String {
    let path = fixture("scripted_dropout.pt").display().to_string();
    format!(
        r#"{{"__xpmtype__":"xpm_torch.models.TorchScriptModel","id":"scripted-dropout","path":"{path}","input":"features"}}"#
    )
}

/// A feature model's run: 3 epochs of 10 steps.
fn features_config(model: &str) -> LearnerConfig {
    let json = features_learner_json(model, 3, 10, 0.02)
        .replace("\"checkpoint_interval\":3", "\"checkpoint_interval\":1");
    parse_learner(&json).unwrap()
}

/// A text model's run: 2 epochs of 6 steps on short documents.
fn text_config(model: &str) -> LearnerConfig {
    LENGTHS.with(|l| l.set((4, 10)));
    let json = text_learner_json(model, (400, 100, 50), 2, 6, 0.002)
        .replace("\"checkpoint_interval\":2", "\"checkpoint_interval\":1");
    parse_learner(&json).unwrap()
}

/// Makes a run's configuration in a fresh job directory.
type ConfigMaker = fn() -> LearnerConfig;

/// The configurations of the three models with dropout, each in a fresh job directory.
fn dropout_configs() -> Vec<(&'static str, ConfigMaker)> {
    vec![
        ("MLP", || features_config(DROPOUT_MLP)),
        ("TransformerCrossEncoder", || {
            text_config(&cross_encoder_with_dropout())
        }),
        ("TorchScriptModel", || features_config(&scripted_dropout())),
    ]
}

fn weights(out: &LearnOutput) -> Vec<u8> {
    std::fs::read(out.learned_model.as_ref().unwrap()).unwrap()
}

fn run(config: &LearnerConfig) -> LearnOutput {
    learn(config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
}

#[test]
fn two_runs_with_one_seed_end_with_the_same_bytes_side_by_side_or_in_turn() {
    for (name, config) in dropout_configs() {
        // Two at once, on two threads of this process, then a third alone.
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| run(&config()));
            let b = s.spawn(|| run(&config()));
            (a.join().unwrap(), b.join().unwrap())
        });
        let c = run(&config());
        assert!(weights(&a) == weights(&b), "{name}: side by side");
        assert!(weights(&a) == weights(&c), "{name}: in turn");
        assert_eq!(loss_bits(&a), loss_bits(&c), "{name}");
    }
}

#[test]
fn an_interrupted_run_resumes_with_the_same_masks() {
    for (name, config) in dropout_configs() {
        let whole = run(&config());
        let resumed_config = config();
        // Inside the second epoch, then again from the checkpoint of the first epoch's end
        // (the interrupted checkpoint is newer and is taken first).
        let steps = resumed_config.steps_per_epoch;
        let err = learn_cancelled_at(&resumed_config, steps + 2).unwrap_err();
        assert_eq!(err.code(), "ERR_INTERRUPTED", "{name}: {err}");
        let resumed = run(&resumed_config);
        assert!(
            resumed
                .resumed_from
                .as_ref()
                .unwrap()
                .ends_with("interrupted"),
            "{name}"
        );
        assert!(weights(&resumed) == weights(&whole), "{name}");
    }
}
