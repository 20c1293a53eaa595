//! The MS MARCO layout put together: triplets of ids over text collections for training, and
//! a run's candidates judged by qrels for re-ranking.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::SystemTime;

use crate::config::{IdTripletSamplerConfig, TextCollectionConfig, TextRerankingDatasetConfig};
use crate::data::formats::text_triplets::strs;
use crate::data::{
    longest_first, read_id_triplets, Entry, LtrDataset, Qrels, ScoreInput, TextCollection,
    TextEncoding, TrecRun, TripletTexts, Truncation,
};
use crate::{Error, Result};

/// Candidates read and tokenised at once to count their tokens.
const COUNTED_ROWS: usize = 1024;

/// What tells an opened file from a changed one: its canonical path, length and modification
/// time.
type FileStamp = (PathBuf, u64, Option<SystemTime>);

/// Collections opened in this process and still in use, by file.
static OPEN_COLLECTIONS: Mutex<Vec<(FileStamp, Weak<TextCollection>)>> = Mutex::new(Vec::new());

fn stamp(path: &Path) -> Result<FileStamp> {
    let canonical = path.canonicalize().map_err(|e| Error::io(path, e))?;
    let meta = std::fs::metadata(&canonical).map_err(|e| Error::io(path, e))?;
    Ok((canonical, meta.len(), meta.modified().ok()))
}

/// Opens (indexes) the collection of `config`; errors name the file. A collection still in use
/// (the training sampler's, when validation re-ranks over the same file) is shared rather than
/// indexed again, unless the file has changed since.
///
/// # Errors
/// See [`TextCollection::open`].
pub fn open_collection(config: &TextCollectionConfig) -> Result<Arc<TextCollection>> {
    let path = Path::new(&config.path);
    let key = stamp(path)?;
    let shared = || {
        let mut open = OPEN_COLLECTIONS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.retain(|(_, weak)| weak.strong_count() > 0);
        open.iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, weak)| weak.upgrade())
    };
    if let Some(collection) = shared() {
        return Ok(collection);
    }
    let collection = Arc::new(TextCollection::open(path)?);
    OPEN_COLLECTIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((key, Arc::downgrade(&collection)));
    Ok(collection)
}

/// Triplets of collection entries: (query, positive document, negative document).
#[derive(Debug)]
pub struct IdTriplets {
    queries: Arc<TextCollection>,
    documents: Arc<TextCollection>,
    triplets: Vec<[Entry; 3]>,
}

impl IdTriplets {
    /// Reads the collections and the triplets `config` names.
    ///
    /// # Errors
    /// The collections' and the triplet file's errors (a missing id at `file:line`).
    pub fn open(config: &IdTripletSamplerConfig) -> Result<Self> {
        let queries = open_collection(&config.queries)?;
        let documents = open_collection(&config.documents)?;
        let triplets = read_id_triplets(Path::new(&config.triplets.path), &queries, &documents)?;
        Ok(IdTriplets {
            queries,
            documents,
            triplets,
        })
    }
}

impl TripletTexts for IdTriplets {
    fn count(&self) -> usize {
        self.triplets.len()
    }

    fn texts(&self, rows: &[usize]) -> Result<[Vec<String>; 3]> {
        let column = |field: usize, from: &TextCollection| -> Result<Vec<String>> {
            rows.iter()
                .map(|&r| from.text(self.triplets[r][field]))
                .collect()
        };
        Ok([
            column(0, &self.queries)?,
            column(1, &self.documents)?,
            column(2, &self.documents)?,
        ])
    }
}

/// A run's candidates to re-rank, judged by qrels. Only the run's queries with a relevant
/// (grade > 0) judged document are kept: the ranking metrics leave the others out.
#[derive(Debug)]
pub struct Reranking {
    /// Candidate grades by query (no features): what the ranking metrics and slates read.
    pub data: LtrDataset,
    /// Per kept query, the grades of all its judged documents, candidates or not: relevant
    /// documents the run missed still count in NDCG's ideal ranking, recall and MAP.
    pub judged: Vec<Vec<u8>>,
    /// (query, document) entries of each candidate, in `data`'s order.
    pub pairs: Vec<(Entry, Entry)>,
    queries: Arc<TextCollection>,
    documents: Arc<TextCollection>,
    /// Pairs scored per forward.
    pub batch_size: usize,
}

