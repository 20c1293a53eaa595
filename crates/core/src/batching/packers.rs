//! Splitting an outer batch into micro-batches whose predicted memory cost fits a budget.
//! Packers see a batch only through its per-record dimensions ([`BatchDims`], read once per
//! batch), and return groups of record indices.

use super::cost::CostModel;
use super::dims::BatchDims;
use crate::config::AnyMicroBatchPacker;
use crate::{Error, Result};

/// A batch of records that can be split into sub-batches.
pub trait MicroBatchable: Sized {
    /// Number of records (not of tensors or keys).
    fn len(&self) -> usize;

    /// Whether the batch holds no record.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sub-batch of the records at `indices`, in that order.
    ///
    /// # Errors
    /// When building the sub-batch fails (e.g. a libtorch error).
    fn select(&self, indices: &[usize]) -> Result<Self>;
}

/// What a packer may use: the fitted model, the budget in bytes, and the size bounds.
#[derive(Debug, Clone, Copy)]
pub struct PackingLimits<'a> {
    /// The fitted memory model.
    pub model: &'a CostModel,
    /// Bytes a micro-batch may use.
    pub budget: f64,
    /// Largest micro-batch (the trainer's batch size).
    pub batch_size: usize,
    /// Smallest micro-batch of the uniform packer.
    pub min_batch_size: usize,
}

/// How an outer batch is packed into micro-batches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Packer {
    /// One size for the whole outer batch, from its dimensions; equal slices, the last may be
    /// short.
    #[default]
    Uniform,
    /// Greedy: records join the current micro-batch while its predicted cost fits, optionally
    /// visited by decreasing `sort_by` dimension.
    Adaptive {
        /// Dimension to sort records by, descending (stable).
        sort_by: Option<String>,
    },
}

impl Packer {
    /// The packer a configuration names.
    pub fn from_config(config: &AnyMicroBatchPacker) -> Self {
        match config {
            AnyMicroBatchPacker::UniformPacker(_) => Packer::Uniform,
            AnyMicroBatchPacker::AdaptivePacker(a) => Packer::Adaptive {
                sort_by: a.sort_by.clone(),
            },
        }
    }

    /// Groups of record indices of the batch whose per-record dimensions are `dims`, every
    /// record in exactly one group. A record that does not fit alone gets a group of its own
    /// and a warning.
    ///
    /// # Errors
    /// When dimensions lack a formula variable or the `sort_by` one, or the model is not
    /// fitted.
    pub fn pack(
        &self,
        dims: &BatchDims,
        limits: &PackingLimits<'_>,
        warn: &mut dyn FnMut(String),
    ) -> Result<Vec<Vec<usize>>> {
        if dims.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Packer::Uniform => uniform(dims, limits, warn),
            Packer::Adaptive { sort_by } => adaptive(dims, limits, sort_by.as_deref(), warn),
        }
    }
}

fn uniform(
    dims: &BatchDims,
    limits: &PackingLimits<'_>,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Vec<usize>>> {
    let n = dims.len();
    let all: Vec<usize> = (0..n).collect();
    let whole = dims.group(&all);
    let mut upper = limits.batch_size.min(n);
    if let Some(bs) = whole.get(limits.model.batch_size_variable()) {
        upper = upper.min(usize::try_from(*bs).unwrap_or(usize::MAX));
    }
    let lo = limits.min_batch_size;
    let choice = limits
        .model
        .choose_batch_size(&whole, limits.budget, lo, upper)?;
    if !choice.fits {
        let need = limits.model.predict_with_size(&whole, lo)?;
        warn(format!(
            "a micro-batch of {lo} record(s) with dimensions {whole:?} is predicted to need {need:.0} \
             bytes, over the budget of {:.0} bytes; using {lo} anyway (it may run out of memory)",
            limits.budget
        ));
    }
    let size = choice.size.max(1);
    Ok(all.chunks(size).map(<[usize]>::to_vec).collect())
}

fn adaptive(
    dims: &BatchDims,
    limits: &PackingLimits<'_>,
    sort_by: Option<&str>,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Vec<usize>>> {
    let n = dims.len();
    let mut order: Vec<usize> = (0..n).collect();
    if let Some(key) = sort_by {
        let mut keys = Vec::with_capacity(n);
        for i in 0..n {
            let d = dims.group(&[i]);
            let Some(v) = d.get(key) else {
                return Err(Error::config(
                    format!("{}.packer.sort_by", limits.model.path()),
                    format!("the record dimensions {d:?} have no \"{key}\" to sort by"),
                ));
            };
            keys.push(*v);
        }
        order.sort_by(|a, b| keys[*b].cmp(&keys[*a]));
    }
    let fits = |group: &[usize]| -> Result<(bool, f64)> {
        if group.len() > limits.batch_size {
            return Ok((false, f64::INFINITY));
        }
        let d = dims.group(group);
        let cost = limits.model.predict_with_size(&d, group.len())?;
        Ok((cost <= limits.budget, cost))
    };
    let mut groups = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        current.push(i);
        if fits(&current)?.0 {
            continue;
        }
        current.pop();
        if !current.is_empty() {
            groups.push(std::mem::take(&mut current));
        }
        let (alone, cost) = fits(&[i])?;
        if alone {
            current.push(i);
        } else {
            warn(format!(
                "record {i} alone is predicted to need {cost:.0} bytes, over the budget of {:.0} \
                 bytes: it gets a micro-batch of its own (it may run out of memory)",
                limits.budget
            ));
            groups.push(vec![i]);
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    Ok(groups)
}

#[cfg(test)]
#[path = "packers_tests.rs"]
pub(crate) mod tests;
