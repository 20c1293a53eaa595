//! The built-in models trained through `learn()`: feature models rank held-out queries, text
//! models learn the planted signal of synthetic triplets (the saved DRMM scores as the run
//! measured), a TorchScript module trains, a MultipleModel trains its scorer only, and `ddp`
//! alone trains as no process group does. Whole runs with dropout in `dropout.rs`, with
//! probability outputs in `sigmoid.rs`, of Hugging Face encoders in `hf.rs`.
#![allow(clippy::unwrap_used)]

#[path = "../support/cancel.rs"]
mod cancel;
#[path = "../support/scratch.rs"]
mod scratch;

mod dropout;
mod hf;
mod sigmoid;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use scratch::scratch_dir;
use tch::Tensor;
use xpm_torch_core::config::{parse_learner, AnyModule, SyntheticTokenTripletsConfig};
use xpm_torch_core::data::{synthetic_triplets, TokenTable};
use xpm_torch_core::learner::{learn, LearnOutput, NoObserver};
use xpm_torch_core::models::{build, text_input, TrainedModel};
use xpm_torch_core::rng::Rng;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/models")
        .join(name)
}

/// The epochs' losses bit for bit, to compare runs that must be identical.
fn loss_bits(out: &LearnOutput) -> Vec<u64> {
    out.epochs.iter().map(|e| e.loss.to_bits()).collect()
}

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
    let config: SyntheticTokenTripletsConfig = serde_json::from_str(&triplets(2, 300).replace(
        r#""__xpmtype__":"xpm_torch.data.SyntheticTokenTriplets","#,
        "",
    ))
    .unwrap();
    let heldout = synthetic_triplets(&config, "heldout").unwrap();
    let rows = |t: &TokenTable| (0..t.len()).map(|i| t.get(i).to_vec()).collect::<Vec<_>>();
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

/// Short documents keep the steps cheap; see `TransformerCrossEncoder` for the pooling and
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

/// A DRMM that scores, beside an MLP that does not.
const MULTIPLE: &str = r#"{"__xpmtype__":"xpm_torch.module.MultipleModel","models":{
    "scorer":{"__xpmtype__":"xpm_torch.models.DRMM","vocab_size":200,"dim":16,"bins":11,"hidden_dims":[8]},
    "aux":{"__xpmtype__":"xpm_torch.models.MLP","input_dim":3,"hidden_dims":[3,3],"activation":"relu","dropout":0.0,"layer_norm":false}},
    "scorer":"scorer"}"#;

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
        let json = learner_json(MULTIPLE, &sampler, &listener, 2, 30, 0.01).replace(
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

    let config: AnyModule = serde_json::from_str(MULTIPLE).unwrap();
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
    let dir = scratch_dir();
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
        let losses = loss_bits(&out);
        (std::fs::read(out.learned_model.unwrap()).unwrap(), losses)
    };
    assert!(run("ddp") == run("auto"));
}
