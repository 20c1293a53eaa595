use std::collections::BTreeMap;

use serde_json::Value;

use super::{Listener, ListenerCall, ListenerView};
use crate::learner::{Observer, TrainerContext};
use crate::models::Model;
use crate::Result;

/// A listener written in JavaScript: the observer runs it on the JavaScript side and returns
/// its vote.
pub(crate) struct JsListener {
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
        _: &dyn Model,
        _: &mut TrainerContext,
        observer: &mut dyn Observer,
    ) -> Result<ListenerCall> {
        let reply = observer.js_listener(&self.id, view)?;
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
