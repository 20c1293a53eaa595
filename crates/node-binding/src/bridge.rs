//! The JavaScript side of a run, seen from the training thread: a reporter for events nobody
//! waits on (steps, warnings), and foreign calls that wait for their answer (epochs,
//! listeners, hooks, samplers, datasets, dims providers). A foreign call is one napi
//! thread-safe call whose JavaScript function returns a Promise; the training thread blocks on
//! that Promise, so no reply table or id is needed.
use std::collections::HashMap;
use std::future::Future;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{Float32Array, FromNapiValue, Int32Array, Object, Promise, Status};
use napi::sys;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use serde_json::{json, Value};
use xpm_torch_core::data::{JsData, JsMessage, ScoreInput};
use xpm_torch_core::learner::{
    EpochReport, JsListenerReply, ListenerScorer, ListenerView, Observer, RunStart, StepProgress,
    ValidationProgress,
};
use xpm_torch_core::models::{features_input, text_input};
use xpm_torch_core::{Error, Result};

use crate::outcome;
use crate::thread::Deferred;

/// Fire-and-forget events as JSON (`start`, `step`, `validation`, `warning`); weak, so it never keeps Node alive.
pub type Reporter = ThreadsafeFunction<String, (), String, Status, false, true>;

/// Awaited calls into JavaScript: the function answers each with a Promise.
pub type Foreign =
    ThreadsafeFunction<ForeignCall, Promise<ForeignReply>, ForeignCall, Status, false, true>;

const STEP_EVENT_INTERVAL: Duration = Duration::from_millis(100);

/// A call from the training thread into JavaScript.
#[napi(object)]
pub struct ForeignCall {
    /// `epoch`, `listener`, `hook` or `data`.
    pub kind: String,
    /// The request as JSON.
    pub json: String,
    /// Float arrays handed over (records for a dims provider), by name.
    pub floats: Option<HashMap<String, Float32Array>>,
    /// Integer arrays handed over (token ids and lengths), by name.
    pub ints: Option<HashMap<String, Int32Array>>,
}

/// What JavaScript resolved a foreign call with: `{ failed }` when the user's code threw (the
/// exception stays on the JavaScript side, to be rethrown as it is), else JSON and arrays.
/// The typed arrays are copied on the JavaScript thread, so nothing JavaScript owns is read
/// from the training thread.
pub struct ForeignReply {
    failed: Option<String>,
    message: JsMessage,
}

fn copied<T: Copy, A: std::ops::Deref<Target = [T]>, U>(
    arrays: Option<HashMap<String, A>>,
    cast: impl Fn(T) -> U,
) -> std::collections::BTreeMap<String, Vec<U>> {
    arrays
        .unwrap_or_default()
        .into_iter()
        .map(|(name, array)| (name, array.iter().map(|&v| cast(v)).collect()))
        .collect()
}

impl FromNapiValue for ForeignReply {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        // SAFETY: called by napi on the JavaScript thread with a live value of `env`.
        let object = unsafe { Object::from_napi_value(env, value)? };
        let failed = object.get::<Option<String>>("failed")?.flatten();
        let json = match object.get::<Option<String>>("json")?.flatten() {
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                napi::Error::from_reason(format!("the reply's json is not JSON: {e}"))
            })?,
            None => Value::Null,
        };
        let floats = object.get::<Option<HashMap<String, Float32Array>>>("floats")?;
        let ints = object.get::<Option<HashMap<String, Int32Array>>>("ints")?;
        Ok(ForeignReply {
            failed,
            message: JsMessage {
                json,
                floats: copied(floats.flatten(), |v: f32| v),
                ints: copied(ints.flatten(), |v: i32| v),
            },
        })
    }
}

/// Rows a listener written in TypeScript asks the model being trained to score.
pub enum ScoreRows {
    /// `rows` feature vectors stored row after row.
    Features { values: Vec<f32>, rows: usize },
    /// (query, document) token-id pairs.
    TokenPairs {
        queries: Vec<Vec<i64>>,
        documents: Vec<Vec<i64>>,
    },
}

/// A scoring request and the Promise to settle with its outcome JSON.
pub struct ScoreJob {
    pub rows: ScoreRows,
    pub deferred: Deferred,
}

/// What wakes the training thread while it waits on JavaScript.
pub enum Signal {
    /// The Promise it waits on may have settled.
    Woken,
    /// A listener asks for scores meanwhile.
    Score(ScoreJob),
}

/// Where a run takes scoring requests: set while a TypeScript listener runs, empty otherwise.
pub type ScoreDoor = Arc<Mutex<Option<Sender<Signal>>>>;

struct SignalWaker(Sender<Signal>);

impl Wake for SignalWaker {
    fn wake(self: Arc<Self>) {
        // The receiver lives until the wait ends; a late wake has nobody to tell.
        let _ = self.0.send(Signal::Woken);
    }
}

