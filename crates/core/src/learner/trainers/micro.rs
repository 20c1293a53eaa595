//! What the micro-batcher needs to know of records: their count and sub-batches (the
//! [`MicroBatchable`] of [`Batch`]), the formula variables of each record of a batch, and probe
//! batches of given dimensions.

use std::sync::Arc;

use serde_json::json;
use tch::{Device, Tensor};

use crate::batching::SimulatedDevice;
use crate::batching::{BatchDims, Combine, Dims, MicroBatchable};
use crate::config::{AnyBatchDimsProvider, AnyBatcher};
use crate::data::{packed_records, records_batch, Batch, JsData, JsMessage, ScoreInput, Tokens};
use crate::runtime::memory::{CpuMemory, CudaMemory, MemoryProbe};
use crate::{Error, Result};

impl MicroBatchable for Batch {
    fn len(&self) -> usize {
        Batch::len(self)
    }

    fn select(&self, indices: &[usize]) -> Result<Self> {
        Batch::select(self, indices)
    }
}

/// The variables the built-in records provide: the batch-size variable (records of the group)
/// and `l`, the (query + document) token count of each record for token records (a group's is
/// its longest), the feature count for feature records, and the documents per slate for slates.
#[derive(Clone)]
pub(crate) struct RecordDims {
    batch_size_variable: String,
    uses_length: bool,
    /// A provider written in TypeScript: the way to it and its key.
    js: Option<(Arc<dyn JsData>, String)>,
}

/// The name of the length variable.
const LENGTH: &str = "l";

impl RecordDims {
    /// The provider for a batcher configuration, or an error naming a variable it cannot give.
    pub fn new(config: &AnyBatcher, js: &Option<Arc<dyn JsData>>, path: &str) -> Result<Self> {
        let AnyBatcher::PredictiveBatcher(p) = config else {
            // Only a simulated memory device asks these batchers for dimensions.
            return Ok(RecordDims {
                batch_size_variable: "bs".into(),
                uses_length: true,
                js: None,
            });
        };
        if let AnyBatchDimsProvider::JsObject(provider) = &p.dims_provider {
            let js = js.clone().ok_or_else(|| {
                Error::config(
                    format!("{path}.dims_provider"),
                    "this provider is written in TypeScript, but the run has no JavaScript side",
                )
            })?;
            return Ok(RecordDims {
                batch_size_variable: p.batch_size_variable.clone(),
                uses_length: false,
                js: Some((js, provider.key.clone())),
            });
        }
        if let Some(other) = p
            .variable_names
            .iter()
            .find(|v| **v != p.batch_size_variable && *v != LENGTH)
        {
            return Err(Error::config(
                format!("{path}.variable_names"),
                format!(
                    "the built-in records give `{}` (records) and `{LENGTH}` (longest record) \
                     only, not `{other}`",
                    p.batch_size_variable
                ),
            ));
        }
        Ok(RecordDims {
            batch_size_variable: p.batch_size_variable.clone(),
            uses_length: p.variable_names.iter().any(|v| v == LENGTH),
            js: None,
        })
    }

    /// The per-record dimensions of `batch`; a provider written in TypeScript is asked once,
    /// with all the records.
    pub fn batch_dims(&self, batch: &Batch) -> Result<BatchDims> {
        if let Some((js, key)) = &self.js {
            return self.js_batch_dims(js.as_ref(), key, batch);
        }
        let dims = BatchDims::new(self.batch_size_variable.clone(), batch.len());
        if !self.uses_length {
            return Ok(dims);
        }
        dims.with(LENGTH, Combine::Max, record_lengths(batch)?)
    }

    /// Asks `recordDims` for the variables of every record of `batch`, in columns: `{"columns":
    /// {name: [value per record]}, "combine": {name: "max" | "sum"}}`.
    fn js_batch_dims(&self, js: &dyn JsData, key: &str, batch: &Batch) -> Result<BatchDims> {
        let what = format!("dims provider {key:?}");
        let mut request = packed_records(batch, &what)?;
        request.json = json!({
            "kind": "dims",
            "key": key,
            "records": request.json,
            "batch_size_variable": self.batch_size_variable,
        });
        let reply = js.request(request, &what)?.json;
        let bad = |m: String| Error::Callback(format!("{what}: recordDims {m}"));
        let columns = reply["columns"]
            .as_object()
            .ok_or_else(|| bad(format!("gave {reply}")))?;
        let mut dims = BatchDims::new(self.batch_size_variable.clone(), batch.len());
        for (name, values) in columns {
            let values = values
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    v.as_u64()
                        .ok_or_else(|| bad(format!("gave {name} = {v}, not a whole number")))
                })
                .collect::<Result<Vec<u64>>>()?;
            let combine = match reply["combine"].get(name) {
                None => Combine::Max,
                Some(how) => Combine::parse(how.as_str().unwrap_or_default())
                    .map_err(|m| bad(format!("combine of {name}: {m}")))?,
            };
            dims = dims
                .with(name, combine, values)
                .map_err(|e| Error::Callback(format!("{what}: {e}")))?;
        }
        Ok(dims)
    }
}

