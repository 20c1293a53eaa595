//! Built-in models against PyTorch (fixtures from `scripts/fixtures/gen_models.py`), their
//! errors, the TorchScript model and the MultipleModel. Training each model through the learner
//! is tested in `tests/models/` (integration tests).

mod dropout;
mod sigmoid;

use std::path::{Path, PathBuf};

use serde_json::Value;
use tch::{Kind, Tensor};

use super::*;
use crate::config::{tests_support::scratch_dir, AnyModule, Input, TorchScriptModelConfig};
use crate::data::{ScoreInput, Tokens};
use crate::rng::Rng;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/models")
        .join(name)
}

fn read_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

pub(crate) fn matrix_f32(v: &Value) -> Tensor {
    let rows: Vec<Vec<f32>> = serde_json::from_value(v.clone()).unwrap();
    let width = rows[0].len() as i64;
    Tensor::from_slice(&rows.concat()).view([rows.len() as i64, width])
}

fn tokens(v: &Value) -> Tokens {
    let rows: Vec<Vec<i64>> = serde_json::from_value(v["ids"].clone()).unwrap();
    let lengths: Vec<i64> = serde_json::from_value(v["lengths"].clone()).unwrap();
    let width = rows[0].len() as i64;
    Tokens {
        ids: Tensor::from_slice(&rows.concat()).view([rows.len() as i64, width]),
        lengths: Tensor::from_slice(&lengths),
    }
}

fn case_input(case: &Value) -> ScoreInput {
    if case.get("features").is_some() {
        ScoreInput::Features(matrix_f32(&case["features"]))
    } else {
        ScoreInput::Text {
            query: tokens(&case["query"]),
            document: tokens(&case["document"]),
        }
    }
}

pub(crate) fn model_of(config: &Value) -> Box<dyn Model> {
    let config: AnyModule = serde_json::from_value(config.clone()).unwrap();
    build(&config, &mut Rng::new(0), "model").unwrap()
}

pub(crate) fn assert_close(got: &Tensor, expected: &Value, what: &str) {
    let expected: Vec<f32> = serde_json::from_value(expected.clone()).unwrap();
    let got = Vec::<f32>::try_from(got.detach()).unwrap();
    assert_eq!(got.len(), expected.len(), "{what}");
    for (g, e) in got.iter().zip(&expected) {
        assert!((g - e).abs() < 1e-5, "{what}: {got:?} != {expected:?}");
    }
}

#[test]
fn pytorch_weights_reproduce_pytorch_outputs() {
    for name in [
        "linear",
        "mlp",
        "dual_cosine",
        "dual_dot",
        "drmm",
        "transformer",
    ] {
        let case = read_json(&format!("{name}.json"));
        let mut model = model_of(&case["config"]);
        load_weights(model.as_ref(), &fixture(&format!("{name}.safetensors"))).unwrap();
        model.set_training(false);
        let scores = model.forward(&case_input(&case)).unwrap();
        assert_close(&scores, &case["output"], name);
        // Before loading, the seeded initialisation gives other scores: the load did the work.
        let fresh = model_of(&case["config"]);
        let before = fresh.forward(&case_input(&case)).unwrap();
        assert!(!before.allclose(&scores, 1e-3, 1e-3, false), "{name}");
    }
}

#[test]
fn saved_weights_load_back_into_the_same_architecture() {
    let case = read_json("transformer.json");
    let a = model_of(&case["config"]);
    let dir = scratch_dir();
    a.save(&dir.join("model.safetensors")).unwrap();
    let config: AnyModule = serde_json::from_value(case["config"].clone()).unwrap();
    let mut b = build(&config, &mut Rng::new(99), "model").unwrap();
    load_weights(b.as_ref(), &dir.join("model.safetensors")).unwrap();
    let mut a = a;
    a.set_training(false);
    b.set_training(false);
    let input = case_input(&case);
    assert!(a
        .forward(&input)
        .unwrap()
        .equal(&b.forward(&input).unwrap()));
}

