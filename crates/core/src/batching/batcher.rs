//! Batchers: how a trainer's outer batch becomes micro-batches. `Plain` never splits;
//! `PowerAdaptative` shrinks the micro-batch after running out of memory and replays the outer
//! batch; `Predictive` probes memory once, fits a cost model and packs each outer batch to fit
//! the memory budget.
//!
//! The caller's closure receives each micro-batch with the record count of the whole outer
//! batch: normalising losses by that count makes any split give the gradients of no split.

use super::cost::{CostModel, Dims};
use super::dims::{BatchDims, DimsProvider};
use super::formula::Formula;
use super::packers::{MicroBatchable, Packer, PackingLimits};
use crate::config::{AnyBatcher, PredictiveBatcherConfig};
use crate::error::TorchMessage;
use crate::runtime::memory::{is_out_of_memory, MemoryProbe};
use crate::{Error, Result};

/// What processing one outer batch took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchReport {
    /// Micro-batches that ran to completion (a replayed batch counts only its last attempt).
    pub micro_batches: usize,
    /// Out-of-memory errors recovered from by shrinking and replaying.
    pub out_of_memory: usize,
}

/// The micro-batch sizes of the power-adaptative batcher: from `max`, the divider grows until
/// `max / divider` changes, so 16 gives 8, 5, 4, 3, 2, 1 and then nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shrinker {
    max: usize,
    divider: usize,
    size: usize,
}

impl Shrinker {
    /// Starts at `max` (at least 1).
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Shrinker {
            max,
            divider: 1,
            size: max,
        }
    }

    /// The current micro-batch size.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The next smaller size, or `None` once size 1 has failed.
    pub fn shrink(&mut self) -> Option<usize> {
        if self.size == 0 {
            return None;
        }
        while self.max / self.divider == self.size {
            self.divider += 1;
        }
        self.size = self.max / self.divider;
        (self.size > 0).then_some(self.size)
    }
}

/// The predictive batcher's settings and fitted model.
#[derive(Debug, Clone)]
struct Predictive {
    model: CostModel,
    packer: Packer,
    memory_fraction: f64,
    extra_overhead_bytes: u64,
    min_batch_size: usize,
    /// Probe points, sorted so every run probes in the same order.
    probes: Vec<Dims>,
}

impl Predictive {
    fn from_config(config: &PredictiveBatcherConfig, path: &str) -> Result<Self> {
        let formula = Formula::new(
            &config.formula_terms,
            &config.coefficient_names,
            &config.variable_names,
            path,
        )?;
        let model = CostModel::new(formula, &config.batch_size_variable, path)?;
        let probes_path = format!("{path}.dims_provider.probe_dims");
        let probe_dims = config
            .dims_provider
            .probe_dims(&format!("{path}.dims_provider"))?;
        if probe_dims.is_empty() {
            return Err(Error::config(
                probes_path,
                "probe_dims is empty: give at least one probe point",
            ));
        }
        let mut variables = config.variable_names.clone();
        variables.sort();
        variables.dedup();
        let mut probes = Vec::new();
        for (i, point) in probe_dims.iter().enumerate() {
            let keys: Vec<&String> = point.values.keys().collect();
            if keys.iter().copied().ne(variables.iter()) {
                return Err(Error::config(
                    format!("{probes_path}[{i}]"),
                    format!("probe variables {keys:?} don't match formula variables {variables:?}"),
                ));
            }
            probes.push(point.values.clone());
        }
        probes.sort();
        Ok(Predictive {
            model,
            packer: Packer::from_config(&config.packer),
            memory_fraction: config.memory_fraction,
            extra_overhead_bytes: config.extra_overhead_bytes,
            min_batch_size: usize::try_from(config.min_batch_size)
                .unwrap_or(usize::MAX)
                .max(1),
            probes,
        })
    }
}

#[derive(Debug, Clone)]
enum Strategy {
    Plain,
    PowerAdaptative(Shrinker),
    Predictive(Box<Predictive>),
}

/// Splits outer batches into micro-batches, as its configuration says.
pub struct Batcher {
    batch_size: usize,
    memory: Box<dyn MemoryProbe>,
    strategy: Strategy,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("batch_size", &self.batch_size)
            .field("memory", &self.memory.describe())
            .field("strategy", &self.strategy)
            .finish()
    }
}

