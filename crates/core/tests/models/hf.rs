//! Hugging Face encoders trained through `learn()` on topic triplets: a cross-encoder with a new
//! head and a bi-encoder learn them, and the run measured what the saved weights score; a
//! `max_length` beyond the position table fails the run before any step.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use tch::{Kind, Tensor};
use xpm_torch_core::config::{parse_learner, AnyModule, TextTripletFileConfig};
use xpm_torch_core::data::read_text_triplets;
use xpm_torch_core::learner::{learn, NoObserver};
use xpm_torch_core::models::hf::text_encoding;
use xpm_torch_core::models::{build, load_weights};
use xpm_torch_core::rng::Rng;

use super::scratch_dir;

/// The tiny Hugging Face model `name` (`scripts/fixtures/gen_hf_tiny.py`).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hf")
        .join(name)
}

/// The tiny BERT as an `HFEncoder`.
fn tiny_bert() -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-bert","path":"{}"}}"#,
        fixture("bert").display()
    )
}

/// Template triplets: the positive document mentions the query's topic word, the negative one
/// an off-topic word; with `long_negatives`, every third negative is too long for the models.
fn write_text_triplets(dir: &Path, n: usize, seed: u64, long_negatives: bool) -> PathBuf {
    const TOPICS: [&str; 8] = [
        "paris", "tokyo", "river", "mountain", "train", "model", "city", "capital",
    ];
    const OFF_TOPIC: [&str; 4] = ["love", "word", "gaps", "spaced"];
    const FILLER: [&str; 8] = ["the", "is", "a", "of", "what", "many", "things", "detail"];
    let mut rng = Rng::new(seed);
    let mut lines = String::new();
    for i in 0..n {
        let topic = TOPICS[rng.below(TOPICS.len())];
        let other = OFF_TOPIC[rng.below(OFF_TOPIC.len())];
        let mut doc = |word: &str| {
            let mut words: Vec<&str> = (0..6).map(|_| FILLER[rng.below(FILLER.len())]).collect();
            words.insert(rng.below(7), word);
            words.join(" ")
        };
        let (positive, mut negative) = (doc(topic), doc(other));
        if long_negatives && i % 3 == 0 {
            // Longer than the models' max_length: cut by truncation.
            negative.push_str(&" and many more things of detail".repeat(4));
        }
        lines.push_str(&format!("what about {topic}\t{positive}\t{negative}\n"));
    }
    let path = dir.join(format!("triplets-{seed}.tsv"));
    std::fs::write(&path, lines).unwrap();
    path
}

/// A learner of `model` on text `triplets`, validated on `held_out` text triplets by a
/// `TrainerValidationLoss` (id `heldout`) after each epoch.
fn text_learner_json(
    model: &str,
    triplets: &Path,
    held_out: &Path,
    dir: &Path,
    steps: u64,
    lr: f64,
) -> String {
    let validation = format!(
        r#"{{"__xpmtype__":"xpm_torch.trainers.validation.TrainerValidationLoss","id":"heldout",
            "data":{{"__xpmtype__":"xpm_torch.data.TextTripletFile","id":"held-out","path":"{}"}},
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},"batch_size":32,
            "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
                "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
                "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
                "sampler":{{"__xpmtype__":"xpm_torch.samplers.TextTripletSampler",
                    "triplets":{{"__xpmtype__":"xpm_torch.data.TextTripletFile","id":"topics","path":"{}"}}}},
                "batch_size":16,"num_workers":1}},
            "warmup":-1,"validation_interval":1,"early_stop":0}}"#,
        held_out.display(),
        triplets.display()
    );
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":3}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.TextTripletSampler",
                "triplets":{{"__xpmtype__":"xpm_torch.data.TextTripletFile","id":"topics","path":"{triplets}"}}}},
            "batch_size":16,"num_workers":1}},
        "model":{model},
        "max_epochs":2,"steps_per_epoch":{steps},
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":{lr},"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[{validation}],
        "checkpoint_interval":2,"logpath":"{dir}/runs","checkpointspath":"{dir}/checkpoints","hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"auto"}}}}"#,
        triplets = triplets.display(),
        dir = dir.display(),
    )
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Trains `model` on topic triplets, then scores held-out ones with the learned weights; the
/// run's validation listener must have measured the same accuracy and truncation on them.
fn held_out_accuracy(model_json: &str, lr: f64) -> (Vec<f64>, f64, Vec<String>) {
    let dir = scratch_dir();
    let train = write_text_triplets(&dir, 400, 1, false);
    let held_out_path = write_text_triplets(&dir, 100, 2, true);
    let json = text_learner_json(model_json, &train, &held_out_path, &dir, 40, lr);
    let config = parse_learner(&json).unwrap();
    let out = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    let losses: Vec<f64> = out.epochs.iter().map(|e| e.loss).collect();

    let model_config: AnyModule = serde_json::from_str(model_json).unwrap();
    let mut model = build(&model_config, &mut Rng::new(9), "model").unwrap();
    load_weights(
        model.as_ref(),
        Path::new(out.learned_model.as_ref().unwrap()),
    )
    .unwrap();
    model.set_training(false);
    let encoding = text_encoding(&model_config, "model").unwrap().unwrap();
    let held_out = TextTripletFileConfig {
        id: "held-out".into(),
        path: held_out_path.display().to_string(),
        format: None,
    };
    let t = read_text_triplets(&held_out, "data").unwrap();
    let _guard = tch::no_grad_guard();
    let (pos, cut_p) = encoding
        .encode(&strs(&t.query), &strs(&t.positive))
        .unwrap();
    let (neg, cut_n) = encoding
        .encode(&strs(&t.query), &strs(&t.negative))
        .unwrap();
    let cut = cut_p.plus(cut_n);
    let wins = model
        .forward(&pos)
        .unwrap()
        .gt_tensor(&model.forward(&neg).unwrap())
        .to_kind(Kind::Float)
        .mean(Kind::Float)
        .double_value(&[]);
    let validated = &out.epochs.last().unwrap().metrics;
    assert!(
        (validated["heldout/pairwise_accuracy"] - wins).abs() < 1e-6,
        "{validated:?} against {wins}"
    );
    assert!(cut.cut > 0 && cut.cut < cut.inputs, "{cut:?}");
    assert_eq!(
        validated["heldout/truncated_fraction"],
        cut.cut as f64 / cut.inputs as f64,
        "{validated:?}"
    );
    let names = model
        .named_parameters()
        .into_iter()
        .map(|p| p.name)
        .collect();
    (losses, wins, names)
}

