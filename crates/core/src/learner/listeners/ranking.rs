use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::best::{BestTracker, Direction, ValidationSchedule};
use super::{Listener, ListenerCall, ListenerView, RankMetric};
use crate::data::{LtrDataset, Reranking, ScoreInput, TextEncoding, Truncation};
use crate::learner::{Observer, TrainerContext};
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
    fn scores(&self, model: &dyn Model) -> Result<(Vec<f32>, Truncation)> {
        let _no_grad = tch::no_grad_guard();
        match self {
            RankingInput::Features(input) => Ok((
                Vec::<f32>::try_from(model.forward(input)?)?,
                Truncation::default(),
            )),
            RankingInput::Texts { set, encoding } => {
                let mut scores = Vec::with_capacity(set.pairs.len());
                let mut cut = Truncation::default();
                let rows: Vec<usize> = (0..set.pairs.len()).collect();
                for chunk in rows.chunks(set.batch_size) {
                    let (input, truncated) = set.encode(chunk, encoding)?;
                    scores.extend(Vec::<f32>::try_from(model.forward(&input)?)?);
                    cut = cut.plus(truncated);
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
    pub id: String,
    pub data: LtrDataset,
    pub input: RankingInput,
    pub metrics: Vec<(String, RankMetric)>,
    pub trackers: BTreeMap<String, BestTracker>,
    pub kept: Vec<String>,
    pub schedule: ValidationSchedule,
}

impl RankingValidation {
    /// The latest best epoch of the kept metrics: early stopping counts from it.
    fn best_epoch(&self) -> Option<u64> {
        self.kept
            .iter()
            .filter_map(|m| self.trackers.get(m)?.best.as_ref().map(|b| b.epoch))
            .max()
    }
}

impl Listener for RankingValidation {
    fn id(&self) -> &str {
        &self.id
    }

    fn call(
        &mut self,
        view: &ListenerView<'_>,
        model: &dyn Model,
        _: &mut TrainerContext,
        _: &mut dyn Observer,
    ) -> Result<ListenerCall> {
        let epoch = view.epoch;
        if self.schedule.stopped_before(self.best_epoch(), epoch) {
            return Ok(ListenerCall::stop());
        }
        let mut logged = BTreeMap::new();
        if self.schedule.due(epoch) {
            let (scores, truncated) = self.input.scores(model)?;
            if let RankingInput::Texts { .. } = self.input {
                logged.insert(
                    format!("{}/truncated_fraction", self.id),
                    truncated.cut as f64 / truncated.inputs.max(1) as f64,
                );
            }
            for (name, metric) in &self.metrics {
                let value = metric.compute(&scores, &self.data, self.input.judged());
                logged.insert(format!("{}/{name}", self.id), value);
                if self.schedule.tracks(epoch) {
                    if let Some(tracker) = self.trackers.get_mut(name) {
                        tracker.observe(epoch, value, model)?;
                    }
                }
            }
            self.schedule.write_info(&self.output())?;
        }
        Ok(ListenerCall {
            status: self.schedule.vote(self.best_epoch(), epoch),
            metrics: logged,
        })
    }

    fn output(&self) -> serde_json::Value {
        let bests: serde_json::Map<String, serde_json::Value> = self
            .trackers
            .iter()
            .filter_map(|(name, t)| Some((name.clone(), json!(t.best.as_ref()?))))
            .collect();
        serde_json::Value::Object(bests)
    }

    fn best_epochs(&self) -> Vec<u64> {
        self.trackers
            .values()
            .filter_map(|t| t.best.as_ref().map(|b| b.epoch))
            .collect()
    }

    fn state(&self) -> serde_json::Value {
        self.trackers
            .iter()
            .map(|(name, t)| (name.clone(), json!(t.best)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        for (name, tracker) in &mut self.trackers {
            tracker.restore(&state[name.as_str()])?;
        }
        Ok(())
    }

    fn mute_files(&mut self) {
        for tracker in self.trackers.values_mut() {
            tracker.mute();
        }
        self.schedule.info = None;
    }
}

/// Builds the trackers: every metric is tracked; kept ones save their best model.
pub(crate) fn ranking_trackers(
    metrics: &BTreeMap<String, bool>,
    bestpath: Option<&PathBuf>,
) -> BTreeMap<String, BestTracker> {
    metrics
        .iter()
        .map(|(name, keep)| {
            let path = bestpath
                .filter(|_| *keep)
                .map(|dir| dir.join(name).join("model.safetensors"));
            (name.clone(), BestTracker::new(Direction::Higher, path))
        })
        .collect()
}
