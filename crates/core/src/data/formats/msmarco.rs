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
    pub(crate) fn scores_of(set: &Reranking, run: &Path) -> Vec<f32> {
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
