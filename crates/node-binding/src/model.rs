//! A trained model opened from TypeScript (`loadModel`): scoring, tokenising and embedding off
//! the JavaScript thread.

use std::path::Path;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{AsyncTask, Float32Array};
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::json;
use xpm_torch_core::data::{BatchLimit, ScoreInput};
use xpm_torch_core::models::{
    features_input, inference_precision, scoring_device, text_input, OpenOptions, TrainedModel,
};
use xpm_torch_core::Error;

use crate::outcome;

/// A trained model opened for scoring. Failures of `open` and of scoring come back as outcome
/// JSON, so that TypeScript raises its typed errors.
#[napi]
pub struct NativeModel {
    model: Option<Arc<Mutex<TrainedModel>>>,
}

fn catch<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(Error::Panic(message))
    })
}

/// Queries and documents of (query, document) pairs.
type TextRows = (Vec<Vec<i64>>, Vec<Vec<i64>>);

/// What a text task computes.
enum TextJob {
    /// Scores of (query, document) pairs.
    Score(Vec<String>, Vec<String>),
    /// Vectors of texts (`true`: by the query encoder).
    Embed(Vec<String>, bool),
}

/// Tokenising and scoring texts on the libuv pool, off the JavaScript thread; resolves to the
/// outcome JSON.
pub struct TextTask {
    model: Option<Arc<Mutex<TrainedModel>>>,
    job: TextJob,
    limit: BatchLimit,
}

impl Task for TextTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> napi::Result<String> {
        Ok(outcome::to_json(catch(|| {
            let model = locked(&self.model)?;
            let model = model
                .lock()
                .map_err(|_| Error::Panic("an earlier call on this model panicked".into()))?;
            Ok(match &self.job {
                TextJob::Score(queries, documents) => {
                    json!(model.score_texts(queries, documents, self.limit)?)
                }
                TextJob::Embed(texts, query) => {
                    json!(model.embed_texts(texts, *query, self.limit)?)
                }
            })
        })))
    }

    fn resolve(&mut self, _env: Env, output: String) -> napi::Result<String> {
        Ok(output)
    }
}

fn locked(model: &Option<Arc<Mutex<TrainedModel>>>) -> Result<&Arc<Mutex<TrainedModel>>, Error> {
    model
        .as_ref()
        .ok_or_else(|| Error::config("model", "the model is not open"))
}

impl NativeModel {
    fn scored(&self, input: Result<ScoreInput, Error>, batch_size: u32) -> String {
        outcome::to_json(catch(|| {
            let model = locked(&self.model)?
                .lock()
                .map_err(|_| Error::Panic("an earlier call on this model panicked".into()))?;
            let scores = model.score(&input?, batch_size as usize)?;
            Ok(json!(scores))
        }))
    }

    fn text_task(
        &self,
        job: TextJob,
        batch_size: u32,
        max_batch_tokens: Option<u32>,
    ) -> AsyncTask<TextTask> {
        AsyncTask::new(TextTask {
            model: self.model.clone(),
            job,
            limit: BatchLimit {
                rows: batch_size as usize,
                tokens: max_batch_tokens.map(|t| t as usize),
            },
        })
    }
}

#[napi]
impl NativeModel {
    /// An unopened model; call `open`.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NativeModel { model: None }
    }

    /// Builds the model of `config_json` drawing what it draws from `seed` (as a Learner with
    /// that seed), loads `weights` (none when empty), places it on `device` (`cpu`, `cuda`,
    /// `cuda:<n>` or `auto`; default `cpu`) and scores with `num_threads` intra-op threads
    /// (default: the process's) in `precision` (`32-true`, the default, or `bf16-mixed`);
    /// returns the outcome JSON, whose output names the parameters drawn new rather than read
    /// from its files and what the user should know of how it scores
    /// (`{ newWeights, warnings }`).
    #[napi]
    pub fn open(
        &mut self,
        config_json: String,
        weights: String,
        device: Option<String>,
        seed: Option<i64>,
        num_threads: Option<i32>,
        precision: Option<String>,
    ) -> String {
        let opened = catch(|| {
            let device = scoring_device(device.as_deref().unwrap_or("cpu"))?;
            let seed = u64::try_from(seed.unwrap_or(0))
                .map_err(|_| Error::config("seed", "must be a non-negative integer"))?;
            // An empty path opens the model as its configuration builds it (pretrained weights).
            let weights = (!weights.is_empty()).then(|| Path::new(&weights));
            let precision = inference_precision(precision.as_deref().unwrap_or("32-true"))?;
            let options = OpenOptions {
                weights,
                device,
                seed,
                num_threads,
                precision,
            };
            TrainedModel::open_with(&config_json, options)
        });
        outcome::to_json(opened.map(|m| {
            let output = json!({ "newWeights": m.new_weights(), "warnings": m.warnings() });
            self.model = Some(Arc::new(Mutex::new(m)));
            output
        }))
    }

    /// Scores `rows` feature vectors of `width` values stored row after row.
    #[napi]
    pub fn score_features(
        &self,
        values: Float32Array,
        rows: u32,
        width: u32,
        batch_size: u32,
    ) -> String {
        self.scored(
            features_input(&values, rows as usize, width as usize),
            batch_size,
        )
    }

    /// Scores (query, document) token-id pairs given as JSON `[queries, documents]`.
    #[napi]
    pub fn score_text(&self, pairs_json: String, batch_size: u32) -> String {
        let input = serde_json::from_str::<TextRows>(&pairs_json)
            .map_err(|e| Error::config("records", e.to_string()))
            .and_then(|(queries, documents)| text_input(&queries, &documents));
        self.scored(input, batch_size)
    }

    /// Saves a text model as Hugging Face directories under `directory`; returns the outcome JSON.
    #[napi]
    pub fn save_hugging_face(&self, directory: String) -> String {
        outcome::to_json(catch(|| {
            let model = locked(&self.model)?
                .lock()
                .map_err(|_| Error::Panic("an earlier call on this model panicked".into()))?;
            model.save_hf(Path::new(&directory))?;
            Ok(serde_json::Value::Null)
        }))
    }

    /// Scores (query, document) text pairs given as `queries` and `documents`, tokenised by
    /// the model's tokenizer off the JavaScript thread, in length order by batches of
    /// `batch_size` pairs and at most `max_batch_tokens` padded tokens; resolves to the
    /// outcome JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn score_texts(
        &self,
        queries: Vec<String>,
        documents: Vec<String>,
        batch_size: u32,
        max_batch_tokens: Option<u32>,
    ) -> AsyncTask<TextTask> {
        self.text_task(
            TextJob::Score(queries, documents),
            batch_size,
            max_batch_tokens,
        )
    }

    /// One vector per text (by the query encoder when `query`), off the JavaScript thread, in
    /// batches as `score_texts` makes them; resolves to the outcome JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn embed_texts(
        &self,
        texts: Vec<String>,
        query: bool,
        batch_size: u32,
        max_batch_tokens: Option<u32>,
    ) -> AsyncTask<TextTask> {
        self.text_task(TextJob::Embed(texts, query), batch_size, max_batch_tokens)
    }
}
