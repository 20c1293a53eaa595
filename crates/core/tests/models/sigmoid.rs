//! SigmoidOutput through the learner: a batchwise cross-entropy refuses a model with real
//! scores and trains one with probability outputs.

use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};

use super::{final_accuracy, learner_json, ltr};

fn batchwise_learner(model: &str) -> String {
    let sampler = format!(
        r#"{{"__xpmtype__":"xpm_torch.samplers.BatchwiseSampler","dataset":{},"group_size":6}}"#,
        ltr(1, 60)
    );
    let listener = format!(
        r#"{{"__xpmtype__":"xpm_torch.listeners.RankingValidationListener","id":"heldout","dataset":{},
            "metrics":{{"pairwise_accuracy":false}},"warmup":-1,"validation_interval":1,"early_stop":0}}"#,
        ltr(2, 20)
    );
    learner_json(model, &sampler, &listener, 3, 20, 0.05).replace(
        r#""__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0"#,
        r#""__xpmtype__":"xpm_torch.losses.batchwise.CrossEntropyLoss","weight":1.0"#,
    )
}

#[test]
fn the_batchwise_cross_entropy_trains_a_model_with_probability_outputs() {
    let linear = r#"{"__xpmtype__":"xpm_torch.models.Linear","input_dim":8}"#;
    let config = parse_learner(&batchwise_learner(linear)).unwrap();
    let err = learn(&config, &mut NoObserver, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("hooks[0]") && err.contains("SigmoidOutput"),
        "{err}"
    );

    let wrapped = format!(
        r#"{{"__xpmtype__":"xpm_torch.models.SigmoidOutput","model":{linear},"output":"probability"}}"#
    );
    let config = parse_learner(&batchwise_learner(&wrapped)).unwrap();
    let out = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    let accuracy = final_accuracy(&out);
    assert!(accuracy > 0.85, "{accuracy} {:?}", out.epochs);
}
