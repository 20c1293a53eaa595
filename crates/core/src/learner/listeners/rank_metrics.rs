use crate::data::LtrDataset;
use crate::{Error, Result};

/// A ranking metric over held-out queries; higher is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankMetric {
    /// Fraction of preference pairs scored in the right order (strictly).
    PairwiseAccuracy,
    /// Mean reciprocal rank of the first relevant (grade > 0) document.
    Mrr,
    /// Normalised discounted cumulative gain (gain `2^rel − 1`) at a cut-off, or over all.
    Ndcg(Option<usize>),
}

impl RankMetric {
    /// Parses `pairwise_accuracy`, `mrr`, `ndcg` or `ndcg@k`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` for anything else.
    pub fn parse(name: &str, path: &str) -> Result<Self> {
        match name {
            "pairwise_accuracy" => Ok(RankMetric::PairwiseAccuracy),
            "mrr" => Ok(RankMetric::Mrr),
            "ndcg" => Ok(RankMetric::Ndcg(None)),
            other => match other
                .strip_prefix("ndcg@")
                .and_then(|k| k.parse::<usize>().ok())
            {
                Some(k) if k > 0 => Ok(RankMetric::Ndcg(Some(k))),
                _ => Err(Error::config(
                    path,
                    format!(
                        "unknown metric {other:?} (use pairwise_accuracy, mrr, ndcg or ndcg@k)"
                    ),
                )),
            },
        }
    }

    /// The metric over all queries of `data` given each document's score. Pairwise accuracy
    /// weighs every pair equally; MRR and NDCG average over queries, leaving out those where
    /// they are undefined (no relevant document). `NaN` when nothing is defined.
    pub fn compute(self, scores: &[f32], data: &LtrDataset) -> f64 {
        let mut total = 0.0;
        let mut counted = 0usize;
        for q in data.query_bounds.windows(2) {
            let (rel, s) = (&data.relevance[q[0]..q[1]], &scores[q[0]..q[1]]);
            match self {
                RankMetric::PairwiseAccuracy => {
                    let (ok, n) = pairwise(s, rel);
                    total += ok as f64;
                    counted += n;
                }
                RankMetric::Mrr | RankMetric::Ndcg(_) => {
                    let value = match self {
                        RankMetric::Ndcg(k) => ndcg(s, rel, k),
                        _ => reciprocal_rank(s, rel),
                    };
                    if let Some(v) = value {
                        total += v;
                        counted += 1;
                    }
                }
            }
        }
        if counted == 0 {
            f64::NAN
        } else {
            total / counted as f64
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

fn reciprocal_rank(scores: &[f32], rel: &[u8]) -> Option<f64> {
    let first = ranking(scores).into_iter().position(|d| rel[d] > 0)?;
    Some(1.0 / (first + 1) as f64)
}

fn dcg(grades: impl Iterator<Item = u8>, k: usize) -> f64 {
    grades
        .take(k)
        .enumerate()
        .map(|(i, g)| (2f64.powi(i32::from(g)) - 1.0) / ((i + 2) as f64).log2())
        .sum()
}

fn ndcg(scores: &[f32], rel: &[u8], k: Option<usize>) -> Option<f64> {
    let k = k.unwrap_or(rel.len());
    let mut ideal = rel.to_vec();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let best = dcg(ideal.into_iter(), k);
    (best > 0.0).then(|| dcg(ranking(scores).into_iter().map(|d| rel[d]), k) / best)
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
            RankMetric::Mrr,
            RankMetric::Ndcg(None),
            RankMetric::Ndcg(Some(2)),
        ] {
            assert!((m.compute(&good, &d) - 1.0).abs() < 1e-12, "{m:?}");
        }
        assert_eq!(RankMetric::PairwiseAccuracy.compute(&bad, &d), 0.0);
        assert!((RankMetric::Mrr.compute(&bad, &d) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn ndcg_matches_a_hand_computation() {
        // Grades in ranked order [0, 2, 1]: DCG = 3/log2(3) + 1/2, IDCG = 3 + 1/log2(3).
        let d = data(vec![0, 2, 1], vec![0, 3]);
        let scores = [3.0f32, 2.0, 1.0];
        let expected = (3.0 / 3f64.log2() + 0.5) / (3.0 + 1.0 / 3f64.log2());
        assert!((RankMetric::Ndcg(None).compute(&scores, &d) - expected).abs() < 1e-12);
        // At 1: DCG = 0.
        assert_eq!(RankMetric::Ndcg(Some(1)).compute(&scores, &d), 0.0);
    }

    #[test]
    fn undefined_queries_are_left_out() {
        let d = data(vec![0, 0, 1, 0], vec![0, 2, 4]);
        assert_eq!(RankMetric::Mrr.compute(&[1.0, 2.0, 1.0, 0.0], &d), 1.0);
        assert!(RankMetric::Mrr
            .compute(&[1.0, 2.0], &data(vec![0, 0], vec![0, 2]))
            .is_nan());
    }

    #[test]
    fn metric_names_parse_or_name_the_place() {
        assert_eq!(
            RankMetric::parse("ndcg@10", "m").unwrap(),
            RankMetric::Ndcg(Some(10))
        );
        let err = RankMetric::parse("ndcg@0", "learner.listeners[0].metrics").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("learner.listeners[0].metrics: unknown metric \"ndcg@0\""));
    }
}
