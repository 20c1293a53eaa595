//! `RankingValidationListener`: ranking metrics of held-out queries, from their features or
//! by re-ranking a run's candidates; the **highest** is best.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use tch::Tensor;

use super::best::{BestTracker, Direction};
use super::validation::{BatchProgress, Bests, Measures, Validator};
use super::RankMetric;
use crate::data::{LtrDataset, Reranking, ScoreInput, TextEncoding, Truncation};
use crate::learner::TrainerContext;
use crate::models::Model;
use crate::Result;

/// Rows scored per forward when the features are scored: a validation of many queries reports
/// its progress as it goes, and no forward holds the activations of the whole set at once.
const FEATURE_ROWS: usize = 8192;

/// What the validation scores.
pub(crate) enum RankingInput {
    /// Every document's features (`documents × features`), scored a group of queries at a time.
    Features(Tensor),
    /// A run's candidates, read, encoded and scored batch by batch.
    Texts {
        set: Arc<Reranking>,
        encoding: TextEncoding,
    },
}

/// The queries of `bounds` (query `q` owns rows `bounds[q]..bounds[q + 1]`) in consecutive
/// groups of at most `rows` rows, a larger query alone: the query each group ends before.
fn query_groups(bounds: &[usize], rows: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut start = 0;
    for q in 1..bounds.len() {
        let past = bounds
            .get(q + 1)
            .is_none_or(|&end| end - bounds[start] > rows);
        if past {
            ends.push(q);
            start = q;
        }
    }
    ends
}

/// The score of every row of `features`, a group of queries of at most `rows` rows per
/// forward; `progress` is told the queries scored after each.
fn score_features(
    model: &dyn Model,
    features: &Tensor,
    bounds: &[usize],
    rows: usize,
    progress: &mut BatchProgress<'_>,
) -> Result<Vec<f32>> {
    let queries = bounds.len().saturating_sub(1) as u64;
    let mut scores = Vec::with_capacity(bounds.last().copied().unwrap_or(0));
    let mut first = 0;
    for end in query_groups(bounds, rows) {
        let (from, to) = (bounds[first], bounds[end]);
        if to > from {
            let part = features.f_narrow(0, from as i64, (to - from) as i64)?;
            scores.extend(Vec::<f32>::try_from(
                model.forward(&ScoreInput::Features(part))?,
            )?);
        }
        progress(end as u64, queries)?;
        first = end;
    }
    Ok(scores)
}

impl RankingInput {
    /// What [`RankingInput::scores`] reports: queries scored, or query-document pairs.
    fn unit(&self) -> &'static str {
        match self {
            RankingInput::Features(_) => "queries",
            RankingInput::Texts { .. } => "pairs",
        }
    }

    /// The score of every document of `data`, and how many inputs were cut by truncation.
    fn scores(
        &self,
        model: &dyn Model,
        data: &LtrDataset,
        progress: &mut BatchProgress<'_>,
    ) -> Result<(Vec<f32>, Truncation)> {
        let _no_grad = tch::no_grad_guard();
        match self {
            RankingInput::Features(features) => {
                let scores =
                    score_features(model, features, &data.query_bounds, FEATURE_ROWS, progress)?;
                Ok((scores, Truncation::default()))
            }
            RankingInput::Texts { set, encoding } => {
                let mut scores = Vec::with_capacity(set.pairs.len());
                let mut cut = Truncation::default();
                let rows: Vec<usize> = (0..set.pairs.len()).collect();
                let total = rows.len() as u64;
                for chunk in rows.chunks(set.batch_size) {
                    let (input, truncated) = set.encode(chunk, encoding)?;
                    scores.extend(Vec::<f32>::try_from(model.forward(&input)?)?);
                    cut = cut.plus(truncated);
                    progress(scores.len() as u64, total)?;
                }
                Ok((scores, cut))
            }
        }
    }

    /// The grades of all judged documents per query, when beyond those scored.
    fn judged(&self) -> Option<&[Vec<u8>]> {
        match self {
            RankingInput::Features(_) => None,
            RankingInput::Texts { set, .. } => Some(&set.judged),
        }
    }
}

