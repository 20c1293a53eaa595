//! [`RankMetric`]: the ranking metrics of held-out queries (pairwise accuracy, MRR, NDCG, MAP,
//! precision, recall, ERR), parsed from their names and computed from scores and grades.

use crate::data::LtrDataset;
use crate::{Error, Result};

/// A ranking metric over held-out queries; higher is better. A document is relevant when its
/// grade is above 0; documents are ranked by decreasing score, ties in dataset order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankMetric {
    /// Fraction of preference pairs scored in the right order (strictly).
    PairwiseAccuracy,
    /// Mean reciprocal rank of the first relevant document, 0 when it is not among the first
    /// `k` (MS MARCO's MRR@10), or wherever it is.
    Mrr(Option<usize>),
    /// Normalised discounted cumulative gain (gain `2^rel − 1`) at a cut-off, or over all.
    Ndcg(Option<usize>),
    /// Mean average precision: per query, the mean over its relevant documents of the
    /// precision at their rank.
    Map,
    /// Relevant documents among the first `k`, divided by `k`.
    Precision(usize),
    /// Relevant documents among the first `k`, divided by the query's relevant documents.
    Recall(usize),
    /// Expected reciprocal rank (Chapelle et al., 2009) at a cut-off, or over all: a user stops
    /// at a document of grade `g` with probability `(2^g − 1) / 2^top`, `top` the dataset's
    /// highest grade.
    Err(Option<usize>),
}

/// The metric names, for messages.
const NAMES: &str =
    "pairwise_accuracy, mrr, mrr@k, map, ndcg, ndcg@k, err, err@k, precision@k or recall@k";

impl RankMetric {
    /// Parses one of [`NAMES`] (`k` a whole number from 1).
    ///
    /// # Errors
    /// [`Error::Config`] at `path` for anything else.
    pub fn parse(name: &str, path: &str) -> Result<Self> {
        let unknown = || Error::config(path, format!("unknown metric {name:?} (use {NAMES})"));
        let (base, k) = match name.split_once('@') {
            Some((base, digits)) => match digits.parse::<usize>() {
                Ok(k) if k > 0 && !digits.starts_with('0') => (base, Some(k)),
                _ => return Err(unknown()),
            },
            None => (name, None),
        };
        Ok(match (base, k) {
            ("pairwise_accuracy", None) => RankMetric::PairwiseAccuracy,
            ("mrr", k) => RankMetric::Mrr(k),
            ("map", None) => RankMetric::Map,
            ("ndcg", k) => RankMetric::Ndcg(k),
            ("err", k) => RankMetric::Err(k),
            ("precision", Some(k)) => RankMetric::Precision(k),
            ("recall", Some(k)) => RankMetric::Recall(k),
            _ => return Err(unknown()),
        })
    }

    /// The metric over all queries of `data` given each document's score. Pairwise accuracy
    /// weighs every pair equally; the others average over queries, leaving out every query
    /// without a relevant document (where NDCG, AP, recall, MRR and ERR are 0/0, and precision is
    /// left out too so that all metrics count the same queries). `NaN` when no query counts.
    ///
    /// `judged`, when given, holds for each query `q` the grades of all its judged documents,
    /// beyond those ranked (a run's candidates to re-rank). A query counts when one of those
    /// is relevant, even if none was ranked (its value is then 0, as trec_eval gives); the
    /// relevant ones the ranking misses count in NDCG's ideal ranking, in recall and in MAP.
    pub fn compute(self, scores: &[f32], data: &LtrDataset, judged: Option<&[Vec<u8>]>) -> f64 {
        let ideal = |q: usize, rel: &'_ [u8]| -> Vec<u8> {
            judged.map_or_else(|| rel.to_vec(), |j| j[q].clone())
        };
        let top = match judged {
            Some(j) => j.iter().flatten().copied().max().unwrap_or(0),
            None => data.relevance.iter().copied().max().unwrap_or(0),
        };
        let mut total = 0.0;
        let mut counted = 0usize;
        for (i, q) in data.query_bounds.windows(2).enumerate() {
            let (rel, s) = (&data.relevance[q[0]..q[1]], &scores[q[0]..q[1]]);
            if self == RankMetric::PairwiseAccuracy {
                let (ok, n) = pairwise(s, rel);
                total += ok as f64;
                counted += n;
                continue;
            }
            let ideal = ideal(i, rel);
            if ideal.iter().any(|&g| g > 0) {
                total += self.query_value(s, rel, &ideal, top);
                counted += 1;
            }
        }
        if counted == 0 {
            f64::NAN
        } else {
            total / counted as f64
        }
    }
}