#[test]
fn weights_of_another_architecture_are_refused_by_name_and_shape() {
    let mlp = model_of(&read_json("mlp.json")["config"]);
    let err = load_weights(mlp.as_ref(), &fixture("linear.safetensors")).unwrap_err();
    assert_eq!(err.code(), "ERR_CHECKPOINT");
    assert!(
        err.to_string()
            .contains("lacks the model's parameters [\"layers.0.weight\""),
        "{err}"
    );

    let narrow =
        model_of(&serde_json::json!({"__xpmtype__": "xpm_torch.models.Linear", "input_dim": 4}));
    let err = load_weights(narrow.as_ref(), &fixture("linear.safetensors")).unwrap_err();
    assert!(
        err.to_string().contains(
            "tensor \"weight\" has shape [1, 5] but the model's parameter has shape [1, 4]"
        ),
        "{err}"
    );

    let dir = scratch_dir();
    let extra = dir.join("extra.safetensors");
    let linear = model_of(&read_json("linear.json")["config"]);
    let mut named: Vec<(String, Tensor)> = linear
        .named_parameters()
        .into_iter()
        .map(|p| (p.name, p.tensor.detach()))
        .collect();
    named.push((
        "head.weight".into(),
        Tensor::zeros([2], (Kind::Float, tch::Device::Cpu)),
    ));
    Tensor::write_safetensors(&named, &extra).unwrap();
    let before = linear.named_parameters()[0].tensor.detach().copy();
    let err = load_weights(linear.as_ref(), &extra).unwrap_err();
    assert!(
        err.to_string()
            .contains("no parameters named [\"head.weight\"]"),
        "{err}"
    );
    // Nothing was copied before the error.
    assert!(linear.named_parameters()[0].tensor.equal(&before));

    let err = load_weights(linear.as_ref(), &dir.join("absent.safetensors")).unwrap_err();
    assert!(err.to_string().contains("no such file"), "{err}");
}

#[test]
fn text_models_refuse_features_and_feature_models_refuse_text() {
    let text = read_json("drmm.json");
    for name in ["dual_dot", "drmm", "transformer"] {
        let model = model_of(&read_json(&format!("{name}.json"))["config"]);
        let err = model
            .forward(&ScoreInput::Features(Tensor::zeros(
                [2, 5],
                (Kind::Float, tch::Device::Cpu),
            )))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scores token sequences, but the data gives feature vectors"),
            "{name}: {err}"
        );
    }
    for name in ["linear", "mlp"] {
        let model = model_of(&read_json(&format!("{name}.json"))["config"]);
        let err = model.forward(&case_input(&text)).unwrap_err().to_string();
        assert!(
            err.contains("scores feature vectors, but the data gives token sequences"),
            "{name}: {err}"
        );
    }
}

#[test]
fn parameter_names_follow_pytorch_and_sharing_ties_tensors() {
    let mut t = model_of(&read_json("transformer.json")["config"]);
    let names: Vec<String> = t.named_parameters().into_iter().map(|p| p.name).collect();
    assert_eq!(names[0], "token_embedding.weight");
    assert!(names.contains(&"encoder.layers.1.self_attn.out_proj.bias".to_string()));
    assert_eq!(names.last().unwrap(), "score.bias");
    // Each key projection starts as a copy of its query projection, the values drawn apart.
    assert_eq!(names[2], "segment_embedding.weight");
    let params = t.named_parameters();
    let in_proj = params
        .iter()
        .find(|p| p.name == "encoder.layers.0.self_attn.in_proj_weight")
        .unwrap();
    let dim = in_proj.tensor.size()[1];
    let rows = |i: i64| in_proj.tensor.narrow(0, i * dim, dim);
    assert!(rows(0).equal(&rows(1)));
    assert!(!rows(0).equal(&rows(2)));
    t.share(
        "encoder.layers.1.linear1.weight",
        "encoder.layers.0.linear1.weight",
    )
    .unwrap();
    let p = t.named_parameters();
    let find = |n: &str| p.iter().find(|x| x.name == n).unwrap().tensor.data_ptr();
    assert_eq!(
        find("encoder.layers.1.linear1.weight"),
        find("encoder.layers.0.linear1.weight")
    );
    let err = t
        .share("score.weight", "encoder.layers.0.linear1.weight")
        .unwrap_err();
    assert!(err.to_string().contains("shapes differ"), "{err}");
    let err = t.share("nope", "score.weight").unwrap_err();
    assert!(
        err.to_string().contains("has no parameter \"nope\""),
        "{err}"
    );
}

