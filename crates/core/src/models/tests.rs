//! Built-in models against PyTorch (fixtures from `scripts/fixtures/gen_models.py`), their
//! errors, the TorchScript model, and training each model through the learner.

mod dropout;
mod sigmoid;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use serde_json::Value;
use tch::{Kind, Tensor};

use super::*;
use crate::config::{
    parse_learner, tests_support::scratch_dir, AnyModule, Input, TorchScriptModelConfig,
};
use crate::data::{ScoreInput, Tokens};
use crate::learner::{learn, LearnOutput, NoObserver};
use crate::rng::Rng;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/models")
        .join(name)
}

fn read_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

fn matrix_f32(v: &Value) -> Tensor {
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

fn model_of(config: &Value) -> Box<dyn Model> {
    let config: AnyModule = serde_json::from_value(config.clone()).unwrap();
    build(&config, &mut Rng::new(0), "model").unwrap()
}

fn assert_close(got: &Tensor, expected: &Value, what: &str) {
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

// ---- training through the learner ----

const ADAM: &str = r#"{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
    "optimizer":{"__xpmtype__":"xpm_torch.optim.Adam","lr":LR,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]},
    "filter":{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}"#;

fn learner_json(
    model: &str,
    sampler: &str,
    listener: &str,
    epochs: u64,
    steps: u64,
    lr: f64,
) -> String {
    let dir = scratch_dir();
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":5}},
        "trainer":{trainer},
        "model":{model},
        "max_epochs":{epochs},"steps_per_epoch":{steps},
        "optimizers":[{adam}],
        "listeners":[{listener}],
        "checkpoint_interval":{epochs},"logpath":"{dir}/runs","checkpointspath":"{dir}/checkpoints","hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"auto"}}}}"#,
        trainer = trainer_json(sampler),
        adam = ADAM.replace("LR", &lr.to_string()),
        dir = dir.display(),
    )
}

fn trainer_json(sampler: &str) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{sampler},"batch_size":32,"num_workers":0}}"#
    )
}

fn ltr(seed: u64, queries: u64) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":11,"seed":{seed},"num_queries":{queries},"docs_per_query":12,"num_features":8,"noise":0.2}}"#
    )
}

fn triplets(seed: u64, n: u64) -> String {
    let (min, max) = lengths();
    format!(
        r#"{{"__xpmtype__":"xpm_torch.data.SyntheticTokenTriplets","seed":{seed},"num_triplets":{n},"vocab_size":200,"query_length":3,"min_length":{min},"max_length":{max}}}"#
    )
}

/// The document lengths of the synthetic triplets, set per test (all vary).
fn lengths() -> (u64, u64) {
    LENGTHS.with(|l| l.get())
}

thread_local! {
    static LENGTHS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((6, 20)) };
}

fn train_features(model: &str) -> LearnOutput {
    let config = parse_learner(&features_learner_json(model, 4, 20, 0.05)).unwrap();
    learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
}

/// A Learner training the feature `model` on pairs of a synthetic graded dataset, validated by
/// ranking held-out queries (`heldout`).
fn features_learner_json(model: &str, epochs: u64, steps: u64, lr: f64) -> String {
    let sampler = format!(
        r#"{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{}}}"#,
        ltr(1, 60)
    );
    let listener = format!(
        r#"{{"__xpmtype__":"xpm_torch.listeners.RankingValidationListener","id":"heldout","dataset":{},
            "metrics":{{"pairwise_accuracy":false}},"warmup":-1,"validation_interval":1,"early_stop":0}}"#,
        ltr(2, 20)
    );
    learner_json(model, &sampler, &listener, epochs, steps, lr)
}

/// Text models train on planted-signal triplets; `TrainerValidationLoss` over held-out triplets
/// reports their pairwise accuracy.
fn train_text(model: &str, epochs: u64, steps: u64, lr: f64) -> LearnOutput {
    let json = text_learner_json(model, (2000, 300, 100), epochs, steps, lr);
    let config = parse_learner(&json).unwrap();
    learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
}

/// A Learner training `model` on `train` planted-signal token triplets, validated by
/// `TrainerValidationLoss` on `heldout` others in batches of `batch`.
fn text_learner_json(
    model: &str,
    (train, heldout, batch): (u64, u64, u64),
    epochs: u64,
    steps: u64,
    lr: f64,
) -> String {
    let sampler = format!(
        r#"{{"__xpmtype__":"xpm_torch.samplers.TokenTripletSampler","triplets":{}}}"#,
        triplets(1, train)
    );
    let listener = format!(
        r#"{{"__xpmtype__":"xpm_torch.trainers.validation.TrainerValidationLoss","id":"heldout","data":{},
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},"batch_size":{batch},"trainer":{},
            "warmup":-1,"validation_interval":1,"early_stop":0}}"#,
        triplets(2, heldout),
        trainer_json(&sampler)
    );
    learner_json(model, &sampler, &listener, epochs, steps, lr)
}

