use std::path::Path;

use napi::bindgen_prelude::Float32Array;
use napi_derive::napi;
use serde_json::json;
use xpm_torch_core::data::ScoreInput;
use xpm_torch_core::models::{features_input, scoring_device, text_input, TrainedModel};
use xpm_torch_core::Error;

use crate::outcome;

/// A trained model opened for scoring. Failures of `open` and of scoring come back as outcome
/// JSON, so that TypeScript raises its typed errors.
#[napi]
pub struct NativeModel {
    model: Option<TrainedModel>,
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

impl NativeModel {
    fn scored(&self, input: Result<ScoreInput, Error>, batch_size: u32) -> String {
        outcome::to_json(catch(|| {
            let model = self
                .model
                .as_ref()
                .ok_or_else(|| Error::config("model", "the model is not open"))?;
            let scores = model.score(&input?, batch_size as usize)?;
            Ok(json!(scores))
        }))
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

    /// Builds the model of `config_json`, loads `weights` and places it on `device` (`cpu`,
    /// `cuda`, `cuda:<n>` or `auto`; default `cpu`); returns the outcome JSON.
    #[napi]
    pub fn open(&mut self, config_json: String, weights: String, device: Option<String>) -> String {
        let opened = catch(|| {
            let device = scoring_device(device.as_deref().unwrap_or("cpu"))?;
            TrainedModel::open_on(&config_json, Path::new(&weights), device)
        });
        outcome::to_json(opened.map(|m| {
            self.model = Some(m);
            serde_json::Value::Null
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
}