fn script(name: &str, input: Input) -> TorchScriptModel {
    let config = TorchScriptModelConfig {
        id: name.into(),
        path: fixture(&format!("{name}.pt")).display().to_string(),
        input,
    };
    TorchScriptModel::load(&config, "learner.model").unwrap()
}

#[test]
fn torchscript_modules_score_like_python_and_expose_their_parameters() {
    for (name, input) in [
        ("scripted_features", Input::Features),
        ("scripted_text", Input::Text),
        ("scripted_dropout", Input::Features),
    ] {
        let meta = read_json(&format!("{name}.json"));
        let mut model = script(name, input);
        // Python scored in evaluation mode (no dropout).
        model.set_training(false);
        let inputs = meta["inputs"].as_array().unwrap();
        let scored = if input == Input::Features {
            ScoreInput::Features(matrix_f32(&inputs[0]))
        } else {
            let t = |i: usize| -> Tokens {
                tokens(&serde_json::json!({"ids": inputs[i], "lengths": inputs[i + 1]}))
            };
            ScoreInput::Text {
                query: t(0),
                document: t(2),
            }
        };
        assert_close(&model.forward(&scored).unwrap(), &meta["output"], name);
        let shapes: serde_json::Map<String, Value> = model
            .named_parameters()
            .into_iter()
            .map(|p| (p.name, serde_json::json!(p.tensor.size())))
            .collect();
        assert_eq!(Value::Object(shapes), meta["parameters"], "{name}");
        // The handles are the module's own tensors: freezing them all leaves no gradient path.
        for p in model.named_parameters() {
            let _ = p.tensor.set_requires_grad(false);
        }
        assert!(!model.forward(&scored).unwrap().requires_grad());
    }
}

#[test]
fn torchscript_errors_say_what_to_do() {
    let mut m = script("scripted_features", Input::Features);
    let err = m
        .share("net.2.weight", "net.0.weight")
        .unwrap_err()
        .to_string();
    assert!(err.contains("tie them in Python before scripting"), "{err}");
    let err = m
        .forward(&ScoreInput::Text {
            query: tokens(&serde_json::json!({"ids": [[1]], "lengths": [1]})),
            document: tokens(&serde_json::json!({"ids": [[1]], "lengths": [1]})),
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("scores feature vectors"), "{err}");
    let bad = TorchScriptModelConfig {
        id: "x".into(),
        path: fixture("linear.json").display().to_string(),
        input: Input::Features,
    };
    let err = TorchScriptModel::load(&bad, "learner.model")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("learner.model.path:") && err.contains("is not a TorchScript module"),
        "{err}"
    );
}

// ---- MultipleModel ----

const DRMM: &str = r#"{"__xpmtype__":"xpm_torch.models.DRMM","vocab_size":200,"dim":16,"bins":11,"hidden_dims":[8]}"#;

const AUX: &str = r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":3,"hidden_dims":[3,3],"activation":"relu","dropout":0.0,"layer_norm":false}"#;

fn multiple(scorer: &str) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.module.MultipleModel","models":{{"scorer":{DRMM},"aux":{AUX}}},"scorer":"{scorer}"}}"#
    )
}