impl Batcher {
    /// The batcher `config` describes (at config path `path`) for outer batches of at most
    /// `batch_size` records, measuring memory with `memory`.
    ///
    /// # Errors
    /// A predictive configuration that is invalid: bad formula terms, unknown batch-size variable,
    /// no probe point, probe points not over the formula's variables, or a memory fraction
    /// outside (0, 1].
    pub fn new(
        config: &AnyBatcher,
        batch_size: usize,
        memory: Box<dyn MemoryProbe>,
        path: &str,
    ) -> Result<Self> {
        let strategy = match config {
            AnyBatcher::Batcher(_) => Strategy::Plain,
            AnyBatcher::PowerAdaptativeBatcher(_) => {
                Strategy::PowerAdaptative(Shrinker::new(batch_size))
            }
            AnyBatcher::PredictiveBatcher(p) => {
                Strategy::Predictive(Box::new(Predictive::from_config(p, path)?))
            }
        };
        Ok(Batcher {
            batch_size: batch_size.max(1),
            memory,
            strategy,
        })
    }

    /// The memory probe.
    pub fn memory(&mut self) -> &mut dyn MemoryProbe {
        self.memory.as_mut()
    }

    /// Whether [`Batcher::probe`] must run (or coefficients be set) before processing.
    pub fn needs_fit(&self) -> bool {
        matches!(&self.strategy, Strategy::Predictive(p) if !p.model.is_fitted())
    }

    /// The power-adaptative batcher's current micro-batch size.
    pub fn micro_batch_size(&self) -> Option<usize> {
        match &self.strategy {
            Strategy::PowerAdaptative(s) => Some(s.size()),
            _ => None,
        }
    }

    /// The predictive batcher's cost model.
    pub fn cost_model(&self) -> Option<&CostModel> {
        match &self.strategy {
            Strategy::Predictive(p) => Some(&p.model),
            _ => None,
        }
    }

    /// The fitted coefficients to broadcast from rank 0 (predictive batcher only).
    pub fn coefficients(&self) -> Option<&[f64]> {
        self.cost_model().and_then(CostModel::coefficients)
    }

    /// Sets the coefficients received from rank 0.
    ///
    /// # Errors
    /// When this is not a predictive batcher or the vector has the wrong length.
    pub fn set_coefficients(&mut self, coefficients: Vec<f64>) -> Result<()> {
        match &mut self.strategy {
            Strategy::Predictive(p) => p.model.set_coefficients(coefficients),
            _ => Err(Error::config(
                "batcher",
                "only the PredictiveBatcher has memory cost coefficients",
            )),
        }
    }

    /// The memory budget of one micro-batch now: `free · memory_fraction − extra_overhead_bytes`,
    /// at least 0 (predictive batcher; infinite otherwise).
    ///
    /// # Errors
    /// When the memory probe cannot be read.
    pub fn budget(&mut self) -> Result<f64> {
        match &self.strategy {
            Strategy::Predictive(p) => {
                let free = self.memory.free_bytes()? as f64;
                Ok((free * p.memory_fraction - p.extra_overhead_bytes as f64).max(0.0))
            }
            _ => Ok(f64::INFINITY),
        }
    }