fn final_accuracy(out: &LearnOutput) -> f64 {
    let last = out.epochs.last().unwrap();
    assert!(
        last.loss < out.epochs[0].loss || out.epochs.len() == 1,
        "{:?}",
        out.epochs
    );
    last.metrics["heldout/pairwise_accuracy"]
}

#[test]
fn feature_models_learn_to_rank_held_out_queries() {
    for model in [
        r#"{"__xpmtype__":"xpm_torch.models.Linear","input_dim":8}"#,
        r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":8,"hidden_dims":[16,16],"activation":"gelu","dropout":0.1,"layer_norm":true}"#,
    ] {
        let accuracy = final_accuracy(&train_features(model));
        assert!(accuracy > 0.85, "{model}: {accuracy}");
    }
}

/// With 16 dimensions the 200 token embeddings overlap too much for a mean to tell a match from
/// noise (0.77–0.80 held out); with 64 they are nearly orthogonal and training separates them.
#[test]
fn dual_encoders_learn_the_planted_signal() {
    for similarity in ["dot", "cosine"] {
        let model = format!(
            r#"{{"__xpmtype__":"xpm_torch.models.EmbeddingDualEncoder","vocab_size":200,"dim":64,"similarity":"{similarity}"}}"#
        );
        LENGTHS.with(|l| l.set((8, 16)));
        let accuracy = final_accuracy(&train_text(&model, 3, 30, 0.05));
        assert!(accuracy > 0.85, "{similarity}: {accuracy}");
    }
}

#[test]
fn drmm_learns_the_planted_signal_and_its_saved_model_scores_the_same() {
    let model = r#"{"__xpmtype__":"xpm_torch.models.DRMM","vocab_size":200,"dim":16,"bins":11,"hidden_dims":[8]}"#;
    let out = train_text(model, 2, 30, 0.01);
    let accuracy = final_accuracy(&out);
    assert!(accuracy > 0.85, "{accuracy}");

    // The saved model, opened for scoring, reproduces the last epoch's held-out metrics.
    let trained =
        TrainedModel::open(model, Path::new(out.learned_model.as_ref().unwrap())).unwrap();
    let config: crate::config::SyntheticTokenTripletsConfig =
        serde_json::from_str(&triplets(2, 300).replace(
            r#""__xpmtype__":"xpm_torch.data.SyntheticTokenTriplets","#,
            "",
        ))
        .unwrap();
    let heldout = crate::data::synthetic_triplets(&config, "heldout").unwrap();
    let rows =
        |t: &crate::data::TokenTable| (0..t.len()).map(|i| t.get(i).to_vec()).collect::<Vec<_>>();
    let queries = rows(&heldout.query);
    let positive = trained
        .score(&text_input(&queries, &rows(&heldout.positive)).unwrap(), 64)
        .unwrap();
    let negative = trained
        .score(&text_input(&queries, &rows(&heldout.negative)).unwrap(), 64)
        .unwrap();
    let n = positive.len() as f64;
    let correct = positive
        .iter()
        .zip(&negative)
        .filter(|(p, q)| p > q)
        .count() as f64;
    let hinge: f64 = positive
        .iter()
        .zip(&negative)
        .map(|(p, q)| f64::from((1.0 - (p - q)).max(0.0)))
        .sum();
    let last = &out.epochs.last().unwrap().metrics;
    assert!(
        (correct / n - last["heldout/pairwise_accuracy"]).abs() < 1e-9,
        "{last:?}"
    );
    assert!(
        (hinge / n - last["heldout/loss/pair-hinge"]).abs() < 1e-5,
        "{} {last:?}",
        hinge / n
    );
}

const CROSS_ENCODER: &str = r#"{"__xpmtype__":"xpm_torch.models.TransformerCrossEncoder","vocab_size":200,"dim":32,"heads":1,"layers":1,"ffn_dim":64,"max_length":32,"dropout":0.0}"#;

/// Short documents keep the steps cheap; see [`TransformerCrossEncoder`] for the pooling and
/// initialisation that make the match count learnable.
#[test]
fn transformer_cross_encoder_learns_the_planted_signal() {
    LENGTHS.with(|l| l.set((4, 10)));
    let accuracy = final_accuracy(&train_text(CROSS_ENCODER, 8, 50, 0.002));
    assert!(accuracy > 0.85, "{accuracy}");
}

