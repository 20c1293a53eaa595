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
        records_batch(&reply, rows, &what)
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

/// The batch a reply of packed records (`type`: `pairwise`, `pointwise` or `triplets`) holds.
///
/// # Errors
/// [`Error::Callback`] for a malformed reply; a libtorch error.
pub fn records_batch(reply: &Value, rows: usize, what: &str) -> Result<Batch> {
    Ok(match reply["type"].as_str() {
        Some("pairwise") => Batch::Pairwise(PairwiseBatch {
            positive: JsSampler::features(reply, "positive", rows, what)?,
            negative: JsSampler::features(reply, "negative", rows, what)?,
        }),
        Some("pointwise") => Batch::Pointwise(PointwiseBatch {
            input: JsSampler::features(reply, "features", rows, what)?,
            relevance: Tensor::f_from_slice(&floats(reply, "relevance", what)?)?,
        }),
        Some("triplets") => {
            let all: Vec<usize> = (0..rows).collect();
            super::TokenTriplets {
                query: JsSampler::tokens(reply, "query", rows, what)?,
                positive: JsSampler::tokens(reply, "positive", rows, what)?,
                negative: JsSampler::tokens(reply, "negative", rows, what)?,
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

/// Standard base64 of `bytes`.
fn base64_text(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let mut acc = [0u8; 3];
        acc[..chunk.len()].copy_from_slice(chunk);
        let n = u32::from_be_bytes([0, acc[0], acc[1], acc[2]]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(DIGITS[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn packed_features(input: &ScoreInput, what: &str) -> Result<String> {
    let ScoreInput::Features(f) = input else {
        return Err(Error::Callback(format!("{what}: expected feature vectors")));
    };
    let values = Vec::<f32>::try_from(f.f_to_kind(Kind::Float)?.f_flatten(0, -1)?)?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(base64_text(&bytes))
}

fn packed_tokens(
    tokens: &super::Tokens,
    name: &str,
    out: &mut serde_json::Map<String, Value>,
) -> Result<()> {
    let lengths = Vec::<i64>::try_from(&tokens.lengths)?;
    let width = tokens.ids.size().get(1).copied().unwrap_or(0) as usize;
    let ids = Vec::<i64>::try_from(tokens.ids.f_flatten(0, -1)?)?;
    let mut flat = Vec::new();
    for (row, len) in lengths.iter().enumerate() {
        flat.extend_from_slice(&ids[row * width..row * width + *len as usize]);
    }
    out.insert(name.into(), json!(flat));
    out.insert(format!("{name}Lengths"), json!(lengths));
    Ok(())
}

/// Records of a batch packed as a TypeScript sampler packs them (the inverse of
/// [`records_batch`]), for code on the JavaScript side that reads records.
///
/// # Errors
/// [`Error::Config`] for batchwise groups and slates; a libtorch error.
pub fn packed_records(batch: &Batch, what: &str) -> Result<Value> {
    let count = batch.len();
    Ok(match batch {
        Batch::Pairwise(b) => match (&b.positive, &b.negative) {
            (ScoreInput::Features(_), _) => json!({
                "type": "pairwise",
                "count": count,
                "positive": packed_features(&b.positive, what)?,
                "negative": packed_features(&b.negative, what)?,
            }),
            (
                ScoreInput::Text { query, document },
                ScoreInput::Text {
                    document: negative, ..
                },
            ) => {
                let mut out = serde_json::Map::new();
                out.insert("type".into(), json!("triplets"));
                out.insert("count".into(), json!(count));
                packed_tokens(query, "query", &mut out)?;
                packed_tokens(document, "positive", &mut out)?;
                packed_tokens(negative, "negative", &mut out)?;
                Value::Object(out)
            }
            (ScoreInput::Encoded(_), _) => {
                return Err(Error::config(
                    what,
                    "providers written in TypeScript read feature and token-id records, not \
                     texts encoded by a model's tokenizer",
                ))
            }
            _ => return Err(Error::Callback(format!("{what}: mixed record inputs"))),
        },
        Batch::Pointwise(b) => {
            let relevance = Vec::<f32>::try_from(b.relevance.f_to_kind(Kind::Float)?)?;
            let bytes: Vec<u8> = relevance.iter().flat_map(|v| v.to_le_bytes()).collect();
            json!({
                "type": "pointwise",
                "count": count,
                "features": packed_features(&b.input, what)?,
                "relevance": base64_text(&bytes),
            })
        }
        Batch::Batchwise(_) | Batch::Slate(_) => {
            return Err(Error::config(
                what,
                format!(
                    "providers written in TypeScript read pairwise and pointwise records, not {}",
                    batch.kind().name()
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for bytes in [&b""[..], b"h", b"hi", b"hello", &[0, 255, 17, 3]] {
            assert_eq!(base64_bytes(&base64_text(bytes), "t").unwrap(), bytes);
        }
        assert_eq!(base64_text(b"hello"), "aGVsbG8=");
    }

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