    /// Fits the predictive batcher's cost model: for each probe point in sorted order, `reset`
    /// (gradients to none), empty the cache, reset the peak, run `run_probe` (a forward and
    /// backward pass on a batch the caller builds for those dimensions) and observe the peak
    /// above what was allocated before. A probe that runs out of memory is skipped with a
    /// warning. `reset` runs once more at the end. Other batchers do nothing.
    ///
    /// # Errors
    /// A probe's error other than out-of-memory, a memory probe failure, or no probe fitting.
    pub fn probe(
        &mut self,
        mut run_probe: impl FnMut(&Dims) -> Result<()>,
        mut reset: impl FnMut() -> Result<()>,
        warn: &mut dyn FnMut(String),
    ) -> Result<()> {
        let Strategy::Predictive(p) = &mut self.strategy else {
            return Ok(());
        };
        let memory = self.memory.as_mut();
        for dims in &p.probes {
            reset()?;
            memory.empty_cache()?;
            memory.reset_peak()?;
            let start = memory.allocated_bytes()?;
            let outcome = if memory.charges_micro_batches() {
                memory
                    .before_micro_batch(dims)
                    .and_then(|()| run_probe(dims))
            } else {
                run_probe(dims)
            };
            match outcome {
                Ok(()) => {
                    let used = memory.peak_bytes()?.saturating_sub(start);
                    p.model.observe(dims, used as f64)?;
                }
                Err(e) if is_out_of_memory(&e) => {
                    warn(format!(
                        "memory probe {dims:?} ran out of memory on {} and is skipped: {e}",
                        memory.describe()
                    ));
                    memory.empty_cache()?;
                }
                Err(e) => return Err(e),
            }
        }
        reset()?;
        p.model.fit()
    }

    /// Runs `run` on the micro-batches of `batch`, each with the record count of the whole
    /// batch. `dims` is asked once, when the predictive batcher packs the batch or the memory
    /// probe charges micro-batches by their dimensions. On out-of-memory the power-adaptative batcher empties the cache, shrinks, calls
    /// `reset` (zero the gradients, drop the failed attempt's metrics) and replays the whole
    /// batch; other batchers let the error through.
    ///
    /// # Errors
    /// `run`'s errors, the predictive batcher used before fit/broadcast, out-of-memory at
    /// micro-batches of one record, or a memory probe failure.
    pub fn process<B: MicroBatchable>(
        &mut self,
        batch: &B,
        dims: &dyn DimsProvider<B>,
        run: impl FnMut(&B, usize) -> Result<()>,
        reset: impl FnMut() -> Result<()>,
        warn: &mut dyn FnMut(String),
    ) -> Result<BatchReport> {
        self.process_agreed(batch, dims, run, reset, warn, &mut Ok)
    }

    /// [`Batcher::process`] for one rank of several: after each attempt of the
    /// power-adaptative batcher, `agree(out_of_memory_here)` tells whether any rank ran out of
    /// memory (an all-reduced flag), and then every rank shrinks and replays together, so the
    /// ranks' collectives never fall out of step.
    ///
    /// # Errors
    /// As [`Batcher::process`], and `agree`'s errors.
    pub fn process_agreed<B: MicroBatchable>(
        &mut self,
        batch: &B,
        dims: &dyn DimsProvider<B>,
        mut run: impl FnMut(&B, usize) -> Result<()>,
        mut reset: impl FnMut() -> Result<()>,
        warn: &mut dyn FnMut(String),
        agree: &mut dyn FnMut(bool) -> Result<bool>,
    ) -> Result<BatchReport> {
        let n = batch.len();
        if n == 0 {
            return Ok(BatchReport::default());
        }
        // Without a predictive batcher, only a memory probe that charges micro-batches by their
        // dimensions needs them.
        let charged = if self.memory.charges_micro_batches() {
            Some(read_dims(batch, dims)?)
        } else {
            None
        };
        match &mut self.strategy {
            Strategy::Plain => {
                let all: Vec<usize> = (0..n).collect();
                run_groups(
                    batch,
                    charged.as_ref(),
                    &[all],
                    self.memory.as_mut(),
                    &mut run,
                )?;
                Ok(BatchReport {
                    micro_batches: 1,
                    out_of_memory: 0,
                })
            }
            Strategy::PowerAdaptative(shrinker) => shrinking(
                batch,
                charged.as_ref(),
                shrinker,
                self.memory.as_mut(),
                (&mut run, &mut reset),
                warn,
                agree,
            ),
            Strategy::Predictive(p) => {
                let dims = match charged {
                    Some(dims) => dims,
                    None => read_dims(batch, dims)?,
                };
                predicted(
                    batch,
                    &dims,
                    p,
                    self.batch_size,
                    self.memory.as_mut(),
                    &mut run,
                    warn,
                )
            }
        }
    }
}