#[test]
fn a_torchscript_module_trains_and_freezing_keeps_its_weights() {
    let path = fixture("scripted_text.pt").display().to_string();
    let model = format!(
        r#"{{"__xpmtype__":"xpm_torch.models.TorchScriptModel","id":"scripted-text","path":"{path}","input":"text"}}"#
    );
    let out = train_text(&model, 2, 20, 0.02);
    assert!(out.epochs[1].loss < out.epochs[0].loss, "{:?}", out.epochs);
    let saved: Vec<String> = Tensor::read_safetensors(out.learned_model.as_ref().unwrap())
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut saved = saved;
    saved.sort();
    assert_eq!(saved, ["embedding.weight", "scale"]);
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

/// An optimizer selecting `^scorer\.` trains the scorer; the auxiliary model, claimed by no
/// optimizer, keeps its initial weights, and both are saved under their prefixed names.
#[test]
fn a_multiple_model_trains_its_scorer_with_optimizers_chosen_by_regex() {
    LENGTHS.with(|l| l.set((6, 20)));
    let out = {
        let sampler = format!(
            r#"{{"__xpmtype__":"xpm_torch.samplers.TokenTripletSampler","triplets":{}}}"#,
            triplets(1, 2000)
        );
        let listener = format!(
            r#"{{"__xpmtype__":"xpm_torch.trainers.validation.TrainerValidationLoss","id":"heldout","data":{},
                "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},"batch_size":100,"trainer":{},
                "warmup":-1,"validation_interval":1,"early_stop":0}}"#,
            triplets(2, 300),
            trainer_json(&sampler)
        );
        let json = learner_json(&multiple("scorer"), &sampler, &listener, 2, 30, 0.01).replace(
            r#"{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}"#,
            r#"{"__xpmtype__":"xpm_torch.optim.RegexParameterFilter","includes":["^scorer\\."]}"#,
        );
        learn(
            &parse_learner(&json).unwrap(),
            &mut NoObserver,
            &AtomicBool::new(false),
        )
        .unwrap()
    };
    let accuracy = final_accuracy(&out);
    assert!(accuracy > 0.85, "{accuracy}");

    let config: AnyModule = serde_json::from_str(&multiple("scorer")).unwrap();
    let initial = build(&config, &mut Rng::derive(5, "model/init"), "learner.model").unwrap();
    let saved: std::collections::HashMap<String, Tensor> =
        Tensor::read_safetensors(out.learned_model.as_ref().unwrap())
            .unwrap()
            .into_iter()
            .collect();
    let unchanged = |name: &str| {
        let p = initial
            .named_parameters()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap();
        saved[name].equal(&p.tensor.detach())
    };
    for name in [
        "aux.layers.0.weight",
        "aux.layers.2.bias",
        "aux.layers.4.weight",
    ] {
        assert!(unchanged(name), "{name}");
    }
    // (The last bias of the scorer gets no gradient: a pairwise loss sees score differences.)
    for name in [
        "scorer.embedding.weight",
        "scorer.ffn.0.weight",
        "scorer.gate.weight",
    ] {
        assert!(!unchanged(name), "{name}");
    }
    assert_eq!(saved.len(), initial.named_parameters().len());
}

#[test]
fn text_triplets_validate_only_a_pretrained_text_model() {
    let dir = crate::config::tests_support::scratch_dir();
    let file = dir.join("held-out.tsv");
    std::fs::write(&file, "q\tpositive\tnegative\n").unwrap();
    let text_file = format!(
        r#"{{"__xpmtype__":"xpm_torch.data.TextTripletFile","id":"held-out","path":"{}"}}"#,
        file.display()
    );
    let json = text_learner_json(CROSS_ENCODER, (200, 20, 10), 1, 2, 0.01).replacen(
        &triplets(2, 20),
        &text_file,
        1,
    );
    assert!(json.contains("TextTripletFile"));
    let err = learn(
        &parse_learner(&json).unwrap(),
        &mut NoObserver,
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("learner.listeners[0].data"), "{text}");
    assert!(text.contains("CrossEncoder or a BiEncoder"), "{text}");
}

/// `ddp` alone trains through a process group of one (Gloo here) exactly as no group does.
#[test]
fn ddp_alone_trains_like_one_process_without_a_group() {
    let model = r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":8,"hidden_dims":[16],"activation":"relu","dropout":0.0,"layer_norm":false}"#;
    let run = |strategy: &str| {
        let json = features_learner_json(model, 2, 10, 0.05).replace(
            "\"strategy\":\"auto\"",
            &format!("\"strategy\":\"{strategy}\""),
        );
        assert!(json.contains(strategy));
        let out = learn(
            &parse_learner(&json).unwrap(),
            &mut NoObserver,
            &AtomicBool::new(false),
        )
        .unwrap();
        let losses = out.loss_bits();
        (std::fs::read(out.learned_model.unwrap()).unwrap(), losses)
    };
    assert!(run("ddp") == run("auto"));
}
