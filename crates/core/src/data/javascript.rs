//! Data that lives on the JavaScript side: samplers written in TypeScript (pulled a batch of
//! records per request, so the loop never waits on JavaScript per record) and datasets held in
//! TypedArrays (copied once, when the run is built).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tch::{Kind, Tensor};

use crate::data::{
    Batch, LtrDataset, PairwiseBatch, PointwiseBatch, RecordKind, Sampler, ScoreInput, Shard,
    TokenTable,
};
use crate::{Error, Result};

/// A request to, or a reply from, the JavaScript side: JSON beside numeric arrays, which cross
/// as typed arrays (`Float32Array`, `Int32Array`) and are never encoded as text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsMessage {
    /// Everything but the arrays.
    pub json: Value,
    /// Float arrays by name.
    pub floats: BTreeMap<String, Vec<f32>>,
    /// Integer arrays (token ids, lengths, grades, bounds) by name.
    pub ints: BTreeMap<String, Vec<i32>>,
}

impl JsMessage {
    /// A message of JSON alone.
    pub fn json(json: Value) -> Self {
        JsMessage {
            json,
            ..JsMessage::default()
        }
    }

    /// The float array `field`.
    ///
    /// # Errors
    /// [`Error::Callback`] naming `what` when it is absent.
    pub fn floats(&self, field: &str, what: &str) -> Result<&[f32]> {
        self.floats
            .get(field)
            .map(Vec::as_slice)
            .ok_or_else(|| Error::Callback(format!("{what}: the reply has no {field}")))
    }

    /// The integer array `field`, each value at least 0.
    ///
    /// # Errors
    /// [`Error::Callback`] naming `what` when it is absent or holds a negative value.
    pub fn counts(&self, field: &str, what: &str) -> Result<Vec<usize>> {
        let values = self
            .ints
            .get(field)
            .ok_or_else(|| Error::Callback(format!("{what}: the reply has no {field}")))?;
        values
            .iter()
            .map(|&v| {
                usize::try_from(v)
                    .map_err(|_| Error::Callback(format!("{what}: {field} holds {v}")))
            })
            .collect()
    }

    /// The count field `field` of the JSON.
    ///
    /// # Errors
    /// [`Error::Callback`] naming `what` when it is absent.
    pub fn count(&self, field: &str, what: &str) -> Result<usize> {
        self.json[field]
            .as_u64()
            .map(|v| v as usize)
            .ok_or_else(|| Error::Callback(format!("{what}: the reply has no {field}")))
    }
}

/// The way to the JavaScript side of a run: sends a request and waits for its answer.
pub trait JsData: Send + Sync {
    /// Sends `request` and returns the reply; `what` names the requester in errors.
    ///
    /// # Errors
    /// [`Error::Callback`] when JavaScript fails or cannot be reached.
    fn request(&self, request: JsMessage, what: &str) -> Result<JsMessage>;
}

