use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::json;
use xpm_torch_core::data::JsData;
use xpm_torch_core::learner::{EpochReport, JsListenerReply, ListenerView, Observer, StepProgress};
use xpm_torch_core::{Error, Result};

/// A JS callback receiving event JSON; weak, so a pending call never keeps Node alive.
pub type EventCallback = ThreadsafeFunction<String, (), String, Status, false, true>;

const STEP_EVENT_INTERVAL: Duration = Duration::from_millis(100);

/// Replies the training thread waits for, by id (see [`reply`]).
static PENDING: LazyLock<Mutex<HashMap<u32, Sender<String>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
static NEXT_REPLY: AtomicU32 = AtomicU32::new(1);

/// Delivers the JavaScript side's answer to a request the training thread is waiting on.
#[napi]
pub fn reply(reply_id: u32, reply_json: String) -> bool {
    let sender = PENDING.lock().ok().and_then(|mut p| p.remove(&reply_id));
    sender.is_some_and(|s| s.send(reply_json).is_ok())
}

/// The JavaScript side of a run: events out, requests answered through [`reply`]. Shared with
/// the threads that prepare batches, so samplers written in TypeScript can ask for records.
struct JsBridge {
    callback: Option<EventCallback>,
}

impl JsBridge {
    fn send(&self, event: serde_json::Value) {
        if let Some(cb) = &self.callback {
            cb.call(event.to_string(), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// Sends `event`, waits for the answer and unwraps `{ok: true, reply}` / `{ok: false, message}`.
    fn ask(&self, event: serde_json::Value, what: &str) -> Result<serde_json::Value> {
        let text = self.request(event)?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| Error::Callback(format!("{what} answered badly: {e}")))?;
        if value["ok"] != json!(true) {
            let message = value["message"].as_str().unwrap_or("failed");
            return Err(Error::Callback(format!("{what}: {message}")));
        }
        Ok(value["reply"].clone())
    }

    /// Sends `event` with a reply id and blocks until JavaScript answers through [`reply`].
    fn request(&self, mut event: serde_json::Value) -> Result<String> {
        let Some(cb) = &self.callback else {
            return Err(Error::Callback(
                "no JavaScript event handler was given to learn()".into(),
            ));
        };
        let (tx, rx) = channel();
        let id = NEXT_REPLY.fetch_add(1, Ordering::Relaxed);
        PENDING
            .lock()
            .map_err(|_| Error::Callback("the reply table is poisoned".into()))?
            .insert(id, tx);
        event["replyId"] = json!(id);
        let status = cb.call(event.to_string(), ThreadsafeFunctionCallMode::Blocking);
        if status != Status::Ok {
            PENDING.lock().ok().map(|mut p| p.remove(&id));
            return Err(Error::Callback(format!(
                "cannot call into JavaScript ({status})"
            )));
        }
        rx.recv()
            .map_err(|_| Error::Callback("JavaScript never answered".into()))
    }
}

impl JsData for JsBridge {
    fn request(&self, request: serde_json::Value, what: &str) -> Result<serde_json::Value> {
        self.ask(json!({ "kind": "data", "request": request }), what)
    }
}

/// Forwards the loop's reports to JavaScript (every epoch; steps at most every 100 ms) and runs
/// the listeners, hooks and samplers written in JavaScript, waiting for their answers.
pub struct JsObserver {
    bridge: Arc<JsBridge>,
    last_step_event: Option<Instant>,
}

impl JsObserver {
    pub fn new(callback: Option<EventCallback>) -> Self {
        JsObserver {
            bridge: Arc::new(JsBridge { callback }),
            last_step_event: None,
        }
    }

    fn step_event_due(&self) -> bool {
        self.last_step_event
            .is_none_or(|t| t.elapsed() >= STEP_EVENT_INTERVAL)
    }

    fn send(&self, event: serde_json::Value) {
        self.bridge.send(event);
    }

    fn ask(&self, event: serde_json::Value, what: &str) -> Result<serde_json::Value> {
        self.bridge.ask(event, what)
    }
}

impl Observer for JsObserver {
    fn wants_running_loss(&mut self) -> bool {
        self.bridge.callback.is_some() && self.step_event_due()
    }

    fn on_step(&mut self, progress: StepProgress) -> Result<()> {
        self.on_step_with_loss(progress, None)
    }

    fn on_step_with_loss(
        &mut self,
        progress: StepProgress,
        running_loss: Option<f64>,
    ) -> Result<()> {
        if self.step_event_due() || progress.step == progress.total_steps {
            self.last_step_event = Some(Instant::now());
            let mut event = json!({ "kind": "step", "progress": progress });
            if let Some(loss) = running_loss.filter(|l| l.is_finite()) {
                event["progress"]["runningLoss"] = json!(loss);
            }
            self.send(event);
        }
        Ok(())
    }

    fn on_epoch(&mut self, report: &EpochReport) -> Result<()> {
        self.send(json!({ "kind": "epoch", "report": report }));
        Ok(())
    }

    fn js_data(&self) -> Option<Arc<dyn JsData>> {
        self.bridge
            .callback
            .is_some()
            .then(|| self.bridge.clone() as Arc<dyn JsData>)
    }

    fn warning(&mut self, message: &str) {
        self.send(json!({ "kind": "warning", "message": message }));
    }

    fn js_listener(&mut self, id: &str, view: &ListenerView<'_>) -> Result<JsListenerReply> {
        let what = format!("listener {id:?}");
        let reply = self.ask(
            json!({ "kind": "listener", "id": id, "state": view }),
            &what,
        )?;
        serde_json::from_value(reply)
            .map_err(|e| Error::Callback(format!("{what} answered badly: {e}")))
    }

    fn js_hook(&mut self, key: &str, phase: &str, progress: StepProgress) -> Result<()> {
        let what = format!("hook {key:?} ({phase})");
        self.ask(
            json!({ "kind": "hook", "key": key, "phase": phase, "progress": progress }),
            &what,
        )
        .map(|_| ())
    }
}
