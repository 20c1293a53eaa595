//! The skeleton every validation listener shares: validate when due, track the best value of
//! each metric (saving the model of the kept ones), write `info.json`, and vote on early
//! stopping. What is measured is the [`Validator`]'s part.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::best::{BestTracker, ValidationSchedule};
use super::{Listener, ListenerCall, ListenerView};
use crate::learner::{Observer, TrainerContext, ValidationProgress};
use crate::models::Model;
use crate::Result;

/// One validation's measures.
#[derive(Debug, Default)]
pub(crate) struct Measures {
    /// Every metric to log, under its full name (`<listener id>/<metric>`).
    pub logged: BTreeMap<String, f64>,
    /// The values of the tracked metrics, by their names in the listener's configuration.
    pub tracked: Vec<(String, f64)>,
}

/// Told `(done, total)` units (see [`Validator::unit`]) as a validation scores.
pub(crate) type BatchProgress<'a> = dyn FnMut(u64, u64) -> Result<()> + 'a;

/// What a validation listener measures on the model at the end of an epoch.
pub(crate) trait Validator: Send {
    /// What its progress counts (`queries`, `pairs`): units that move within one batch, so
    /// that a long validation shows how it goes.
    fn unit(&self) -> &'static str;

    /// Scores the held-out data; `id` prefixes the logged metrics. `progress` is told how many
    /// units of how many are scored, as they are (after each forward).
    ///
    /// # Errors
    /// A data or libtorch error, or what `progress` returns.
    fn measure(
        &mut self,
        id: &str,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        progress: &mut BatchProgress<'_>,
    ) -> Result<Measures>;
}

/// The best value of each tracked metric; early stopping counts from the latest best of the
/// kept ones (those whose model is saved).
pub(crate) struct Bests {
    pub trackers: BTreeMap<String, BestTracker>,
    pub kept: Vec<String>,
}

impl Bests {
    fn best_epoch(&self) -> Option<u64> {
        self.kept
            .iter()
            .filter_map(|m| self.trackers.get(m)?.best.as_ref().map(|b| b.epoch))
            .max()
    }

    fn observe(&mut self, tracked: &[(String, f64)], epoch: u64, model: &dyn Model) -> Result<()> {
        for (name, value) in tracked {
            if let Some(tracker) = self.trackers.get_mut(name) {
                tracker.observe(epoch, *value, model)?;
            }
        }
        Ok(())
    }

    fn output(&self) -> Value {
        self.trackers
            .iter()
            .filter_map(|(name, t)| Some((name.clone(), json!(t.best.as_ref()?))))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

/// A validation listener: the schedule and bests around a [`Validator`].
pub(crate) struct ValidationListener<V> {
    pub id: String,
    pub validator: V,
    pub bests: Bests,
    pub schedule: ValidationSchedule,
}

impl<V: Validator> ValidationListener<V> {
    /// The validator's measures at the end of `epoch`, its start and progress told to
    /// `observer`.
    fn measures(
        &mut self,
        epoch: u64,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        observer: &mut dyn Observer,
    ) -> Result<Measures> {
        let listener = self.id.as_str();
        let unit = self.validator.unit();
        observer.on_validation(ValidationProgress::starting(epoch, listener))?;
        let mut progress = |done, total| {
            observer.on_validation(ValidationProgress {
                epoch,
                listener,
                done,
                total,
                unit,
            })
        };
        self.validator.measure(listener, model, ctx, &mut progress)
    }
}

impl<V: Validator> Listener for ValidationListener<V> {
    fn id(&self) -> &str {
        &self.id
    }

    fn call(
        &mut self,
        view: &ListenerView<'_>,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        observer: &mut dyn Observer,
    ) -> Result<ListenerCall> {
        let epoch = view.epoch;
        if self.schedule.stopped_before(self.bests.best_epoch(), epoch) {
            return Ok(ListenerCall::stop());
        }
        let mut logged = BTreeMap::new();
        if self.schedule.due(epoch) {
            let measures = self.measures(epoch, model, ctx, observer)?;
            if self.schedule.tracks(epoch) {
                self.bests.observe(&measures.tracked, epoch, model)?;
            }
            logged = measures.logged;
            self.schedule.write_info(&self.output())?;
        }
        Ok(ListenerCall {
            status: self.schedule.vote(self.bests.best_epoch(), epoch),
            metrics: logged,
        })
    }

    fn measure(
        &mut self,
        epoch: u64,
        model: &dyn Model,
        ctx: &mut TrainerContext,
        observer: &mut dyn Observer,
    ) -> Result<BTreeMap<String, f64>> {
        Ok(self.measures(epoch, model, ctx, observer)?.logged)
    }

    fn interval(&self) -> u64 {
        self.schedule.validation_interval
    }

    fn output(&self) -> Value {
        self.bests.output()
    }

    fn best_epochs(&self) -> Vec<u64> {
        self.bests
            .trackers
            .values()
            .filter_map(|t| t.best.as_ref().map(|b| b.epoch))
            .collect()
    }

    fn state(&self) -> Value {
        self.bests
            .trackers
            .iter()
            .map(|(name, t)| (name.clone(), json!(t.best)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    fn restore(&mut self, state: &Value) -> Result<()> {
        for (name, tracker) in &mut self.bests.trackers {
            tracker.restore(&state[name.as_str()])?;
        }
        Ok(())
    }

    fn mute_files(&mut self) {
        for tracker in self.bests.trackers.values_mut() {
            tracker.mute();
        }
        self.schedule.info = None;
    }
}
