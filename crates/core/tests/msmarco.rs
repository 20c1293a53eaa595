//! The MS MARCO layout through `learn()`: a cross-encoder over the tiny BERT trained on
//! triplets of ids, on scored text pairs and on slates of a run, validated by re-ranking the
//! run (fixtures from `scripts/fixtures/gen_msmarco.py`); and text slates against the slates of
//! features the same seed draws.
#![allow(clippy::unwrap_used)]

#[path = "support/scratch.rs"]
mod scratch;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use scratch::scratch_dir;
use xpm_torch_core::config::{
    parse_learner, AnyModule, IdTripletSamplerConfig, TextRerankingDatasetConfig, Typed,
};
use xpm_torch_core::data::{
    Batch, EncodedTexts, IdTriplets, Reranking, Sampler, ScoreInput, Shard, SlateSampler,
    TripletTexts,
};
use xpm_torch_core::learner::{learn, LearnOutput, NoObserver, RankMetric};
use xpm_torch_core::models::hf::text_encoding;
use xpm_torch_core::models::{build, load_weights};
use xpm_torch_core::rng::Rng;

/// The tiny MS MARCO-shaped fixture.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/msmarco")
        .join(name)
}

fn collection_json(name: &str) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.data.TextCollection","id":"{name}","path":"{}"}}"#,
        fixture(name).display()
    )
}

fn trec_json(class: &str, name: &str) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.data.{class}","id":"{name}","path":"{}"}}"#,
        fixture(name).display()
    )
}

/// The fixture's development run to re-rank, judged by its qrels, with `extra` fields (e.g.
/// `,"batch_size":5`).
fn reranking_json(extra: &str) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.data.TextRerankingDataset",
            "queries":{},"documents":{},"qrels":{},"run":{}{extra}}}"#,
        collection_json("queries.dev.tsv"),
        collection_json("collection.tsv"),
        trec_json("TrecQrels", "qrels.dev.tsv"),
        trec_json("TrecRun", "run.dev.trec"),
    )
}

/// The re-ranking of [`reranking_json`], whole.
fn reranking() -> Reranking {
    let config: Typed<TextRerankingDatasetConfig> =
        serde_json::from_str(&reranking_json("")).unwrap();
    Reranking::open(&config, "d").unwrap()
}

const MODEL: &str = r#"{"__xpmtype__":"xpm_torch.models.CrossEncoder","max_length":24,
    "encoder":{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-bert","path":"@DIR@"}}"#;

fn model_json() -> String {
    let hf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hf/bert");
    MODEL.replace("@DIR@", &hf.display().to_string())
}

/// A cross-encoder learner over the tiny BERT: `hooks` (losses) on `sampler`, with
/// `listeners`, for 2 epochs of `steps` steps.
fn learner_json(dir: &Path, hooks: &str, sampler: &str, listeners: &str, steps: u64) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":5}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer","hooks":[{hooks}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},"sampler":{sampler},
            "batch_size":8,"num_workers":1}},
        "model":{model},
        "max_epochs":2,"steps_per_epoch":{steps},
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.003,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[{listeners}],
        "checkpoint_interval":2,"logpath":"{dir}/runs","checkpointspath":"{dir}/checkpoints","hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"auto"}}}}"#,
        model = model_json(),
        dir = dir.display(),
    )
}

const HINGE: &str =
    r#"{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}"#;

fn id_triplets_json() -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.samplers.IdTripletSampler",
            "queries":{},"documents":{},"triplets":{}}}"#,
        collection_json("queries.train.tsv"),
        collection_json("collection.tsv"),
        trec_json("IdTripletFile", "triples.train.tsv"),
    )
}

fn reranking_listener_json(dir: &Path) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.listeners.RankingValidationListener","id":"dev",
            "dataset":{},
            "metrics":{{"mrr@10":true,"ndcg@10":true}},"warmup":-1,"validation_interval":1,
            "early_stop":0,"bestpath":"{}/best"}}"#,
        reranking_json(r#","batch_size":5"#),
        dir.display(),
    )
}