#[test]
fn a_cross_encoder_learns_text_triplets_with_a_new_head() {
    // The fixture's head has one label; strip it so the head starts new from the seed.
    let dir = scratch_dir();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(fixture("bert").join(file), dir.join(file)).unwrap();
    }
    let base: Vec<(String, Tensor)> =
        Tensor::read_safetensors(fixture("bert").join("model.safetensors"))
            .unwrap()
            .into_iter()
            .filter(|(n, _)| !n.starts_with("classifier."))
            .collect();
    let named: Vec<(&str, &Tensor)> = base.iter().map(|(n, t)| (n.as_str(), t)).collect();
    Tensor::write_safetensors(&named, dir.join("model.safetensors")).unwrap();
    let model = format!(
        r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","encoder":{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-bert-base","path":"{}"}},"max_length":24}}"#,
        dir.display()
    );
    let (losses, accuracy, names) = held_out_accuracy(&model, 0.003);
    assert!(losses[1] < losses[0], "{losses:?}");
    assert!(accuracy >= 0.9, "held-out pairwise accuracy {accuracy}");
    assert!(names.contains(&"classifier.weight".to_string()));
    assert!(names.contains(&"bert.embeddings.word_embeddings.weight".to_string()));
}

#[test]
fn a_bi_encoder_learns_text_triplets() {
    let model = format!(
        r#"{{"__xpmtype__":"xpm_torch.models.BiEncoder","encoder":{},"pooling":"mean","normalize":true,"similarity":"dot","max_length":16}}"#,
        tiny_bert()
    );
    let (losses, accuracy, names) = held_out_accuracy(&model, 0.003);
    assert!(losses[1] < losses[0], "{losses:?}");
    assert!(accuracy >= 0.9, "held-out pairwise accuracy {accuracy}");
    assert!(names.contains(&"embeddings.word_embeddings.weight".to_string()));
}

/// The issue's case: `max_length: 100000` fails the run when it starts, not at the first long
/// text (`libtorch error: index out of range in self`).
#[test]
fn a_run_with_a_max_length_beyond_the_positions_fails_before_any_step() {
    let dir = scratch_dir();
    let triplets = write_text_triplets(&dir, 20, 1, true);
    let model = format!(
        r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","encoder":{},"max_length":100000}}"#,
        tiny_bert()
    );
    let config = parse_learner(&text_learner_json(
        &model, &triplets, &triplets, &dir, 4, 0.001,
    ))
    .unwrap();
    let err = learn(&config, &mut NoObserver, &AtomicBool::new(false))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("learner.model.max_length: 100000 ") && err.contains("at most 64"),
        "{err}"
    );
}
