//! Data that lives on the JavaScript side: samplers written in TypeScript (pulled a batch of
//! records per request, so the loop never waits on JavaScript per record) and datasets held in
//! TypedArrays (copied once, when the run is built).

use std::sync::Arc;

use serde_json::{json, Value};
use tch::{Kind, Tensor};

use super::{
    Batch, LtrDataset, PairwiseBatch, PointwiseBatch, RecordKind, Sampler, ScoreInput, Shard,
    TokenTable,
};
use crate::{Error, Result};

/// The way to the JavaScript side of a run: sends a request and waits for its answer.
pub trait JsData: Send + Sync {
    /// Sends `request` and returns the reply; `what` names the requester in errors.
    ///
    /// # Errors
    /// [`Error::Callback`] when JavaScript fails or cannot be reached.
    fn request(&self, request: Value, what: &str) -> Result<Value>;
}

/// Decodes standard base64 (the way TypedArrays cross as JSON).
fn base64_bytes(text: &str, what: &str) -> Result<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            let v = value(c).ok_or_else(|| Error::Callback(format!("{what}: invalid base64")))?;
            acc |= v << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    Ok(out)
}

/// A field of `reply` holding base64 little-endian `f32`s.
fn floats(reply: &Value, field: &str, what: &str) -> Result<Vec<f32>> {
    let text = reply[field]
        .as_str()
        .ok_or_else(|| Error::Callback(format!("{what}: the reply has no {field}")))?;
    let bytes = base64_bytes(text, what)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// A field of `reply` holding a list of non-negative integers.
fn integers(reply: &Value, field: &str, what: &str) -> Result<Vec<i64>> {
    reply[field]
        .as_array()
        .ok_or_else(|| Error::Callback(format!("{what}: the reply has no {field}")))?
        .iter()
        .map(|v| {
            v.as_i64()
                .filter(|v| *v >= 0)
                .ok_or_else(|| Error::Callback(format!("{what}: {field} holds {v}")))
        })
        .collect()
}

/// A count field of `reply`.
fn count(reply: &Value, field: &str, what: &str) -> Result<usize> {
    reply[field]
        .as_u64()
        .map(|v| v as usize)
        .ok_or_else(|| Error::Callback(format!("{what}: the reply has no {field}")))
}

/// Copies the dataset `key` held in TypedArrays on the JavaScript side.
///
/// # Errors
/// [`Error::Callback`] when JavaScript fails, [`Error::Config`] at `path` for inconsistent arrays.
pub fn js_dataset(js: &dyn JsData, key: &str, path: &str) -> Result<LtrDataset> {
    let what = format!("dataset {key:?}");
    let reply = js.request(json!({ "kind": "dataset", "key": key }), &what)?;
    let num_features = count(&reply, "numFeatures", &what)?;
    let features = floats(&reply, "features", &what)?;
    let relevance: Vec<u8> = integers(&reply, "relevance", &what)?
        .into_iter()
        .map(|g| u8::try_from(g).unwrap_or(u8::MAX))
        .collect();
    let query_bounds: Vec<usize> = integers(&reply, "queryBounds", &what)?
        .into_iter()
        .map(|b| b as usize)
        .collect();
    let docs = relevance.len();
    if num_features == 0 || features.len() != docs * num_features {
        return Err(Error::config(
            path,
            format!(
                "{} feature values for {docs} documents of {num_features} features",
                features.len()
            ),
        ));
    }
    let bounds_ok = query_bounds.first() == Some(&0)
        && query_bounds.last() == Some(&docs)
        && query_bounds.windows(2).all(|w| w[0] < w[1]);
    if !bounds_ok {
        return Err(Error::config(
            path,
            "query bounds must rise strictly from 0 to the number of documents",
        ));
    }
    Ok(LtrDataset {
        features,
        num_features,
        relevance,
        query_bounds,
    })
}

/// A sampler written in TypeScript. Its records are an endless stream (passes of its generator
/// one after the other); this rank keeps every `world`-th. Its position is the number of
/// records consumed: a resumed run re-creates the generator and skips them, which gives the
/// same records when the generator is deterministic for its seed.
pub struct JsSampler {
    js: Arc<dyn JsData>,
    key: String,
    kind: RecordKind,
    consumed: u64,
    shard: Shard,
}

impl JsSampler {
    /// The TypeScript sampler `key` yielding records of `kind`.
    pub fn new(js: Arc<dyn JsData>, key: &str, kind: RecordKind, shard: Shard) -> Self {
        JsSampler {
            js,
            key: key.to_string(),
            kind,
            consumed: 0,
            shard,
        }
    }

    fn features(reply: &Value, field: &str, rows: usize, what: &str) -> Result<ScoreInput> {
        let values = floats(reply, field, what)?;
        if rows == 0 || values.len() % rows != 0 {
            return Err(Error::Callback(format!(
                "{what}: {} values in {field} for {rows} records",
                values.len()
            )));
        }
        Ok(ScoreInput::Features(
            Tensor::f_from_slice(&values)?
                .f_view([rows as i64, (values.len() / rows) as i64])?
                .f_to_kind(Kind::Float)?,
        ))
    }

    fn tokens(reply: &Value, field: &str, rows: usize, what: &str) -> Result<TokenTable> {
        let ids = integers(reply, field, what)?;
        let lengths = integers(reply, &format!("{field}Lengths"), what)?;
        if lengths.len() != rows || lengths.iter().sum::<i64>() != ids.len() as i64 {
            return Err(Error::Callback(format!(
                "{what}: {field} lengths do not match its ids"
            )));
        }
        let mut table = TokenTable::new();
        let mut at = 0;
        for len in lengths {
            table.push(ids[at..at + len as usize].iter().copied());
            at += len as usize;
        }
        Ok(table)
    }
}

impl Sampler for JsSampler {
    fn kind(&self) -> RecordKind {
        self.kind
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let what = format!("sampler {:?}", self.key);
        let reply = self.js.request(
            json!({
                "kind": "records",
                "key": self.key,
                "start": self.consumed,
                "count": size,
                "rank": self.shard.rank,
                "world": self.shard.world,
            }),
            &what,
        )?;
        self.consumed += size as u64;
        let rows = count(&reply, "count", &what)?;
        if rows != size {
            return Err(Error::Callback(format!(
                "{what}: asked for {size} records, got {rows}"
            )));
        }
        Ok(match reply["type"].as_str() {
            Some("pairwise") => Batch::Pairwise(PairwiseBatch {
                positive: Self::features(&reply, "positive", rows, &what)?,
                negative: Self::features(&reply, "negative", rows, &what)?,
            }),
            Some("pointwise") => Batch::Pointwise(PointwiseBatch {
                input: Self::features(&reply, "features", rows, &what)?,
                relevance: Tensor::f_from_slice(&floats(&reply, "relevance", &what)?)?,
            }),
            Some("triplets") => {
                let all: Vec<usize> = (0..rows).collect();
                super::TokenTriplets {
                    query: Self::tokens(&reply, "query", rows, &what)?,
                    positive: Self::tokens(&reply, "positive", rows, &what)?,
                    negative: Self::tokens(&reply, "negative", rows, &what)?,
                }
                .batch(&all)
                .map(Batch::Pairwise)?
            }
            other => {
                return Err(Error::Callback(format!(
                    "{what}: unknown record type {other:?}"
                )))
            }
        })
    }

    fn position(&self) -> Value {
        json!({ "consumed": self.consumed })
    }

    fn restore(&mut self, position: &Value, path: &str) -> Result<()> {
        self.consumed = position["consumed"].as_u64().ok_or_else(|| {
            Error::checkpoint(
                "trainer state",
                format!("{path}: no consumed-record count for a TypeScript sampler"),
            )
        })?;
        Ok(())
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(JsSampler {
            js: self.js.clone(),
            key: self.key.clone(),
            kind: self.kind,
            consumed: self.consumed,
            shard: self.shard,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_padded_and_unpadded_text() {
        assert_eq!(base64_bytes("aGVsbG8=", "t").unwrap(), b"hello");
        assert_eq!(base64_bytes("aGk", "t").unwrap(), b"hi");
        assert_eq!(base64_bytes("", "t").unwrap(), b"");
        let f = 1.5f32.to_le_bytes();
        assert_eq!(base64_bytes("AADAPw==", "t").unwrap(), f);
        assert!(base64_bytes("a$", "t").is_err());
    }

    struct Canned(Value);

    impl JsData for Canned {
        fn request(&self, _: Value, _: &str) -> Result<Value> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn inconsistent_dataset_arrays_are_a_config_error() {
        let js = Canned(json!({
            "numFeatures": 2,
            "features": "AADAPwAAwD8=",
            "relevance": [1, 0],
            "queryBounds": [0, 2],
        }));
        let err = js_dataset(&js, "d", "learner.x.dataset")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("learner.x.dataset: 2 feature values for 2 documents"),
            "{err}"
        );
    }
}
