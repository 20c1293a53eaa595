//! [`TrainerContext`]: the state the trainers, hooks and listeners of a run share (position,
//! epoch metrics and scopes, TensorBoard writer, loss scale, agreement between ranks).

use std::collections::BTreeMap;
use std::path::PathBuf;

use tch::Tensor;

use super::Metrics;
use crate::logging::EventWriter;
use crate::Result;

/// What the trainers, hooks and listeners of a run share: the position in the run, the
/// metrics of the current epoch, metric scopes and the TensorBoard writer.
pub struct TrainerContext {
    /// Current epoch, from 1 (0 before the first).
    pub epoch: u64,
    /// Optimizer steps taken so far.
    pub step: u64,
    metrics: Metrics,
    scopes: Vec<String>,
    writer: Option<EventWriter>,
    logdir: Option<PathBuf>,
    loss_scale: Option<Tensor>,
    warnings: Vec<String>,
    agreement: Option<Agreement>,
}

/// How the ranks of a distributed run agree on a branch: whether any rank passed `true`.
pub type Agreement = Box<dyn Fn(bool) -> Result<bool>>;

impl TrainerContext {
    /// A context before the first epoch; TensorBoard logs go to `logdir` when given.
    pub fn new(logdir: Option<PathBuf>) -> Self {
        TrainerContext {
            epoch: 0,
            step: 0,
            metrics: Metrics::default(),
            scopes: Vec::new(),
            writer: None,
            logdir,
            loss_scale: None,
            warnings: Vec::new(),
            agreement: None,
        }
    }

    /// Makes [`TrainerContext::any_rank`] ask every rank (distributed runs).
    pub fn set_agreement(&mut self, agreement: Agreement) {
        self.agreement = Some(agreement);
    }

    /// Whether any rank passed `true`: `flag` itself in a lone process. Every rank must call it
    /// at the same point, or the run hangs until the collective times out.
    ///
    /// # Errors
    /// When a peer died or hung.
    pub fn any_rank(&self, flag: bool) -> Result<bool> {
        match &self.agreement {
            Some(agree) => agree(flag),
            None => Ok(flag),
        }
    }

    /// Something the user should know that does not stop the run; the loop reports it.
    pub fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }

    /// The warnings given since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The metrics so far, to roll back to (see [`TrainerContext::metrics_rollback`]).
    pub fn metrics_mark(&self) -> Metrics {
        self.metrics.mark()
    }

    /// Forgets the metrics added since `mark` was taken (a replayed batch).
    pub fn metrics_rollback(&mut self, mark: &Metrics) {
        self.metrics = mark.mark();
    }

    /// Runs `f` with metrics of its own, then restores those of the run: what `f` records
    /// (probe batches) never reaches the logs.
    ///
    /// # Errors
    /// What `f` returns.
    pub fn sandboxed<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let saved = std::mem::take(&mut self.metrics);
        let result = f(self);
        self.metrics = saved;
        result
    }

    /// Multiplies every backpropagated loss by `scale` (a loss scaler's, updated in place).
    pub fn set_loss_scale(&mut self, scale: Option<Tensor>) {
        self.loss_scale = scale;
    }

    /// Backpropagates `loss`, multiplied by the loss scale when the run has one (`16-mixed`).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn backward(&self, loss: &Tensor) -> Result<()> {
        match &self.loss_scale {
            Some(scale) => loss.f_mul(scale)?.f_backward()?,
            None => loss.f_backward()?,
        }
        Ok(())
    }

    fn scoped(&self, key: &str) -> String {
        if self.scopes.is_empty() {
            key.to_string()
        } else {
            format!("{}/{key}", self.scopes.join("/"))
        }
    }

    /// Adds a count-weighted metric of the current epoch, under the current scopes.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn add_metric(&mut self, key: &str, sum: &Tensor, count: i64) -> Result<()> {
        let key = self.scoped(key);
        self.metrics.add(&key, sum, count)
    }

    /// Adds a plain value (one observation per step) under the current scopes.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn add_value(&mut self, key: &str, value: f64) -> Result<()> {
        let key = self.scoped(key);
        self.metrics.add_value(&key, value, 1)
    }

    /// Runs `f` with `name` pushed on the metric scopes.
    ///
    /// # Errors
    /// Whatever `f` returns.
    pub fn in_scope<T>(&mut self, name: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.scopes.push(name.to_string());
        let result = f(self);
        self.scopes.pop();
        result
    }

    /// Starts a new epoch's metrics, returning the finished epoch's means.
    ///
    /// # Errors
    /// A libtorch error while reading sums.
    pub fn take_metrics(&mut self) -> Result<BTreeMap<String, f64>> {
        std::mem::take(&mut self.metrics).means()
    }

    /// The current epoch's metrics so far, for a checkpoint taken inside the epoch.
    ///
    /// # Errors
    /// A libtorch error while reading sums.
    pub fn metrics_snapshot(&self) -> Result<BTreeMap<String, (f64, i64)>> {
        self.metrics.snapshot()
    }

    /// Continues the current epoch's metrics from a snapshot.
    pub fn restore_metrics(&mut self, snapshot: &BTreeMap<String, (f64, i64)>) {
        self.metrics = Metrics::from_snapshot(snapshot);
    }

    /// Logs a scalar to TensorBoard (created on first use) at the current step.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the event file cannot be written.
    pub fn log_scalar(&mut self, tag: &str, value: f64) -> Result<()> {
        let Some(dir) = &self.logdir else {
            return Ok(());
        };
        if self.writer.is_none() {
            self.writer = Some(EventWriter::create(dir)?);
        }
        match &mut self.writer {
            Some(w) => w.add_scalar(tag, value, self.step),
            None => Ok(()),
        }
    }

    /// Flushes the TensorBoard file.
    ///
    /// # Errors
    /// [`crate::Error::Io`].
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}