impl Reranking {
    /// Reads the files `config` names, at config path `path`.
    ///
    /// # Errors
    /// The files' errors; a query or document of any run line (past `depth` too, and of the
    /// queries left out) absent from its collection, at the run's `file:line`;
    /// [`Error::Config`] at `path` when no run query has a relevant judged document.
    pub fn open(config: &TextRerankingDatasetConfig, path: &str) -> Result<Self> {
        let depth = config.depth.map(|v| v as usize);
        let batch_size = config.batch_size.map_or(64, |v| v as usize);
        let queries = open_collection(&config.queries)?;
        let documents = open_collection(&config.documents)?;
        let qrels = Qrels::read(Path::new(&config.qrels.path))?;
        let run_file = &config.run.path;
        let run = TrecRun::read(Path::new(run_file), depth, &queries, &documents)?;
        let mut data = LtrDataset {
            features: Vec::new(),
            num_features: 0,
            relevance: Vec::new(),
            query_bounds: vec![0],
        };
        let mut judged = Vec::new();
        let mut pairs = Vec::new();
        for (qid, query, candidates) in &run.queries {
            let Some(grades) = qrels.grades.get(qid).filter(|g| g.values().any(|&g| g > 0)) else {
                continue;
            };
            for c in candidates {
                pairs.push((*query, c.entry));
                data.relevance
                    .push(grades.get(&c.docid).copied().unwrap_or(0));
            }
            data.query_bounds.push(pairs.len());
            judged.push(grades.values().copied().collect());
        }
        if judged.is_empty() {
            return Err(Error::config(
                path,
                format!(
                    "no query of the run {run_file} has a relevant document in the qrels {}: \
                     check that they belong together",
                    config.qrels.path
                ),
            ));
        }
        Ok(Reranking {
            data,
            judged,
            pairs,
            queries,
            documents,
            batch_size,
        })
    }

    /// The model inputs of candidates `rows`, encoded by `encoding`, and how many were cut by
    /// truncation.
    ///
    /// # Errors
    /// An I/O, tokenizer or libtorch error.
    pub fn encode(
        &self,
        rows: &[usize],
        encoding: &TextEncoding,
    ) -> Result<(ScoreInput, Truncation)> {
        let (queries, documents) = self.texts(rows.iter().copied())?;
        encoding.encode(&strs(&queries), &strs(&documents))
    }

    /// The candidates' row numbers, longest first as `encoding` cuts them (see
    /// [`longest_first`]): scored in this order, a batch is padded to nearly its own lengths.
    ///
    /// # Errors
    /// An I/O or tokenizer error.
    pub fn longest_first(&self, encoding: &TextEncoding) -> Result<Vec<usize>> {
        let mut counts = Vec::with_capacity(self.pairs.len());
        let rows: Vec<usize> = (0..self.pairs.len()).collect();
        for chunk in rows.chunks(COUNTED_ROWS) {
            let (queries, documents) = self.texts(chunk.iter().copied())?;
            counts.extend(encoding.token_counts(&strs(&queries), &strs(&documents))?);
        }
        Ok(longest_first(&counts))
    }

    /// The query and document texts of candidates `rows`.
    fn texts(
        &self,
        rows: impl ExactSizeIterator<Item = usize>,
    ) -> Result<(Vec<String>, Vec<String>)> {
        let mut queries = Vec::with_capacity(rows.len());
        let mut documents = Vec::with_capacity(rows.len());
        for r in rows {
            let (q, d) = self.pairs[r];
            queries.push(self.queries.text(q)?);
            documents.push(self.documents.text(d)?);
        }
        Ok((queries, documents))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    use super::*;
    use crate::config::tests_support::scratch_dir;
    use crate::config::{IdTripletFileConfig, TrecQrelsConfig, TrecRunConfig, Typed};
    use crate::learner::listeners::RankMetric;

    /// The tiny MS MARCO-shaped fixture (scripts/fixtures/gen_msmarco.py).
    pub(crate) fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/msmarco")
            .join(name)
    }

    pub(crate) fn collection(name: &str) -> Typed<TextCollectionConfig> {
        Typed(TextCollectionConfig {
            id: name.into(),
            path: fixture(name).display().to_string(),
        })
    }

    pub(crate) fn qrels(path: PathBuf) -> TrecQrelsConfig {
        TrecQrelsConfig {
            id: "f".into(),
            path: path.display().to_string(),
        }
    }