#[test]
fn a_multiple_model_prefixes_names_and_scores_with_its_scorer() {
    let config: AnyModule = serde_json::from_str(&multiple("scorer")).unwrap();
    config.validate("learner.model").unwrap();
    let mut m = build(&config, &mut Rng::new(3), "learner.model").unwrap();
    let names: Vec<String> = m.named_parameters().into_iter().map(|p| p.name).collect();
    assert_eq!(names[..2], ["aux.layers.0.weight", "aux.layers.0.bias"]);
    assert!(
        names[6..].iter().all(|n| n.starts_with("scorer.")),
        "{names:?}"
    );
    assert!(names.contains(&"scorer.embedding.weight".to_string()));

    // The scorer entry, given the same weights on its own, scores the same.
    let dir = scratch_dir();
    m.save(&dir.join("both.safetensors")).unwrap();
    let alone = model_of(&serde_json::from_str(DRMM).unwrap());
    let scorer_weights: Vec<(String, Tensor)> =
        Tensor::read_safetensors(dir.join("both.safetensors"))
            .unwrap()
            .into_iter()
            .filter_map(|(n, t)| n.strip_prefix("scorer.").map(|n| (n.to_string(), t)))
            .collect();
    Tensor::write_safetensors(&scorer_weights, dir.join("scorer.safetensors")).unwrap();
    load_weights(alone.as_ref(), &dir.join("scorer.safetensors")).unwrap();
    let input = case_input(&read_json("drmm.json"));
    assert!(m
        .forward(&input)
        .unwrap()
        .equal(&alone.forward(&input).unwrap()));
    // Only the scorer scores: the auxiliary MLP would take these features.
    let features = ScoreInput::Features(Tensor::zeros([1, 3], (Kind::Float, tch::Device::Cpu)));
    assert!(m.forward(&features).is_err());

    // Its weights load back by their prefixed names.
    let other = build(&config, &mut Rng::new(4), "learner.model").unwrap();
    load_weights(other.as_ref(), &dir.join("both.safetensors")).unwrap();
    assert!(other
        .forward(&input)
        .unwrap()
        .equal(&m.forward(&input).unwrap()));

    // Sharing works inside one model, not across two.
    m.share("aux.layers.2.weight", "aux.layers.0.weight")
        .unwrap();
    let params = m.named_parameters();
    let ptr = |n: &str| {
        params
            .iter()
            .find(|p| p.name == n)
            .unwrap()
            .tensor
            .data_ptr()
    };
    assert_eq!(ptr("aux.layers.2.weight"), ptr("aux.layers.0.weight"));
    let err = m
        .share("aux.layers.4.bias", "scorer.ffn.2.bias")
        .unwrap_err()
        .to_string();
    assert!(err.contains("within one of its models only"), "{err}");
    let err = m
        .share("nope.weight", "aux.weight")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("start with one of [\"aux\", \"scorer\"]"),
        "{err}"
    );
}

#[test]
fn a_multiple_model_config_is_checked() {
    let check = |json: &str| {
        let config: AnyModule = serde_json::from_str(json).unwrap();
        config.validate("learner.model").unwrap_err().to_string()
    };
    let err = check(&multiple("teacher"));
    assert!(
        err.starts_with("learner.model.scorer:")
            && err.contains("\"teacher\" is not one of the models [\"aux\",\"scorer\"]"),
        "{err}"
    );
    let err = check(r#"{"__xpmtype__":"xpm_torch.module.MultipleModel","models":{},"scorer":"a"}"#);
    assert!(
        err.starts_with("learner.model.models: needs at least one model"),
        "{err}"
    );
    let err = check(
        r#"{"__xpmtype__":"xpm_torch.module.MultipleModel","models":{"a.b":{"__xpmtype__":"xpm_torch.models.Linear","input_dim":3}},"scorer":"a.b"}"#,
    );
    assert!(err.contains("\"a.b\" cannot name a model"), "{err}");
    let err = crate::config::parse_model(
        r#"{"__xpmtype__":"xpm_torch.module.MultipleModel","models":{"a":{"__xpmtype__":"xpm_torch.models.Linear","input_dim":0}},"scorer":"a"}"#,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(err, "model.models.a.input_dim: must be ≥ 1, got 0");
}
