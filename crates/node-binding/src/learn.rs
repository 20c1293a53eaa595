//! `learn()` across the binding: a training run on a thread of its own, its cancel handle, and
//! the scoring a run's TypeScript listeners ask of its model.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::{Env, Float32Array, Object};
use napi_derive::napi;
use xpm_torch_core::{config, learner};

use crate::bridge::{request_scores, Foreign, JsObserver, Reporter, ScoreDoor, ScoreRows};
use crate::thread::{spawn_job, Deferred};

/// One training run: started by [`learn`], stopped by [`LearnRun::cancel`].
#[napi]
pub struct LearnRun {
    cancel: Arc<AtomicBool>,
    scoring: ScoreDoor,
}

#[napi]
impl LearnRun {
    /// A run not started yet; hand it to `learn`.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        LearnRun {
            cancel: Arc::new(AtomicBool::new(false)),
            scoring: ScoreDoor::default(),
        }
    }

    /// Asks the run to stop after its current step; it writes a checkpoint first.
    #[napi]
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// Trains the Learner described by `configJson` on a dedicated thread, as `run`. Resolves to
/// the outcome JSON (`{ok, output | error}`). `reporter` receives step and warning events as
/// JSON, unanswered; `foreign` runs epochs, listeners, hooks and data requests and answers
/// each with a Promise the training thread waits on.
#[napi(ts_return_type = "Promise<string>")]
pub fn learn<'env>(
    env: &'env Env,
    config_json: String,
    run: &LearnRun,
    #[napi(ts_arg_type = "((event: string) => void) | undefined | null")] reporter: Option<
        Reporter,
    >,
    #[napi(
        ts_arg_type = "((call: ForeignCall) => Promise<{ failed?: string; json?: string; floats?: Record<string, Float32Array>; ints?: Record<string, Int32Array> }>) | undefined | null"
    )]
    foreign: Option<Foreign>,
) -> napi::Result<Object<'env>> {
    let cancel = run.cancel.clone();
    let scoring = run.scoring.clone();
    spawn_job(env, "xpm-torch-learn", move || {
        let result = config::parse_learner(&config_json).and_then(|config| {
            let mut observer = JsObserver::new(reporter, foreign, scoring);
            learner::learn(&config, &mut observer, &cancel)
        });
        serde_json::to_value(result?).map_err(|e| xpm_torch_core::Error::Panic(e.to_string()))
    })
}

/// Rows to score with the model being trained: feature vectors (`features`, row after row, and
/// `rows`) or (query, document) token-id pairs (`tokenPairsJson`: `[queries, documents]`).
#[napi(object)]
pub struct ScoreRequest {
    pub features: Option<Float32Array>,
    pub rows: Option<u32>,
    pub token_pairs_json: Option<String>,
}

/// Scores rows with the model `run` is training, on its training thread, while one of its
/// TypeScript listeners runs (see `state.model.score`). Resolves to the outcome JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn score_during_run<'env>(
    env: &'env Env,
    run: &LearnRun,
    request: ScoreRequest,
) -> napi::Result<Object<'env>> {
    let (deferred, promise): (Deferred, Object<'env>) = env.create_deferred()?;
    let rows = match (request.features, request.token_pairs_json) {
        (Some(values), None) => Ok(ScoreRows::Features {
            values: values.to_vec(),
            rows: request.rows.unwrap_or(0) as usize,
        }),
        (None, Some(text)) => serde_json::from_str(&text)
            .map(|(queries, documents)| ScoreRows::TokenPairs { queries, documents })
            .map_err(|e| xpm_torch_core::Error::config("records", e.to_string())),
        _ => Err(xpm_torch_core::Error::config(
            "records",
            "give either feature vectors or token-id pairs",
        )),
    };
    match rows {
        Ok(rows) => request_scores(&run.scoring, rows, deferred),
        Err(e) => crate::bridge::settle(deferred, Err(e)),
    }
    Ok(promise)
}
