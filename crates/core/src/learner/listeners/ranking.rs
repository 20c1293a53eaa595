//! `RankingValidationListener`: ranking metrics of held-out queries, from their features or
//! by re-ranking a run's candidates; the **highest** is best.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::best::{BestTracker, Direction};
use super::validation::{BatchProgress, Bests, Measures, Validator};
use super::RankMetric;
use crate::data::{LtrDataset, Reranking, ScoreInput, TextEncoding, Truncation};
use crate::learner::TrainerContext;
use crate::models::Model;
use crate::Result;

/// What the validation scores.
pub(crate) enum RankingInput {
    /// Every document's features, scored in one forward.
    Features(ScoreInput),
    /// A run's candidates, read, encoded and scored batch by batch.
    Texts {
        set: Arc<Reranking>,
        encoding: TextEncoding,
    },
}

impl RankingInput {
    /// The score of every document, and how many inputs were cut by truncation.
    fn scores(
        &self,
        model: &dyn Model,
        progress: &mut BatchProgress<'_>,
    ) -> Result<(Vec<f32>, Truncation)> {
        let _no_grad = tch::no_grad_guard();
        match self {
            RankingInput::Features(input) => {
                let scores = Vec::<f32>::try_from(model.forward(input)?)?;
                progress(1, 1)?;
                Ok((scores, Truncation::default()))
            }
            RankingInput::Texts { set, encoding } => {
                let mut scores = Vec::with_capacity(set.pairs.len());
                let mut cut = Truncation::default();
                let rows: Vec<usize> = (0..set.pairs.len()).collect();
                let batches = rows.chunks(set.batch_size).len() as u64;
                for (i, chunk) in rows.chunks(set.batch_size).enumerate() {
                    let (input, truncated) = set.encode(chunk, encoding)?;
                    scores.extend(Vec::<f32>::try_from(model.forward(&input)?)?);
                    cut = cut.plus(truncated);
                    progress(i as u64 + 1, batches)?;
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
    fn measure(
        &mut self,
        id: &str,
        model: &dyn Model,
        _: &mut TrainerContext,
        progress: &mut BatchProgress<'_>,
    ) -> Result<Measures> {
        let (scores, truncated) = self.input.scores(model, progress)?;
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