    pub(crate) fn run_file(path: PathBuf) -> TrecRunConfig {
        TrecRunConfig {
            id: "f".into(),
            path: path.display().to_string(),
        }
    }

    pub(crate) fn id_triplets(path: PathBuf) -> IdTripletFileConfig {
        IdTripletFileConfig {
            id: "f".into(),
            path: path.display().to_string(),
        }
    }

    pub(crate) fn reranking_config(run: PathBuf, depth: Option<u64>) -> TextRerankingDatasetConfig {
        TextRerankingDatasetConfig {
            queries: collection("queries.dev.tsv"),
            documents: collection("collection.tsv"),
            qrels: Typed(qrels(fixture("qrels.dev.tsv"))),
            run: Typed(run_file(run)),
            depth,
            batch_size: None,
        }
    }

    /// Each candidate's score in a run file, in the re-ranking's order.
    fn scores_of(set: &Reranking, run: &Path) -> Vec<f32> {
        let text = std::fs::read_to_string(run).unwrap();
        let scores: HashMap<(String, String), f32> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                ((f[0].into(), f[2].into()), f[4].parse().unwrap())
            })
            .collect();
        set.pairs
            .iter()
            .map(|&(q, d)| {
                let key = (set.queries.id(q).unwrap(), set.documents.id(d).unwrap());
                scores[&key]
            })
            .collect()
    }

    #[test]
    fn a_collection_in_use_is_shared_until_its_file_changes() {
        let dir = scratch_dir();
        let file = dir.join("collection.tsv");
        std::fs::write(&file, "1\tfirst\n2\tsecond\n").unwrap();
        let config = TextCollectionConfig {
            id: "c".into(),
            path: file.display().to_string(),
        };
        let a = open_collection(&config).unwrap();
        let b = open_collection(&config).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // Changed on disk (longer): indexed anew, with the new text.
        std::fs::write(&file, "1\tfirst, changed\n2\tsecond\n").unwrap();
        let c = open_collection(&config).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.text(c.entry("1").unwrap()).unwrap(), "first, changed");
        // No longer in use: nothing is kept.
        drop((a, b, c));
        let d = open_collection(&config).unwrap();
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn reranking_metrics_equal_ir_measures() {
        let set = Reranking::open(&reranking_config(fixture("run.dev.trec"), None), "d").unwrap();
        assert_eq!(
            set.judged.len(),
            8,
            "the query without a relevant judgement is left out"
        );
        assert_eq!(set.data.query_bounds.len(), 9);
        let reference: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture("metrics.json")).unwrap())
                .unwrap();
        for (run, metrics) in reference.as_object().unwrap() {
            let scores = scores_of(&set, &fixture(run));
            for (name, want) in metrics.as_object().unwrap() {
                let metric = RankMetric::parse(name, "m").unwrap();
                let got = metric.compute(&scores, &set.data, Some(&set.judged));
                let want = want.as_f64().unwrap();
                assert!(
                    (got - want).abs() < 1e-9,
                    "{run} {name}: {got} vs ir-measures {want}"
                );
                if name == "ndcg@10" || name == "recall@5" {
                    // Without the judged documents the run missed, the value would differ.
                    let partial = metric.compute(&scores, &set.data, None);
                    assert!((partial - want).abs() > 1e-3, "{run} {name}");
                }
            }
        }
    }

    #[test]
    fn depth_keeps_the_best_ranked_candidates_and_missing_ids_name_the_run_line() {
        let set =
            Reranking::open(&reranking_config(fixture("run.dev.trec"), Some(3)), "d").unwrap();
        let widths: Vec<usize> = set
            .data
            .query_bounds
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect();
        assert_eq!(widths, [3; 8]);
        let run = scratch_dir().join("run.trec");
        std::fs::write(&run, "2000 Q0 0 1 3 t\n2000 Q0 999 2 2 t\n").unwrap();
        let err = Reranking::open(&reranking_config(run.clone(), None), "d")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run.trec:2:1: the document id \"999\" is not in")
                && err.contains("collection.tsv"),
            "{err}"
        );
        std::fs::write(&run, "2009 Q0 0 1 3 t\n").unwrap();
        let err = Reranking::open(&reranking_config(run, None), "learner.listeners[0].dataset")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("learner.listeners[0].dataset: no query of the run"),
            "{err}"
        );
    }

    /// Every line of a run is checked against the collections: past `depth`, and for queries
    /// without a relevant judgement too, as the docs say a missing id is refused.
    #[test]
    fn an_unknown_id_anywhere_in_the_run_is_refused_at_its_line() {
        let run = scratch_dir().join("run.trec");
        let cases = [
            // Past depth 1.
            (
                "2000 Q0 0 1 3 t\n2000 Q0 999 2 2 t\n",
                Some(1),
                "run.trec:2:1: the document id \"999\" is not in",
            ),
            // Of a query that the qrels do not judge relevant (left out of the metrics).
            (
                "2000 Q0 0 1 3 t\n2009 Q0 0 1 3 t\n2009 Q0 d-7 2 2 t\n",
                None,
                "run.trec:3:1: the document id \"d-7\" is not in",
            ),
            // A query that is not in the queries.
            (
                "2000 Q0 0 1 3 t\n7 Q0 0 1 3 t\n",
                Some(1),
                "run.trec:2:1: the query id \"7\" is not in",
            ),
        ];
        for (text, depth, want) in cases {
            std::fs::write(&run, text).unwrap();
            let err = Reranking::open(&reranking_config(run.clone(), depth), "d")
                .expect_err(text)
                .to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn id_triplets_read_their_texts_by_id() {
        let config = IdTripletSamplerConfig {
            queries: collection("queries.train.tsv"),
            documents: collection("collection.tsv"),
            triplets: Typed(id_triplets(fixture("triples.train.tsv"))),
        };
        let triplets = IdTriplets::open(&config).unwrap();
        assert_eq!(triplets.count(), 240);
        let first = std::fs::read_to_string(fixture("triples.train.tsv")).unwrap();
        let ids: Vec<&str> = first.lines().next().unwrap().split('\t').collect();
        let text_of = |file: &str, id: &str| -> String {
            let all = std::fs::read_to_string(fixture(file)).unwrap();
            let line = all
                .lines()
                .find(|l| l.split('\t').next() == Some(id))
                .unwrap();
            line.split_once('\t').unwrap().1.to_string()
        };
        let [q, p, n] = triplets.texts(&[0]).unwrap();
        assert_eq!(q[0], text_of("queries.train.tsv", ids[0]));
        assert_eq!(p[0], text_of("collection.tsv", ids[1]));
        assert_eq!(n[0], text_of("collection.tsv", ids[2]));
    }
}

/// Training on triplets of ids and validating by re-ranking, through `learn()`.
#[cfg(test)]
mod learn_tests {
    use std::path::{Path, PathBuf};

    use super::tests::{fixture, reranking_config};
    use super::*;
    use crate::config::tests_support::scratch_dir;
    use crate::config::{parse_learner, AnyModule};
    use crate::data::Sampler;
    use crate::learner::listeners::RankMetric;
    use crate::learner::{learn, NoObserver};
    use crate::rng::Rng;

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
                "dataset":{{"__xpmtype__":"xpm_torch.data.TextRerankingDataset",
                    "queries":{},"documents":{},"qrels":{},"run":{},"batch_size":5}},
                "metrics":{{"mrr@10":true,"ndcg@10":true}},"warmup":-1,"validation_interval":1,
                "early_stop":0,"bestpath":"{}/best"}}"#,
            collection_json("queries.dev.tsv"),
            collection_json("collection.tsv"),
            trec_json("TrecQrels", "qrels.dev.tsv"),
            trec_json("TrecRun", "run.dev.trec"),
            dir.display(),
        )
    }

    fn run(json: &str) -> crate::learner::LearnOutput {
        let config = parse_learner(json).unwrap();
        learn(
            &config,
            &mut NoObserver,
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap()
    }

    /// The best model of each metric, scored again outside the learner, gives the value the
    /// listener reported for it.
    #[test]
    fn a_cross_encoder_trains_on_id_triplets_and_keeps_its_best_rerankers() {
        let dir = scratch_dir();
        let listener = reranking_listener_json(&dir);
        let out = run(&learner_json(
            &dir,
            HINGE,
            &id_triplets_json(),
            &listener,
            15,
        ));
        assert_eq!(out.epochs.len(), 2);
        for epoch in &out.epochs {
            // The long passage among the 65 candidates is cut at 24 tokens.
            assert_eq!(epoch.metrics["dev/truncated_fraction"], 1.0 / 65.0);
            // It is a positive of some training triplets too.
            let cut = epoch.train["data/truncated_fraction"];
            assert!(cut > 0.0 && cut < 0.2, "{:?}", epoch.train);
        }
        let set = Reranking::open(&reranking_config(fixture("run.dev.trec"), None), "d").unwrap();
        let model_config: AnyModule = serde_json::from_str(&model_json()).unwrap();
        let encoding = crate::models::hf::text_encoding(&model_config, "m")
            .unwrap()
            .unwrap();
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
            let mut model = crate::models::build(&model_config, &mut Rng::new(1), "model").unwrap();
            crate::models::load_weights(
                model.as_ref(),
                &dir.join("best").join(name).join("model.safetensors"),
            )
            .unwrap();
            model.set_training(false);
            let _guard = tch::no_grad_guard();
            let rows: Vec<usize> = (0..set.pairs.len()).collect();
            let (input, _) = set.encode(&rows, &encoding).unwrap();
            let scores = Vec::<f32>::try_from(model.forward(&input).unwrap()).unwrap();
            let again = RankMetric::parse(name, "m").unwrap().compute(
                &scores,
                &set.data,
                Some(&set.judged),
            );
            assert!((again - value).abs() < 1e-6, "{name}: {again} vs {value}");
        }
    }

    /// Scored pairs from the fixture's triplets: (query, positive, 1) and (query, negative, 0).
    fn write_scored_pairs(dir: &Path) -> PathBuf {
        let config = IdTripletSamplerConfig {
            queries: super::tests::collection("queries.train.tsv"),
            documents: super::tests::collection("collection.tsv"),
            triplets: crate::config::Typed(super::tests::id_triplets(fixture("triples.train.tsv"))),
        };
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
        let out = run(&learner_json(&dir, loss, &sampler, &listener, 25));
        let losses: Vec<f64> = out.epochs.iter().map(|e| e.loss).collect();
        assert!(losses[1] < losses[0], "{losses:?}");
        assert!(
            out.epochs[0].train.keys().any(|k| k.contains("pointwise")),
            "{:?}",
            out.epochs[0].train
        );
        // A pairwise loss cannot read pointwise records.
        let err = parse_learner(&learner_json(&dir, HINGE, &sampler, "", 1))
            .and_then(|c| {
                learn(
                    &c,
                    &mut NoObserver,
                    &std::sync::atomic::AtomicBool::new(false),
                )
            })
            .unwrap_err()
            .to_string();
        assert!(err.contains("pointwise"), "{err}");
    }

    /// Slates of text candidates hold the documents a slate of features would draw with the
    /// same seed, encoded, padded positions repeating the slate's first document.
    #[test]
    fn text_slates_encode_the_drawn_candidates() {
        use crate::data::{Batch, SlateSampler};
        let set = Arc::new(
            Reranking::open(&reranking_config(fixture("run.dev.trec"), None), "d").unwrap(),
        );
        let model_config: AnyModule = serde_json::from_str(&model_json()).unwrap();
        let encoding = crate::models::hf::text_encoding(&model_config, "m")
            .unwrap()
            .unwrap();
        let mut numbered = set.data.clone();
        numbered.num_features = 1;
        numbered.features = (0..numbered.num_docs()).map(|d| d as f32).collect();
        let shard = crate::data::Shard::WHOLE;
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
            let (crate::data::EncodedTexts::Pairs(got), crate::data::EncodedTexts::Pairs(want)) =
                (got, want)
            else {
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
            r#"{{"__xpmtype__":"xpm_torch.samplers.SlateSampler","slate_length":6,
                "dataset":{{"__xpmtype__":"xpm_torch.data.TextRerankingDataset",
                    "queries":{},"documents":{},"qrels":{},"run":{}}}}}"#,
            collection_json("queries.dev.tsv"),
            collection_json("collection.tsv"),
            trec_json("TrecQrels", "qrels.dev.tsv"),
            trec_json("TrecRun", "run.dev.trec"),
        );
        let loss = r#"{"__xpmtype__":"xpm_torch.losses.listwise.ListNetLoss","weight":1.0}"#;
        let out = run(&learner_json(&dir, loss, &sampler, "", 20));
        let losses: Vec<f64> = out.epochs.iter().map(|e| e.loss).collect();
        assert!(losses[1] < losses[0], "{losses:?}");
        assert!(out.epochs[0].train.contains_key("data/truncated_fraction"));
    }
}