/// Ranking metrics on held-out queries; keeps the best model of each kept metric.
pub(crate) struct RankingValidation {
    pub data: LtrDataset,
    pub input: RankingInput,
    pub metrics: Vec<(String, RankMetric)>,
}

impl Validator for RankingValidation {
    fn unit(&self) -> &'static str {
        self.input.unit()
    }

    fn measure(
        &mut self,
        id: &str,
        model: &dyn Model,
        _: &mut TrainerContext,
        progress: &mut BatchProgress<'_>,
    ) -> Result<Measures> {
        let (scores, truncated) = self.input.scores(model, &self.data, progress)?;
        let mut measures = Measures::default();
        if let RankingInput::Texts { .. } = self.input {
            measures.logged.insert(
                format!("{id}/truncated_fraction"),
                truncated.cut as f64 / truncated.inputs.max(1) as f64,
            );
        }
        for (name, metric) in &self.metrics {
            let value = metric.compute(&scores, &self.data, self.input.judged());
            measures.logged.insert(format!("{id}/{name}"), value);
            measures.tracked.push((name.clone(), value));
        }
        Ok(measures)
    }
}

/// The bests: every metric is tracked; kept ones save their best model under `bestpath`.
pub(crate) fn ranking_bests(metrics: &BTreeMap<String, bool>, bestpath: Option<&PathBuf>) -> Bests {
    let trackers = metrics
        .iter()
        .map(|(name, keep)| {
            let path = bestpath
                .filter(|_| *keep)
                .map(|dir| dir.join(name).join("model.safetensors"));
            (name.clone(), BestTracker::new(Direction::Higher, path))
        })
        .collect();
    let kept = metrics
        .iter()
        .filter(|(_, keep)| **keep)
        .map(|(name, _)| name.clone())
        .collect();
    Bests { trackers, kept }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MlpScorerConfig;
    use crate::models::MlpScorer;
    use crate::rng::Rng;

    #[test]
    fn queries_are_grouped_up_to_a_row_count_a_larger_one_alone() {
        let bounds = [0, 3, 5, 7, 17, 18];
        assert_eq!(query_groups(&bounds, 4), vec![1, 3, 4, 5]);
        assert_eq!(query_groups(&bounds, 5), vec![2, 3, 4, 5]);
        assert_eq!(query_groups(&bounds, 1), vec![1, 2, 3, 4, 5]);
        assert_eq!(query_groups(&bounds, 100), vec![5]);
        assert_eq!(query_groups(&[0], 4), Vec::<usize>::new());
        assert_eq!(query_groups(&[0, 0, 2], 1), vec![1, 2]);
    }

    /// A validation of many queries in one forward showed nothing until it ended (#41): the
    /// features are scored a group of queries at a time, each group reported as it is scored,
    /// with the scores of one forward over them all.
    #[test]
    fn features_are_scored_and_reported_a_group_of_queries_at_a_time() {
        let bounds = vec![0, 3, 5, 7, 17, 18];
        let values: Vec<f32> = (0..18 * 2).map(|i| ((i * 7) % 11) as f32 / 5.0).collect();
        let features = Tensor::f_from_slice(&values)
            .unwrap()
            .f_view([18, 2])
            .unwrap();
        let config = MlpScorerConfig {
            input_dim: 2,
            hidden_dims: vec![4],
        };
        let model = MlpScorer::new(&config, &mut Rng::new(1)).unwrap();
        let _no_grad = tch::no_grad_guard();
        let whole = model
            .forward(&ScoreInput::Features(features.shallow_clone()))
            .unwrap();
        let whole = Vec::<f32>::try_from(whole).unwrap();
        let mut reported = Vec::new();
        let mut progress = |done, total| {
            reported.push((done, total));
            Ok(())
        };
        let scores = score_features(&model, &features, &bounds, 4, &mut progress).unwrap();
        assert_eq!(reported, vec![(1, 5), (3, 5), (4, 5), (5, 5)]);
        assert_eq!(scores.len(), 18);
        for (a, b) in scores.iter().zip(&whole) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }
}