impl RankMetric {
    /// The metric of one query whose `ideal` grades (all its judged documents) hold a
    /// relevant one; `rel` are the grades of the ranked documents.
    fn query_value(self, scores: &[f32], rel: &[u8], ideal: &[u8], top: u8) -> f64 {
        let ranked: Vec<u8> = ranking(scores).into_iter().map(|d| rel[d]).collect();
        let relevant = ideal.iter().filter(|&&g| g > 0).count() as f64;
        let hits = |k: usize| ranked.iter().take(k).filter(|&&g| g > 0).count() as f64;
        match self {
            RankMetric::PairwiseAccuracy => f64::NAN,
            RankMetric::Mrr(k) => {
                reciprocal_rank(&ranked[..k.unwrap_or(ranked.len()).min(ranked.len())])
            }
            RankMetric::Ndcg(k) => ndcg(&ranked, ideal, k),
            RankMetric::Map => average_precision(&ranked) / relevant,
            RankMetric::Precision(k) => hits(k) / k as f64,
            RankMetric::Recall(k) => hits(k) / relevant,
            RankMetric::Err(k) => expected_reciprocal_rank(&ranked, k, top),
        }
    }
}

fn ranking(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Stable, descending by score; ties keep document order.
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    order
}

fn pairwise(scores: &[f32], rel: &[u8]) -> (usize, usize) {
    let mut ok = 0;
    let mut n = 0;
    for i in 0..rel.len() {
        for j in 0..rel.len() {
            if rel[i] > rel[j] {
                n += 1;
                if scores[i] > scores[j] {
                    ok += 1;
                }
            }
        }
    }
    (ok, n)
}

/// 1 / the rank of the first relevant grade of `ranked`.
fn reciprocal_rank(ranked: &[u8]) -> f64 {
    ranked
        .iter()
        .position(|&g| g > 0)
        .map_or(0.0, |first| 1.0 / (first + 1) as f64)
}

/// The sum of the precisions at the ranks of the relevant grades of `ranked`.
fn average_precision(ranked: &[u8]) -> f64 {
    let mut hits = 0.0;
    let mut total = 0.0;
    for (i, &g) in ranked.iter().enumerate() {
        if g > 0 {
            hits += 1.0;
            total += hits / (i + 1) as f64;
        }
    }
    total
}

fn expected_reciprocal_rank(ranked: &[u8], k: Option<usize>, top: u8) -> f64 {
    let scale = 2f64.powi(i32::from(top));
    let mut reach = 1.0;
    let mut total = 0.0;
    for (i, &g) in ranked.iter().take(k.unwrap_or(ranked.len())).enumerate() {
        let stop = (2f64.powi(i32::from(g)) - 1.0) / scale;
        total += reach * stop / (i + 1) as f64;
        reach *= 1.0 - stop;
    }
    total
}

fn dcg(grades: impl Iterator<Item = u8>, k: usize) -> f64 {
    grades
        .take(k)
        .enumerate()
        .map(|(i, g)| (2f64.powi(i32::from(g)) - 1.0) / ((i + 2) as f64).log2())
        .sum()
}