/// Copies the dataset `key` held in TypedArrays on the JavaScript side.
///
/// # Errors
/// [`Error::Callback`] when JavaScript fails, [`Error::Config`] at `path` for inconsistent arrays.
pub fn js_dataset(js: &dyn JsData, key: &str, path: &str) -> Result<LtrDataset> {
    let what = format!("dataset {key:?}");
    let reply = js.request(
        JsMessage::json(json!({ "kind": "dataset", "key": key })),
        &what,
    )?;
    let num_features = reply.count("numFeatures", &what)?;
    let features = reply.floats("features", &what)?.to_vec();
    let relevance: Vec<u8> = reply
        .counts("relevance", &what)?
        .into_iter()
        .map(|g| u8::try_from(g).unwrap_or(u8::MAX))
        .collect();
    let query_bounds = reply.counts("queryBounds", &what)?;
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

    fn features(reply: &JsMessage, field: &str, rows: usize, what: &str) -> Result<ScoreInput> {
        let values = reply.floats(field, what)?;
        if rows == 0 || values.len() % rows != 0 {
            return Err(Error::Callback(format!(
                "{what}: {} values in {field} for {rows} records",
                values.len()
            )));
        }
        Ok(ScoreInput::Features(
            Tensor::f_from_slice(values)?
                .f_view([rows as i64, (values.len() / rows) as i64])?
                .f_to_kind(Kind::Float)?,
        ))
    }

    fn tokens(reply: &JsMessage, field: &str, rows: usize, what: &str) -> Result<TokenTable> {
        let ids = reply.counts(field, what)?;
        let lengths = reply.counts(&format!("{field}Lengths"), what)?;
        if lengths.len() != rows || lengths.iter().sum::<usize>() != ids.len() {
            return Err(Error::Callback(format!(
                "{what}: {field} lengths do not match its ids"
            )));
        }
        let mut table = TokenTable::new();
        let mut at = 0;
        for len in lengths {
            table.push(ids[at..at + len].iter().map(|&id| id as i64));
            at += len;
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
            JsMessage::json(json!({
                "kind": "records",
                "key": self.key,
                "start": self.consumed,
                "count": size,
                "rank": self.shard.rank,
                "world": self.shard.world,
            })),
            &what,
        )?;
        self.consumed += size as u64;
        let rows = reply.count("count", &what)?;
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
pub fn records_batch(reply: &JsMessage, rows: usize, what: &str) -> Result<Batch> {
    Ok(match reply.json["type"].as_str() {
        Some("pairwise") => Batch::Pairwise(PairwiseBatch::new(
            JsSampler::features(reply, "positive", rows, what)?,
            JsSampler::features(reply, "negative", rows, what)?,
        )),
        Some("pointwise") => Batch::Pointwise(PointwiseBatch {
            input: JsSampler::features(reply, "features", rows, what)?,
            relevance: Tensor::f_from_slice(reply.floats("relevance", what)?)?,
        }),
        Some("triplets") => {
            let all: Vec<usize> = (0..rows).collect();
            crate::data::TokenTriplets {
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

fn packed_features(input: &ScoreInput, what: &str) -> Result<Vec<f32>> {
    let ScoreInput::Features(f) = input else {
        return Err(Error::Callback(format!("{what}: expected feature vectors")));
    };
    Ok(Vec::<f32>::try_from(
        f.f_to_kind(Kind::Float)?.f_flatten(0, -1)?,
    )?)
}

fn packed_tokens(tokens: &crate::data::Tokens, name: &str, out: &mut JsMessage) -> Result<()> {
    let lengths = Vec::<i64>::try_from(&tokens.lengths)?;
    let width = tokens.ids.size().get(1).copied().unwrap_or(0) as usize;
    let ids = Vec::<i64>::try_from(tokens.ids.f_flatten(0, -1)?)?;
    let narrow = |v: i64| {
        i32::try_from(v).map_err(|_| Error::Unsupported(format!("token id or length {v}")))
    };
    let mut flat = Vec::new();
    for (row, len) in lengths.iter().enumerate() {
        for &id in &ids[row * width..row * width + *len as usize] {
            flat.push(narrow(id)?);
        }
    }
    out.ints.insert(name.into(), flat);
    out.ints.insert(
        format!("{name}Lengths"),
        lengths.into_iter().map(narrow).collect::<Result<_>>()?,
    );
    Ok(())
}

/// Records of a batch packed as a TypeScript sampler packs them (the inverse of
/// [`records_batch`]), for code on the JavaScript side that reads records.
///
/// # Errors
/// [`Error::Config`] for batchwise groups and slates; a libtorch error.
pub fn packed_records(batch: &Batch, what: &str) -> Result<JsMessage> {
    let count = batch.len();
    let mut out = JsMessage::default();
    match batch {
        Batch::Pairwise(b) => match (&b.positive, &b.negative) {
            (ScoreInput::Features(_), _) => {
                out.json = json!({ "type": "pairwise", "count": count });
                out.floats
                    .insert("positive".into(), packed_features(&b.positive, what)?);
                out.floats
                    .insert("negative".into(), packed_features(&b.negative, what)?);
            }
            (
                ScoreInput::Text { query, document },
                ScoreInput::Text {
                    document: negative, ..
                },
            ) => {
                out.json = json!({ "type": "triplets", "count": count });
                packed_tokens(query, "query", &mut out)?;
                packed_tokens(document, "positive", &mut out)?;
                packed_tokens(negative, "negative", &mut out)?;
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
            out.json = json!({ "type": "pointwise", "count": count });
            out.floats
                .insert("features".into(), packed_features(&b.input, what)?);
            out.floats.insert(
                "relevance".into(),
                Vec::<f32>::try_from(b.relevance.f_to_kind(Kind::Float)?)?,
            );
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
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Canned(JsMessage);

    impl JsData for Canned {
        fn request(&self, _: JsMessage, _: &str) -> Result<JsMessage> {
            Ok(self.0.clone())
        }
    }

    fn dataset_reply(features: Vec<f32>) -> JsMessage {
        JsMessage {
            json: json!({ "numFeatures": 2 }),
            floats: BTreeMap::from([("features".into(), features)]),
            ints: BTreeMap::from([
                ("relevance".into(), vec![1, 0]),
                ("queryBounds".into(), vec![0, 2]),
            ]),
        }
    }

    #[test]
    fn a_dataset_crosses_as_typed_arrays() {
        let js = Canned(dataset_reply(vec![1.5, 2.0, -1.0, 0.5]));
        let dataset = js_dataset(&js, "d", "learner.x.dataset").unwrap();
        assert_eq!(dataset.features, [1.5, 2.0, -1.0, 0.5]);
        assert_eq!(dataset.relevance, [1, 0]);
        assert_eq!(dataset.query_bounds, [0, 2]);
    }

    #[test]
    fn inconsistent_dataset_arrays_are_a_config_error() {
        let js = Canned(dataset_reply(vec![1.5, 1.5]));
        let err = js_dataset(&js, "d", "learner.x.dataset")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("learner.x.dataset: 2 feature values for 2 documents"),
            "{err}"
        );
    }

    #[test]
    fn packed_records_read_back_as_the_same_batch() {
        let positive = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]).view([2, 2]);
        let negative = Tensor::from_slice(&[0.0f32, -1.0, 5.0, 6.0]).view([2, 2]);
        let batch = Batch::Pairwise(PairwiseBatch::new(
            ScoreInput::Features(positive),
            ScoreInput::Features(negative),
        ));
        let packed = packed_records(&batch, "t").unwrap();
        assert_eq!(packed.floats["negative"], [0.0, -1.0, 5.0, 6.0]);
        let Batch::Pairwise(back) = records_batch(&packed, 2, "t").unwrap() else {
            panic!("not pairwise");
        };
        let ScoreInput::Features(f) = back.positive else {
            panic!("not features");
        };
        assert_eq!(
            Vec::<f32>::try_from(f.flatten(0, -1)).unwrap(),
            [1.0, 2.0, 3.0, 4.0]
        );
    }

    #[test]
    fn token_lengths_must_match_their_ids() {
        let reply = JsMessage {
            json: json!({ "type": "triplets", "count": 1 }),
            floats: BTreeMap::new(),
            ints: ["query", "positive", "negative"]
                .iter()
                .flat_map(|n| {
                    [
                        (n.to_string(), vec![3, 4]),
                        (format!("{n}Lengths"), vec![3]),
                    ]
                })
                .collect(),
        };
        let err = records_batch(&reply, 1, "sampler").unwrap_err().to_string();
        assert!(err.contains("query lengths do not match its ids"), "{err}");
    }
}