/// The length of each of the `rows` rows of `input`.
fn row_lengths(input: &ScoreInput, rows: usize) -> Result<Vec<u64>> {
    let lengths = match input {
        ScoreInput::Features(f) => {
            let width = f.size().get(1).copied().unwrap_or(0);
            return Ok(vec![width.max(0) as u64; rows]);
        }
        ScoreInput::Text { query, document } => query.lengths.f_add(&document.lengths)?,
        ScoreInput::Encoded(e) => e.lengths()?,
    };
    let lengths = Vec::<i64>::try_from(&lengths.f_to_kind(tch::Kind::Int64)?)?;
    Ok(lengths.into_iter().map(|l| l.max(0) as u64).collect())
}

/// The length of each record of `batch`: its longest side, query or document.
fn record_lengths(batch: &Batch) -> Result<Vec<u64>> {
    let n = batch.len();
    Ok(match batch {
        Batch::Pairwise(b) => {
            let positive = row_lengths(&b.positive, n)?;
            let negative = row_lengths(&b.negative, n)?;
            positive
                .into_iter()
                .zip(negative)
                .map(|(p, q)| p.max(q))
                .collect()
        }
        Batch::Pointwise(b) => row_lengths(&b.input, n)?,
        Batch::Batchwise(b) => {
            // A record is a query with its group of documents, one row each.
            let group = b.relevance.size().get(1).copied().unwrap_or(1).max(1) as usize;
            let rows = row_lengths(&b.input, n * group)?;
            rows.chunks(group)
                .map(|docs| docs.iter().copied().max().unwrap_or(0))
                .collect()
        }
        // Slates are as long as the documents they hold.
        Batch::Slate(b) => {
            let width = b.labels.size().get(1).copied().unwrap_or(0);
            vec![width.max(0) as u64; n]
        }
    })
}

/// Rows of `input` padded or cut to a query of `l / 2` and a document of `l − l / 2` tokens
/// (token records), to build probe batches of a given length.
fn with_length(input: &ScoreInput, l: i64) -> Result<ScoreInput> {
    if let ScoreInput::Encoded(e) = input {
        return Ok(ScoreInput::Encoded(e.with_length(l)?));
    }
    let ScoreInput::Text { query, document } = input else {
        return input.map(|t| Ok(t.shallow_clone()));
    };
    let resize = |t: &Tokens, len: i64| -> Result<Tokens> {
        let rows = t.ids.size()[0];
        let len = len.max(1);
        // Real ids repeated along the row, so the probe sees no padding.
        let width = t.ids.size()[1].max(1);
        let repeats = (len + width - 1) / width;
        let ids = t.ids.f_repeat([1, repeats])?.f_narrow(1, 0, len)?;
        let ids = ids.f_clamp_min(1)?;
        Ok(Tokens {
            ids,
            lengths: Tensor::f_full([rows], len, (tch::Kind::Int64, Device::Cpu))?,
        })
    };
    Ok(ScoreInput::Text {
        query: resize(query, l / 2)?,
        document: resize(document, l - l / 2)?,
    })
}