fn learn_from(json: &str) -> xpm_torch_core::Result<LearnOutput> {
    learn(
        &parse_learner(json)?,
        &mut NoObserver,
        &AtomicBool::new(false),
    )
}

/// The best model of each metric, scored again outside the learner, gives the value the
/// listener reported for it.
#[test]
fn a_cross_encoder_trains_on_id_triplets_and_keeps_its_best_rerankers() {
    let dir = scratch_dir();
    let listener = reranking_listener_json(&dir);
    let out = learn_from(&learner_json(
        &dir,
        HINGE,
        &id_triplets_json(),
        &listener,
        15,
    ))
    .unwrap();
    assert_eq!(out.epochs.len(), 2);
    for epoch in &out.epochs {
        // The long passage among the 65 candidates is cut at 24 tokens.
        assert_eq!(epoch.metrics["dev/truncated_fraction"], 1.0 / 65.0);
        // It is a positive of some training triplets too.
        let cut = epoch.train["data/truncated_fraction"];
        assert!(cut > 0.0 && cut < 0.2, "{:?}", epoch.train);
    }
    let set = reranking();
    let model_config: AnyModule = serde_json::from_str(&model_json()).unwrap();
    let encoding = text_encoding(&model_config, "m").unwrap().unwrap();
    for name in ["mrr@10", "ndcg@10"] {
        let best = &out.listeners["dev"][name];
        let epoch = best["epoch"].as_u64().unwrap();
        let value = best["value"].as_f64().unwrap();
        assert_eq!(
            out.epochs[epoch as usize - 1].metrics[&format!("dev/{name}")],
            value
        );
        assert!(
            out.epochs
                .iter()
                .all(|e| e.metrics[&format!("dev/{name}")] <= value),
            "{name}: the best epoch has the highest value"
        );
        let mut model = build(&model_config, &mut Rng::new(1), "model").unwrap();
        load_weights(
            model.as_ref(),
            &dir.join("best").join(name).join("model.safetensors"),
        )
        .unwrap();
        model.set_training(false);
        let _guard = tch::no_grad_guard();
        let rows: Vec<usize> = (0..set.pairs.len()).collect();
        let (input, _) = set.encode(&rows, &encoding).unwrap();
        let scores = Vec::<f32>::try_from(model.forward(&input).unwrap()).unwrap();
        let again =
            RankMetric::parse(name, "m")
                .unwrap()
                .compute(&scores, &set.data, Some(&set.judged));
        assert!((again - value).abs() < 1e-6, "{name}: {again} vs {value}");
    }
}

/// Scored pairs from the fixture's triplets: (query, positive, 1) and (query, negative, 0).
fn write_scored_pairs(dir: &Path) -> PathBuf {
    let config: Typed<IdTripletSamplerConfig> = serde_json::from_str(&id_triplets_json()).unwrap();
    let triplets = IdTriplets::open(&config).unwrap();
    let rows: Vec<usize> = (0..triplets.count()).collect();
    let [q, p, n] = triplets.texts(&rows).unwrap();
    let mut lines = String::new();
    for k in 0..rows.len() {
        lines.push_str(&format!("{}\t{}\t1\n{}\t{}\t0\n", q[k], p[k], q[k], n[k]));
    }
    let path = dir.join("scored.tsv");
    std::fs::write(&path, lines).unwrap();
    path
}