/// NDCG at `k` (or over everything) of the grades `ranked` against the best order of
/// `judged` (which holds a relevant grade).
fn ndcg(ranked: &[u8], judged: &[u8], k: Option<usize>) -> f64 {
    let mut ideal = judged.to_vec();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let all = usize::MAX;
    dcg(ranked.iter().copied(), k.unwrap_or(all)) / dcg(ideal.into_iter(), k.unwrap_or(all))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(relevance: Vec<u8>, bounds: Vec<usize>) -> LtrDataset {
        LtrDataset {
            features: vec![0.0; relevance.len()],
            num_features: 1,
            relevance,
            query_bounds: bounds,
        }
    }

    #[test]
    fn perfect_and_reversed_rankings() {
        let d = data(vec![2, 1, 0], vec![0, 3]);
        let good = [3.0f32, 2.0, 1.0];
        let bad = [1.0f32, 2.0, 3.0];
        for m in [
            RankMetric::PairwiseAccuracy,
            RankMetric::Mrr(None),
            RankMetric::Ndcg(None),
            RankMetric::Ndcg(Some(2)),
        ] {
            assert!((m.compute(&good, &d, None) - 1.0).abs() < 1e-12, "{m:?}");
        }
        assert_eq!(RankMetric::PairwiseAccuracy.compute(&bad, &d, None), 0.0);
        assert!((RankMetric::Mrr(None).compute(&bad, &d, None) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn ndcg_matches_a_hand_computation() {
        // Grades in ranked order [0, 2, 1]: DCG = 3/log2(3) + 1/2, IDCG = 3 + 1/log2(3).
        let d = data(vec![0, 2, 1], vec![0, 3]);
        let scores = [3.0f32, 2.0, 1.0];
        let expected = (3.0 / 3f64.log2() + 0.5) / (3.0 + 1.0 / 3f64.log2());
        assert!((RankMetric::Ndcg(None).compute(&scores, &d, None) - expected).abs() < 1e-12);
        // At 1: DCG = 0.
        assert_eq!(RankMetric::Ndcg(Some(1)).compute(&scores, &d, None), 0.0);
    }

    #[test]
    fn undefined_queries_are_left_out() {
        let d = data(vec![0, 0, 1, 0], vec![0, 2, 4]);
        assert_eq!(
            RankMetric::Mrr(None).compute(&[1.0, 2.0, 1.0, 0.0], &d, None),
            1.0
        );
        assert!(RankMetric::Mrr(None)
            .compute(&[1.0, 2.0], &data(vec![0, 0], vec![0, 2]), None)
            .is_nan());
    }

    /// Every metric against the fixture's numpy values (scripts/fixtures/gen_listwise.py), on
    /// data with score ties and a query without a relevant document.
    #[test]
    fn metrics_match_the_python_reference() {
        let fixture = crate::losses::listwise::fixture::all();
        for set in fixture["metrics"].as_array().unwrap() {
            let ints = |key: &str| -> Vec<u64> {
                set[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect()
            };
            let d = data(
                ints("relevance").into_iter().map(|g| g as u8).collect(),
                ints("query_bounds")
                    .into_iter()
                    .map(|b| b as usize)
                    .collect(),
            );
            let scores: Vec<f32> = set["scores"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            let metrics = set["metrics"].as_object().unwrap();
            assert!(metrics.len() >= 20, "{}", metrics.len());
            for (name, want) in metrics {
                let got = RankMetric::parse(name, "m")
                    .unwrap()
                    .compute(&scores, &d, None);
                let want = want.as_f64().unwrap();
                assert!((got - want).abs() < 1e-12, "{name}: {got} vs numpy {want}");
            }
        }
    }

    #[test]
    fn a_query_without_relevant_documents_is_left_out_of_every_metric() {
        // Query 0 has no relevant document and is ranked badly by any scores: leaving it out,
        // every per-query metric is that of query 1, ranked perfectly.
        let d = data(vec![0, 0, 0, 2, 1, 0], vec![0, 3, 6]);
        let scores = [3.0f32, 2.0, 1.0, 3.0, 2.0, 1.0];
        for name in ["mrr", "map", "ndcg", "ndcg@2", "recall@2"] {
            let m = RankMetric::parse(name, "m").unwrap();
            assert_eq!(m.compute(&scores, &d, None), 1.0, "{name}");
        }
        // precision@3 of query 1 alone: 2 relevant of 3
        let p = RankMetric::Precision(3).compute(&scores, &d, None);
        assert!((p - 2.0 / 3.0).abs() < 1e-12);
        // ERR@1 of query 1 alone: its top document (grade 2 of top 2) stops with (4 − 1) / 4
        assert_eq!(RankMetric::Err(Some(1)).compute(&scores, &d, None), 0.75);
        let nothing = data(vec![0, 0], vec![0, 2]);
        for name in ["map", "precision@1", "recall@1", "err"] {
            let m = RankMetric::parse(name, "m").unwrap();
            assert!(m.compute(&[1.0, 0.0], &nothing, None).is_nan(), "{name}");
        }
    }

    #[test]
    fn metric_names_parse_or_name_the_place() {
        for (name, metric) in [
            ("map", RankMetric::Map),
            ("mrr", RankMetric::Mrr(None)),
            ("mrr@10", RankMetric::Mrr(Some(10))),
            ("err", RankMetric::Err(None)),
            ("err@5", RankMetric::Err(Some(5))),
            ("precision@3", RankMetric::Precision(3)),
            ("recall@20", RankMetric::Recall(20)),
        ] {
            assert_eq!(RankMetric::parse(name, "m").unwrap(), metric);
        }
        for bad in ["precision", "recall@0", "map@3", "ndcg@05", "err@x", "auc"] {
            assert!(RankMetric::parse(bad, "m").is_err(), "{bad}");
        }
        assert_eq!(
            RankMetric::parse("ndcg@10", "m").unwrap(),
            RankMetric::Ndcg(Some(10))
        );
        let err = RankMetric::parse("ndcg@0", "learner.listeners[0].metrics").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("learner.listeners[0].metrics: unknown metric \"ndcg@0\""));
    }

    /// Re-ranking the MS MARCO fixture's runs, judged by its qrels, gives the values
    /// ir-measures gives (`metrics.json`, from scripts/fixtures/gen_msmarco.py).
    #[test]
    fn reranking_metrics_equal_ir_measures() {
        use crate::data::msmarco_fixture::{fixture, reranking_config, scores_of};
        use crate::data::Reranking;
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
}