/// A batch of `dims` records made from `template`'s records (repeated as needed) and, for token
/// records, of length `l`: what the predictive batcher measures.
pub(crate) fn probe_batch(template: &Batch, provider: &RecordDims, dims: &Dims) -> Result<Batch> {
    if let Some((js, key)) = &provider.js {
        let what = format!("dims provider {key:?}");
        let reply = js.request(
            JsMessage::json(json!({ "kind": "probe", "key": key, "dims": dims })),
            &what,
        )?;
        let rows = reply.json["count"].as_u64().unwrap_or(0) as usize;
        if rows == 0 {
            return Err(Error::Callback(format!(
                "{what}: buildProbeBatch gave no record for {dims:?}"
            )));
        }
        return records_batch(&reply, rows, &what);
    }
    let size = dims
        .get(&provider.batch_size_variable)
        .copied()
        .unwrap_or(1)
        .max(1) as usize;
    let n = template.len().max(1);
    let rows: Vec<usize> = (0..size).map(|i| i % n).collect();
    let batch = template.select(&rows)?;
    let Some(&l) = dims.get(LENGTH).filter(|_| provider.uses_length) else {
        return Ok(batch);
    };
    let l = l as i64;
    Ok(match batch {
        Batch::Pairwise(b) => Batch::Pairwise(crate::data::PairwiseBatch::new(
            with_length(&b.positive, l)?,
            with_length(&b.negative, l)?,
        )),
        Batch::Pointwise(b) => Batch::Pointwise(crate::data::PointwiseBatch {
            input: with_length(&b.input, l)?,
            relevance: b.relevance,
        }),
        Batch::Batchwise(b) => Batch::Batchwise(crate::data::BatchwiseBatch {
            input: with_length(&b.input, l)?,
            relevance: b.relevance,
        }),
        Batch::Slate(b) => Batch::Slate(with_slate_width(&b, l)?),
    })
}

/// Slates of `width` positions made from `slates`' positions (repeated as needed).
fn with_slate_width(
    slates: &crate::data::SlateBatch,
    width: i64,
) -> Result<crate::data::SlateBatch> {
    let (count, old) = slates.labels.size2()?;
    let width = width.max(1);
    let columns: Vec<i64> = (0..width).map(|i| i % old.max(1)).collect();
    let rows: Vec<i64> = (0..count)
        .flat_map(|s| columns.iter().map(move |c| s * old + c))
        .collect();
    let columns = Tensor::f_from_slice(&columns)?;
    Ok(crate::data::SlateBatch {
        input: slates.input.select(&Tensor::f_from_slice(&rows)?)?,
        labels: slates.labels.f_index_select(1, &columns)?,
        mask: slates.mask.f_index_select(1, &columns)?,
    })
}

/// The environment variable that replaces the memory probe with a simulated device, to test
/// out-of-memory handling without a GPU: JSON `{"capacity": bytes, "formula_terms":
/// [{"coefficient": "a", "factor": 1, "powers": {"bs": 1}}], "coefficients": {"a": 1000},
/// "ranks": [1]}` (a micro-batch costs what the formula of those terms says, written as a
/// PredictiveBatcher's `formula_terms` over the variables `bs` and `l`; `ranks`, when given,
/// limits it to those `RANK`s).
pub const SIMULATED_MEMORY_ENV: &str = "XPM_TORCH_SIMULATED_MEMORY";

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SimulatedSpec {
    capacity: u64,
    formula_terms: Vec<crate::config::FormulaTerm>,
    coefficients: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    ranks: Option<Vec<u64>>,
}

fn simulated(text: &str) -> Result<Option<Box<dyn MemoryProbe>>> {
    let what = |m: String| Error::config(SIMULATED_MEMORY_ENV, m);
    let spec: SimulatedSpec = serde_json::from_str(text).map_err(|e| what(e.to_string()))?;
    let rank: u64 = std::env::var("RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    if spec.ranks.as_ref().is_some_and(|r| !r.contains(&rank)) {
        return Ok(None);
    }
    let names: Vec<String> = spec.coefficients.keys().cloned().collect();
    let formula = crate::batching::Formula::new(
        &spec.formula_terms,
        &names,
        &["bs".into(), "l".into()],
        SIMULATED_MEMORY_ENV,
    )?;
    let mut truth = crate::batching::CostModel::new(formula, "bs", SIMULATED_MEMORY_ENV)?;
    // Sorted by name, as the model orders them, then the slot of the coefficient-free part.
    let mut values: Vec<f64> = spec.coefficients.values().copied().collect();
    values.push(1.0);
    truth.set_coefficients(values)?;
    Ok(Some(Box::new(SimulatedDevice::new(
        spec.capacity,
        0,
        truth,
        0.0,
        rank,
    ))))
}

/// The memory probe of `device`: libtorch's allocator on CUDA, the process's resident memory
/// on the CPU — or the simulated device [`SIMULATED_MEMORY_ENV`] describes.
pub(crate) fn memory_probe(device: Device) -> Result<Box<dyn MemoryProbe>> {
    if let Ok(text) = std::env::var(SIMULATED_MEMORY_ENV) {
        if let Some(probe) = simulated(&text)? {
            return Ok(probe);
        }
    }
    Ok(match device {
        Device::Cuda(index) => Box::new(CudaMemory::new(index)?),
        _ => Box::new(CpuMemory::new(None)?),
    })
}

#[cfg(test)]
#[path = "micro_tests.rs"]
mod tests;