/// The power-adaptative strategy: the whole batch in micro-batches of the shrinker's size,
/// replayed with smaller ones after an out-of-memory error on any rank (`agree`).
fn shrinking<B: MicroBatchable>(
    batch: &B,
    charged: Option<&BatchDims>,
    shrinker: &mut Shrinker,
    memory: &mut dyn MemoryProbe,
    (run, reset): (
        &mut impl FnMut(&B, usize) -> Result<()>,
        &mut impl FnMut() -> Result<()>,
    ),
    warn: &mut dyn FnMut(String),
    agree: &mut dyn FnMut(bool) -> Result<bool>,
) -> Result<BatchReport> {
    let n = batch.len();
    let mut out_of_memory = 0;
    loop {
        let size = shrinker.size();
        let groups: Vec<Vec<usize>> = (0..n)
            .collect::<Vec<_>>()
            .chunks(size)
            .map(<[usize]>::to_vec)
            .collect();
        let error = match run_groups(batch, charged, &groups, memory, run) {
            Ok(()) => None,
            Err(e) if is_out_of_memory(&e) => Some(e),
            Err(e) => return Err(e),
        };
        if !agree(error.is_some())? {
            return Ok(BatchReport {
                micro_batches: groups.len(),
                out_of_memory,
            });
        }
        let here = error.is_some();
        let cause = error.map_or_else(
            || "another rank ran out of memory".to_string(),
            |e| e.to_string(),
        );
        out_of_memory += 1;
        memory.empty_cache()?;
        let Some(smaller) = shrinker.shrink() else {
            return Err(Error::Torch(TorchMessage(format!(
                "{cause} — the PowerAdaptativeBatcher ran out of memory even with \
                 micro-batches of 1 record: reduce the model or the records, \
                 or use a device with more memory"
            ))));
        };
        let place = if here {
            memory.describe()
        } else {
            "another rank".to_string()
        };
        warn(format!(
            "out of memory with micro-batches of {size} record(s) on {place}: \
             replaying the batch with micro-batches of {smaller}"
        ));
        reset()?;
    }
}

/// The predictive strategy: micro-batches packed to fit the memory the cost model predicts.
fn predicted<B: MicroBatchable>(
    batch: &B,
    dims: &BatchDims,
    p: &mut Predictive,
    batch_size: usize,
    memory: &mut dyn MemoryProbe,
    run: &mut impl FnMut(&B, usize) -> Result<()>,
    warn: &mut dyn FnMut(String),
) -> Result<BatchReport> {
    p.model.ensure_fitted()?;
    let free = memory.free_bytes()? as f64;
    let budget = (free * p.memory_fraction - p.extra_overhead_bytes as f64).max(0.0);
    let limits = PackingLimits {
        model: &p.model,
        budget,
        batch_size,
        min_batch_size: p.min_batch_size,
    };
    let groups = p.packer.pack(dims, &limits, warn)?;
    run_groups(batch, Some(dims), &groups, memory, run)?;
    Ok(BatchReport {
        micro_batches: groups.len(),
        out_of_memory: 0,
    })
}

/// The per-record dimensions of `batch`, checked to cover all its records.
fn read_dims<B: MicroBatchable>(batch: &B, dims: &dyn DimsProvider<B>) -> Result<BatchDims> {
    let read = dims.batch_dims(batch)?;
    if read.len() != batch.len() {
        return Err(Error::Callback(format!(
            "the dims provider gave the dimensions of {} records for a batch of {}",
            read.len(),
            batch.len()
        )));
    }
    Ok(read)
}

/// Runs `run` on each group's sub-batch (the batch itself when a group is all of it, in order).
fn run_groups<B: MicroBatchable>(
    batch: &B,
    dims: Option<&BatchDims>,
    groups: &[Vec<usize>],
    memory: &mut dyn MemoryProbe,
    run: &mut impl FnMut(&B, usize) -> Result<()>,
) -> Result<()> {
    let n = batch.len();
    for group in groups {
        if let Some(dims) = dims.filter(|_| memory.charges_micro_batches()) {
            memory.before_micro_batch(&dims.group(group))?;
        }
        let whole = group.len() == n && group.iter().enumerate().all(|(i, r)| i == *r);
        if whole {
            run(batch, n)?;
        } else {
            run(&batch.select(group)?, n)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "batcher_tests.rs"]
mod tests;
