//! A Learner initialised from another run (a ModuleLoader among its init tasks): it starts from
//! that run's weights exactly, resumes exactly, and names what does not fit.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use tch::Tensor;

use super::build::build;
use super::run::tests::learn_cancelled_after;
use super::{learn, LearnOutput, NoObserver};
use crate::config::parse_learner;
use crate::config::tests_support::{demo_config_json, scratch_dir};
use crate::data::Shard;
use crate::runtime::Runtime;

const DEMO_MODEL: &str =
    r#"{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":8,"hidden_dims":[16]}"#;

fn in_dir(json: &str, dir: &Path) -> String {
    json.replace("/tmp/job", &dir.display().to_string())
}

/// The demo run A, trained in a fresh directory.
fn train_a() -> LearnOutput {
    let config = parse_learner(&in_dir(&demo_config_json(), &scratch_dir())).unwrap();
    learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
}

/// The demo with seed 6 instead of 5.
fn reseeded() -> String {
    let json = demo_config_json().replace(
        r#""random":{"__xpmtype__":"xpm_torch.base.Random","seed":5}"#,
        r#""random":{"__xpmtype__":"xpm_torch.base.Random","seed":6}"#,
    );
    assert_eq!(json.matches("seed\":6").count(), 1);
    json
}

/// Run B: the demo with another seed, initialised by a loader of `value` from `weights`.
fn b_json(value: &str, weights: &str, dir: &Path) -> String {
    let json = reseeded()
        .replace(
            r#""max_epochs":3"#,
            &format!(
                r#""__init_tasks__":[{{"__xpmtype__":"xpm_torch.module.SimpleModuleLoader","value":{value},"path":"{weights}"}}],"max_epochs":3"#
            ),
        );
    assert!(json.contains("__init_tasks__"));
    in_dir(&json, dir)
}

fn initial_weights(json: &str) -> Vec<(String, Tensor)> {
    let config = parse_learner(json).unwrap();
    let (runtime, _) = Runtime::from_config(&config.fabric_config).unwrap();
    let run = build(&config, &runtime, Shard::WHOLE, &None).unwrap();
    run.model
        .named_parameters()
        .into_iter()
        .map(|p| (p.name, p.tensor.copy()))
        .collect()
}

#[test]
fn a_learner_initialised_from_another_starts_with_its_weights_and_resumes_exactly() {
    let a = train_a();
    let a_file = a.learned_model.clone().unwrap();
    let saved: std::collections::BTreeMap<String, Tensor> = Tensor::read_safetensors(&a_file)
        .unwrap()
        .into_iter()
        .collect();

    let b = b_json(DEMO_MODEL, &a_file, &scratch_dir());
    let start = initial_weights(&b);
    assert_eq!(start.len(), saved.len());
    for (name, tensor) in &start {
        assert!(tensor.equal(&saved[name]), "{name}");
    }
    // Without the init task, B's seed draws other weights: the loader did the work.
    let plain = initial_weights(&in_dir(&reseeded(), &scratch_dir()));
    assert!(plain.iter().any(|(name, t)| !t.equal(&saved[name])));

    // B trained whole, and B interrupted then resumed, end with the same bytes.
    let whole_dir = scratch_dir();
    let whole = parse_learner(&b_json(DEMO_MODEL, &a_file, &whole_dir)).unwrap();
    let whole = learn(&whole, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    let dir = scratch_dir();
    let config = parse_learner(&b_json(DEMO_MODEL, &a_file, &dir)).unwrap();
    let err = learn_cancelled_after(&config, 27).unwrap_err();
    assert_eq!(err.code(), "ERR_INTERRUPTED");
    let resumed = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    assert!(resumed.resumed_from.is_some());
    let bytes = |o: &LearnOutput| std::fs::read(o.learned_model.as_ref().unwrap()).unwrap();
    assert_eq!(bytes(&resumed), bytes(&whole));
    assert_ne!(bytes(&whole), std::fs::read(&a_file).unwrap());
}

#[test]
fn a_loader_that_does_not_fit_is_named_with_what_differs() {
    let a = train_a();
    let a_file = a.learned_model.clone().unwrap();
    let error_of = |json: String| -> String {
        let config = parse_learner(&json).unwrap();
        let (runtime, _) = Runtime::from_config(&config.fabric_config).unwrap();
        match build(&config, &runtime, Shard::WHOLE, &None) {
            Ok(_) => panic!("accepted: {json}"),
            Err(e) => e.to_string(),
        }
    };
    // The loader's model is not the learner's.
    let other = r#"{"__xpmtype__":"xpm_torch.models.Linear","input_dim":8}"#;
    let err = error_of(b_json(other, &a_file, &scratch_dir()));
    assert!(err.starts_with("learner.__init_tasks__[0].value:"), "{err}");

    // The learner (and the loader) are another architecture than the file's.
    let wider = r#"{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":8,"hidden_dims":[32]}"#;
    let err = error_of(b_json(wider, &a_file, &scratch_dir()).replace(DEMO_MODEL, wider));
    assert!(
        err.contains("learner.__init_tasks__[0]") && err.contains(&a_file) && err.contains("shape"),
        "{err}"
    );
    let deeper =
        r#"{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":8,"hidden_dims":[16,4]}"#;
    let err = error_of(b_json(deeper, &a_file, &scratch_dir()).replace(DEMO_MODEL, deeper));
    assert!(err.contains("lacks the model's parameters"), "{err}");
}
