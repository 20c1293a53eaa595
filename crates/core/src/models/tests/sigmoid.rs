//! SigmoidOutput's configuration. Its probabilities through each loss branch that reads the
//! output type are tested beside the losses (`losses/output_types_tests.rs`), its training
//! through the learner in `tests/models/sigmoid.rs`.

#[test]
fn a_real_output_is_refused_with_its_config_path() {
    let json = serde_json::json!({
        "__xpmtype__": "xpm_torch.models.SigmoidOutput",
        "model": {"__xpmtype__": "xpm_torch.models.Linear", "input_dim": 5},
        "output": "real",
    });
    let err = crate::config::parse_model(&json.to_string()).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"model.output: must be one of "probability", "log-probability", got "real""#
    );
}
