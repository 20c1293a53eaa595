use std::time::{Duration, Instant};

use napi::bindgen_prelude::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde_json::json;
use xpm_torch_core::learner::{EpochReport, Observer, StepProgress};
use xpm_torch_core::Result;

/// A JS callback receiving event JSON; weak, so a pending call never keeps Node alive.
pub type EventCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

const STEP_EVENT_INTERVAL: Duration = Duration::from_millis(100);

/// Forwards the loop's reports to JavaScript: every epoch, and steps at most every 100 ms.
pub struct JsObserver {
    callback: Option<EventCallback>,
    last_step_event: Option<Instant>,
}

impl JsObserver {
    pub fn new(callback: Option<EventCallback>) -> Self {
        JsObserver {
            callback,
            last_step_event: None,
        }
    }

    fn send(&self, event: serde_json::Value) {
        if let Some(cb) = &self.callback {
            cb.call(event.to_string(), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl Observer for JsObserver {
    fn on_step(&mut self, progress: StepProgress) -> Result<()> {
        let due = self
            .last_step_event
            .is_none_or(|t| t.elapsed() >= STEP_EVENT_INTERVAL);
        if due || progress.step == progress.total_steps {
            self.last_step_event = Some(Instant::now());
            self.send(json!({ "kind": "step", "progress": progress }));
        }
        Ok(())
    }

    fn on_epoch(&mut self, report: &EpochReport) -> Result<()> {
        self.send(json!({ "kind": "epoch", "report": report }));
        Ok(())
    }
}