/// Waits on the training thread for a future that JavaScript completes, serving the scoring
/// requests that arrive meanwhile (JavaScript awaits those before it settles the future, so
/// serving them here is what keeps the two threads from waiting on each other).
fn wait_serving<F: Future>(
    future: F,
    signals: &Receiver<Signal>,
    wake: Sender<Signal>,
    mut serve: impl FnMut(ScoreJob),
) -> F::Output {
    let waker = Waker::from(Arc::new(SignalWaker(wake)));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        // The waker holds a sender, so this only ends with a signal.
        if let Ok(Signal::Score(job)) = signals.recv() {
            serve(job);
        }
    }
}

/// Settles a scoring Promise with the outcome JSON of `scores`.
pub fn settle(deferred: Deferred, scores: Result<Vec<f32>>) {
    let text = outcome::to_json(scores.map(|s| json!(s)));
    deferred.resolve(Box::new(move |_env| Ok(text)));
}

fn score_input(rows: ScoreRows) -> Result<ScoreInput> {
    match rows {
        ScoreRows::Features { values, rows } => {
            let width = values.len().checked_div(rows).unwrap_or(0);
            features_input(&values, rows, width)
        }
        ScoreRows::TokenPairs { queries, documents } => text_input(&queries, &documents),
    }
}

/// Both ways to JavaScript; shared with the threads that prepare batches.
pub struct JsBridge {
    reporter: Option<Reporter>,
    foreign: Option<Foreign>,
    scoring: ScoreDoor,
}

