//! `RankingValidationListener`: ranking metrics of held-out queries, from their features or
//! by re-ranking a run's candidates; the **highest** is best.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use tch::Tensor;

use super::best::{BestTracker, Direction};
use super::validation::{BatchProgress, Bests, Measures, Validator};
use super::RankMetric;
use crate::data::{LtrDataset, Reranking, ScoreInput, TextEncoding, Truncation};
use crate::learner::TrainerContext;
use crate::models::{Model, ScoringScope};
use crate::Result;

/// Rows scored per forward when the features are scored: a validation of many queries reports
/// its progress as it goes, and no forward holds the activations of the whole set at once.
const FEATURE_ROWS: usize = 8192;

/// What the validation scores.
pub(crate) enum RankingInput {
    /// Every document's features (`documents × features`), scored a group of queries at a time.
    Features(Tensor),
    /// A run's candidates, read, encoded and scored batch by batch, longest first.
    Texts {
        set: Arc<Reranking>,
        encoding: TextEncoding,
        /// The candidates longest first, counted at the first validation.
        order: OnceLock<Vec<usize>>,
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
    /// A run's candidates to re-rank, encoded by `encoding`.
    pub(crate) fn texts(set: Arc<Reranking>, encoding: TextEncoding) -> Self {
        RankingInput::Texts {
            set,
            encoding,
            order: OnceLock::new(),
        }
    }

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
        let _scope = ScoringScope::enter(model)?;
        match self {
            RankingInput::Features(features) => {
                let scores =
                    score_features(model, features, &data.query_bounds, FEATURE_ROWS, progress)?;
                Ok((scores, Truncation::default()))
            }
            RankingInput::Texts {
                set,
                encoding,
                order,
            } => {
                let order = match order.get() {
                    Some(order) => order,
                    None => {
                        let counted = set.longest_first(encoding)?;
                        order.get_or_init(|| counted)
                    }
                };
                let mut scores = vec![0f32; set.pairs.len()];
                let mut cut = Truncation::default();
                let (mut done, total) = (0, order.len() as u64);
                for chunk in order.chunks(set.batch_size.max(1)) {
                    let (input, truncated) = set.encode(chunk, encoding)?;
                    let batch = Vec::<f32>::try_from(model.forward(&input)?)?;
                    for (&row, score) in chunk.iter().zip(batch) {
                        scores[row] = score;
                    }
                    cut = cut.plus(truncated);
                    done += chunk.len() as u64;
                    progress(done, total)?;
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
    use crate::runtime::InferenceMode;

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

    /// A model that records the shape of every batch it scores, and whether it scored it in
    /// inference mode.
    struct Recording {
        inner: Box<dyn Model>,
        shapes: std::sync::Mutex<Vec<(i64, i64)>>,
        inference: std::sync::Mutex<Vec<bool>>,
    }

    impl Model for Recording {
        fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
            if let ScoreInput::Encoded(crate::data::EncodedTexts::Pairs(rows)) = input {
                let size = rows.ids.size();
                self.shapes.lock().unwrap().push((size[0], size[1]));
            }
            self.inference
                .lock()
                .unwrap()
                .push(InferenceMode::is_enabled());
            self.inner.forward(input)
        }

        fn named_parameters(&self) -> Vec<crate::models::NamedParameter> {
            self.inner.named_parameters()
        }

        fn share(&mut self, target: &str, source: &str) -> Result<()> {
            self.inner.share(target, source)
        }
    }

    /// Re-ranking validation scored candidates in the run's order, each batch padded to its
    /// longest pair (#39): it now scores them longest first and puts the scores back.
    #[test]
    fn reranked_candidates_are_scored_longest_first_and_reported_in_the_runs_order() {
        use crate::data::msmarco_fixture::{fixture, reranking_config};
        let config: crate::config::AnyModule = serde_json::from_str(&format!(
            r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","max_length":64,
                "encoder":{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-bert","path":"{}"}}}}"#,
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hf/bert")
        ))
        .unwrap();
        let mut inner = crate::models::build(&config, &mut Rng::new(1), "model").unwrap();
        inner.set_training(false);
        let model = Recording {
            inner,
            shapes: Default::default(),
            inference: Default::default(),
        };
        let encoding = crate::models::hf::text_encoding(&config, "m")
            .unwrap()
            .unwrap();
        let mut set =
            Reranking::open(&reranking_config(fixture("run.dev.trec"), None), "d").unwrap();
        set.batch_size = 4;
        let set = Arc::new(set);
        let input = RankingInput::texts(set.clone(), encoding.clone());
        let mut reported = Vec::new();
        let mut progress = |done, total| {
            reported.push((done, total));
            Ok(())
        };
        let (scores, cut) = input.scores(&model, &set.data, &mut progress).unwrap();
        let rows = set.pairs.len();
        assert_eq!(cut.inputs, rows as u64);
        assert_eq!(reported.last(), Some(&(rows as u64, rows as u64)));
        let shapes = model.shapes.lock().unwrap().clone();
        assert_eq!(shapes.iter().map(|s| s.0).sum::<i64>(), rows as i64);
        assert!(
            shapes.windows(2).all(|w| w[0].1 >= w[1].1),
            "batches longest first: {shapes:?}"
        );
        // Nothing learns from validation scores: no autograd bookkeeping (#39).
        assert!(model.inference.lock().unwrap().iter().all(|&on| on));
        assert!(!InferenceMode::is_enabled());
        let _no_grad = tch::no_grad_guard();
        for (row, score) in scores.iter().enumerate() {
            let (one, _) = set.encode(&[row], &encoding).unwrap();
            let alone = Vec::<f32>::try_from(model.inner.forward(&one).unwrap()).unwrap()[0];
            assert!(
                (score - alone).abs() < 1e-5,
                "row {row}: {score} vs {alone}"
            );
        }
    }
}
