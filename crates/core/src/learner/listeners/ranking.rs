use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use tch::Tensor;

use super::best::{early_stop_vote, write_json_atomic, BestTracker, Direction};
use super::{Listener, ListenerCall, ListenerStatus, ListenerView, RankMetric};
use crate::data::LtrDataset;
use crate::learner::{Observer, TrainerContext};
use crate::models::Model;
use crate::Result;

/// Ranking metrics on held-out queries; keeps the best model of each kept metric.
pub(crate) struct RankingValidation {
    pub id: String,
    pub data: LtrDataset,
    pub features: Tensor,
    pub metrics: Vec<(String, RankMetric)>,
    pub trackers: BTreeMap<String, BestTracker>,
    pub kept: Vec<String>,
    pub warmup: i64,
    pub validation_interval: u64,
    pub early_stop: u64,
    pub info: Option<PathBuf>,
}

impl RankingValidation {
    /// The vote of the kept metrics: the latest of their best epochs counts.
    fn vote(&self, epoch: u64) -> ListenerStatus {
        let best = self
            .kept
            .iter()
            .filter_map(|m| self.trackers.get(m)?.best.as_ref().map(|b| b.epoch))
            .max();
        early_stop_vote(self.early_stop, best, epoch)
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
        if self.vote(epoch.saturating_sub(1)) == ListenerStatus::Stop {
            return Ok(ListenerCall {
                status: ListenerStatus::Stop,
                metrics: BTreeMap::new(),
            });
        }
        let mut logged = BTreeMap::new();
        if epoch.is_multiple_of(self.validation_interval) {
            let scores = {
                let _no_grad = tch::no_grad_guard();
                Vec::<f32>::try_from(model.forward(&self.features)?)?
            };
            for (name, metric) in &self.metrics {
                let value = metric.compute(&scores, &self.data);
                logged.insert(format!("{}/{name}", self.id), value);
                if epoch as i64 >= self.warmup {
                    if let Some(tracker) = self.trackers.get_mut(name) {
                        tracker.observe(epoch, value, model)?;
                    }
                }
            }
            if let Some(info) = &self.info {
                write_json_atomic(info, &self.output())?;
            }
        }
        Ok(ListenerCall {
            status: self.vote(epoch),
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