#[test]
fn scored_text_pairs_train_a_cross_encoder_with_a_pointwise_loss() {
    let dir = scratch_dir();
    let sampler = format!(
        r#"{{"__xpmtype__":"xpm_torch.samplers.TextPairSampler",
            "pairs":{{"__xpmtype__":"xpm_torch.data.TextPairFile","id":"scored","path":"{}"}}}}"#,
        write_scored_pairs(&dir).display()
    );
    let loss =
        r#"{"__xpmtype__":"xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss","weight":1.0}"#;
    let listener = reranking_listener_json(&dir);
    let out = learn_from(&learner_json(&dir, loss, &sampler, &listener, 25)).unwrap();
    let losses: Vec<f64> = out.epochs.iter().map(|e| e.loss).collect();
    assert!(losses[1] < losses[0], "{losses:?}");
    assert!(
        out.epochs[0].train.keys().any(|k| k.contains("pointwise")),
        "{:?}",
        out.epochs[0].train
    );
    // A pairwise loss cannot read pointwise records.
    let err = learn_from(&learner_json(&dir, HINGE, &sampler, "", 1))
        .unwrap_err()
        .to_string();
    assert!(err.contains("pointwise"), "{err}");
}

/// Slates of text candidates hold the documents a slate of features would draw with the
/// same seed, encoded, padded positions repeating the slate's first document.
#[test]
fn text_slates_encode_the_drawn_candidates() {
    let set = Arc::new(reranking());
    let model_config: AnyModule = serde_json::from_str(&model_json()).unwrap();
    let encoding = text_encoding(&model_config, "m").unwrap().unwrap();
    let mut numbered = set.data.clone();
    numbered.num_features = 1;
    numbered.features = (0..numbered.num_docs()).map(|d| d as f32).collect();
    let shard = Shard::WHOLE;
    let mut texts =
        SlateSampler::over_texts(set.clone(), encoding.clone(), 9, Rng::new(4), shard, "s")
            .unwrap();
    let mut features = SlateSampler::new(&numbered, 9, Rng::new(4), shard, "s").unwrap();
    for _ in 0..3 {
        let (Batch::Slate(t), Batch::Slate(f)) = (
            texts.next_batch(2).unwrap(),
            features.next_batch(2).unwrap(),
        ) else {
            panic!("slates expected")
        };
        assert!(t.labels.equal(&f.labels) && t.mask.equal(&f.mask));
        let ScoreInput::Features(rows) = &f.input else {
            panic!("features expected")
        };
        let rows = Vec::<f32>::try_from(rows.flatten(0, -1)).unwrap();
        let mask = Vec::<bool>::try_from(f.mask.flatten(0, -1)).unwrap();
        let expected: Vec<usize> = rows
            .chunks(9)
            .zip(mask.chunks(9))
            .flat_map(|(r, m)| {
                (0..9).map(move |i| if m[i] { r[i] as usize } else { r[0] as usize })
            })
            .collect();
        let (want, _) = set.encode(&expected, &encoding).unwrap();
        let (ScoreInput::Encoded(got), ScoreInput::Encoded(want)) = (&t.input, &want) else {
            panic!("encoded texts expected")
        };
        let (EncodedTexts::Pairs(got), EncodedTexts::Pairs(want)) = (got, want) else {
            panic!("pairs expected")
        };
        assert!(got.ids.equal(&want.ids));
    }
    assert!(texts.truncation().unwrap().inputs == 54);
}

#[test]
fn a_listwise_loss_trains_a_cross_encoder_on_slates_of_a_run() {
    let dir = scratch_dir();
    let sampler = format!(
        r#"{{"__xpmtype__":"xpm_torch.samplers.SlateSampler","slate_length":6,"dataset":{}}}"#,
        reranking_json(""),
    );
    let loss = r#"{"__xpmtype__":"xpm_torch.losses.listwise.ListNetLoss","weight":1.0}"#;
    let out = learn_from(&learner_json(&dir, loss, &sampler, "", 20)).unwrap();
    let losses: Vec<f64> = out.epochs.iter().map(|e| e.loss).collect();
    assert!(losses[1] < losses[0], "{losses:?}");
    assert!(out.epochs[0].train.contains_key("data/truncated_fraction"));
}