impl JsBridge {
    fn report(&self, event: Value) {
        if let Some(reporter) = &self.reporter {
            reporter.call(event.to_string(), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    /// Calls into JavaScript and waits for the Promise it answers with.
    fn call(&self, kind: &str, request: JsMessage, what: &str) -> Result<JsMessage> {
        self.call_scoring(kind, request, what, None)
    }

    /// [`JsBridge::call`], scoring with `score` what JavaScript asks for until it answers.
    fn call_scoring(
        &self,
        kind: &str,
        request: JsMessage,
        what: &str,
        mut score: Option<&mut ListenerScorer<'_>>,
    ) -> Result<JsMessage> {
        let Some(foreign) = &self.foreign else {
            return Err(Error::Callback(format!(
                "{what} is written in JavaScript, but learn() was given no way to call it"
            )));
        };
        let call = ForeignCall {
            kind: kind.to_string(),
            json: request.json.to_string(),
            floats: (!request.floats.is_empty()).then(|| {
                request
                    .floats
                    .into_iter()
                    .map(|(k, v)| (k, Float32Array::new(v)))
                    .collect()
            }),
            ints: (!request.ints.is_empty()).then(|| {
                request
                    .ints
                    .into_iter()
                    .map(|(k, v)| (k, Int32Array::new(v)))
                    .collect()
            }),
        };
        let (signal, signals) = channel();
        if score.is_some() {
            // Open before the call: the listener may ask for scores before it first awaits.
            *lock(&self.scoring) = Some(signal.clone());
        }
        let result = self.call_waiting(foreign, call, what, &signals, signal, |job| {
            let scores = match score.as_mut() {
                Some(score) => score_input(job.rows).and_then(|input| score(&input)),
                None => Err(closed_door()),
            };
            settle(job.deferred, scores);
        });
        if score.is_some() {
            lock(&self.scoring).take();
            // Requests that came in as the listener ended.
            while let Ok(Signal::Score(job)) = signals.try_recv() {
                settle(job.deferred, Err(closed_door()));
            }
        }
        let reply = result?;
        match reply.failed {
            Some(message) => Err(Error::Callback(format!("{what}: {message}"))),
            None => Ok(reply.message),
        }
    }

    fn call_waiting(
        &self,
        foreign: &Foreign,
        call: ForeignCall,
        what: &str,
        signals: &Receiver<Signal>,
        signal: Sender<Signal>,
        serve: impl FnMut(ScoreJob),
    ) -> Result<ForeignReply> {
        let (tx, rx) = channel();
        let status = foreign.call_with_return_value(
            call,
            ThreadsafeFunctionCallMode::Blocking,
            move |promise, _env| {
                // The receiver waits until this runs; a send cannot fail before.
                let _ = tx.send(promise);
                Ok(())
            },
        );
        if status != Status::Ok {
            return Err(Error::Callback(format!(
                "{what}: cannot call into JavaScript ({status})"
            )));
        }
        let promise = rx
            .recv()
            .map_err(|_| Error::Callback(format!("{what}: JavaScript never answered")))?
            .map_err(|e| Error::Callback(format!("{what}: {}", e.reason)))?;
        wait_serving(promise, signals, signal, serve)
            .map_err(|e| Error::Callback(format!("{what}: {}", e.reason)))
    }
}

fn lock(door: &ScoreDoor) -> std::sync::MutexGuard<'_, Option<Sender<Signal>>> {
    // Nothing panics while holding it; a poisoned lock still holds a valid Option.
    door.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a scoring request came when no listener could serve it.
pub fn closed_door() -> Error {
    Error::Callback(
        "state.model.score() scores only while a TypeScript listener's call() runs: await it \
         there"
            .into(),
    )
}

/// Hands `rows` to the training thread of the run whose door this is; the Promise settles
/// with the outcome JSON of their scores.
pub fn request_scores(door: &ScoreDoor, rows: ScoreRows, deferred: Deferred) {
    let job = ScoreJob { rows, deferred };
    let refused = match lock(door).as_ref() {
        Some(sender) => sender.send(Signal::Score(job)).err().map(|e| match e.0 {
            Signal::Score(job) => job,
            Signal::Woken => unreachable!("only a score job was sent"),
        }),
        None => Some(job),
    };
    if let Some(job) = refused {
        settle(job.deferred, Err(closed_door()));
    }
}

impl JsData for JsBridge {
    fn request(&self, request: JsMessage, what: &str) -> Result<JsMessage> {
        self.call("data", request, what)
    }
}

/// Whether an event throttled to one per [`STEP_EVENT_INTERVAL`] may go, the last having gone
/// at `last`.
fn interval_passed(last: Option<Instant>) -> bool {
    last.is_none_or(|t| t.elapsed() >= STEP_EVENT_INTERVAL)
}

/// Forwards the loop's reports to JavaScript (every epoch, awaited; the start, and steps and
/// validation progress at most every 100 ms, not awaited) and runs the listeners, hooks and samplers written in JavaScript.
pub struct JsObserver {
    bridge: Arc<JsBridge>,
    last_step_event: Option<Instant>,
    last_validation_event: Option<Instant>,
}

impl JsObserver {
    pub fn new(reporter: Option<Reporter>, foreign: Option<Foreign>, scoring: ScoreDoor) -> Self {
        JsObserver {
            bridge: Arc::new(JsBridge {
                reporter,
                foreign,
                scoring,
            }),
            last_step_event: None,
            last_validation_event: None,
        }
    }

    fn step_event_due(&self) -> bool {
        interval_passed(self.last_step_event)
    }

    fn ask(&self, kind: &str, request: Value, what: &str) -> Result<Value> {
        self.bridge
            .call(kind, JsMessage::json(request), what)
            .map(|reply| reply.json)
    }
}

impl Observer for JsObserver {
    fn wants_running_loss(&mut self) -> bool {
        self.bridge.reporter.is_some() && self.step_event_due()
    }

    fn on_step(&mut self, progress: StepProgress) -> Result<()> {
        self.on_step_with_loss(progress, None)
    }

    fn on_start(&mut self, start: &RunStart) -> Result<()> {
        self.bridge
            .report(json!({ "kind": "start", "start": start }));
        Ok(())
    }

    /// A listener's first and last reports always go; those between at most every 100 ms.
    fn on_validation(&mut self, progress: ValidationProgress<'_>) -> Result<()> {
        let edge = progress.done == 0 || progress.done == progress.total;
        if edge || interval_passed(self.last_validation_event) {
            self.last_validation_event = Some(Instant::now());
            self.bridge
                .report(json!({ "kind": "validation", "progress": progress }));
        }
        Ok(())
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
            self.bridge.report(event);
        }
        Ok(())
    }

    /// Awaited, so that an exception in `onEpoch` stops the run before the next epoch.
    fn on_epoch(&mut self, report: &EpochReport) -> Result<()> {
        if self.bridge.foreign.is_none() {
            return Ok(());
        }
        self.ask("epoch", json!(report), "onEpoch").map(|_| ())
    }

    fn js_data(&self) -> Option<Arc<dyn JsData>> {
        self.bridge
            .foreign
            .is_some()
            .then(|| self.bridge.clone() as Arc<dyn JsData>)
    }

    fn warning(&mut self, message: &str) {
        self.bridge
            .report(json!({ "kind": "warning", "message": message }));
    }

    fn js_listener(
        &mut self,
        key: &str,
        view: &ListenerView<'_>,
        score: &mut ListenerScorer<'_>,
    ) -> Result<JsListenerReply> {
        let what = format!("listener {key:?}");
        let request = JsMessage::json(json!({ "key": key, "state": view }));
        let reply = self
            .bridge
            .call_scoring("listener", request, &what, Some(score))?
            .json;
        serde_json::from_value(reply)
            .map_err(|e| Error::Callback(format!("{what} answered badly: {e}")))
    }

    fn js_hook(&mut self, key: &str, phase: &str, progress: StepProgress) -> Result<()> {
        let what = format!("hook {key:?} ({phase})");
        self.ask(
            "hook",
            json!({ "key": key, "phase": phase, "progress": progress }),
            &what,
        )
        .map(|_| ())
    }
}
