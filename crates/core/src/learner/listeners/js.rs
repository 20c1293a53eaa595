//! [`JsListener`]: a listener written in JavaScript, run by the observer on the JavaScript side,
//! which may score rows with the model being trained.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Listener, ListenerCall, ListenerView};
use crate::data::ScoreInput;
use crate::learner::{Observer, TrainerContext, ValidationProgress};
use crate::models::{score_rows, Model};
use crate::Result;

/// Rows scored at once when a listener written in JavaScript scores with the model.
const SCORE_BATCH_SIZE: usize = 256;

/// A listener written in JavaScript: the observer runs it on the JavaScript side and returns
/// its vote.
pub(crate) struct JsListener {
    /// How the JavaScript side finds it.
    pub key: String,
    /// Its `id` parameter: its metrics are logged under it.
    pub id: String,
    pub last_output: Value,
}

impl Listener for JsListener {
    fn id(&self) -> &str {
        &self.id
    }

    fn call(
        &mut self,
        view: &ListenerView<'_>,
        model: &dyn Model,
        _: &mut TrainerContext,
        observer: &mut dyn Observer,
    ) -> Result<ListenerCall> {
        let device = model
            .named_parameters()
            .first()
            .map_or(tch::Device::Cpu, |p| p.tensor.device());
        observer.on_validation(ValidationProgress::starting(view.epoch, &self.id))?;
        let mut score = |input: &ScoreInput| score_rows(model, device, input, SCORE_BATCH_SIZE);
        let reply = observer.js_listener(&self.key, view, &mut score)?;
        self.last_output = reply.output;
        Ok(ListenerCall {
            status: reply.status,
            metrics: reply.metrics.unwrap_or_else(BTreeMap::new),
        })
    }

    fn output(&self) -> Value {
        self.last_output.clone()
    }
}
