//! [`learn`]: a whole training run on the calling thread: joining the ranks, resuming from the
//! newest complete checkpoint (`run/resume.rs`), the epoch loop with its steps (`run/step.rs`),
//! validation, checkpoints and interruption.

mod resume;
mod step;
#[cfg(test)]
pub(super) mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tch::{Kind, Tensor};

use super::build::{js_hooks, JsHook, Run};
use super::checkpoint::{
    checkpoint_epoch, drop_training_state, save_checkpoint, tidy, CheckpointPolicy, Progress,
    RankState, INTERRUPTED,
};
use super::distributed::Distributed;
use super::listeners::{ListenerStatus, ListenerView};
use super::reproducibility::reproducibility_warnings;
use super::step_losses::StepLosses;
use super::{EpochReport, LearnOutput, Observer, RunStart, StepProgress, TrainerContext};
use crate::config::{JsTrainingHookKind, LearnerConfig};
use crate::data::Shard;
use crate::distributed::DistEnv;
use crate::models::draws_from_global_generator;
use crate::runtime::memory::{install_cpu_tensor_cache, release_free_heap, HeapTrimmer};
use crate::runtime::{GlobalGeneratorLease, Runtime};
use crate::{Error, Result};
use resume::{resume, Resumed, StartAt};

/// Runs a whole training on the calling thread, continuing from the newest complete checkpoint
/// in the learner's checkpoint directory when there is one.
///
/// With `fabric_config.strategy: "ddp"` and a launch environment of several ranks (`RANK`,
/// `WORLD_SIZE`, ... as set by `learn()` in TypeScript, torchrun or SLURM), this process joins
/// the others first and trains data-parallel; see `learner/distributed.rs` for what the ranks
/// share and that only rank 0 writes files.
///
/// The steps: [`Placement::join`] (runtime and ranks), the initialization hooks around
/// [`resume`] (build, restore) and [`Training::start`] (tidy the checkpoints, share the
/// weights, the trainer's context), the memory probes, then [`Training::epochs`], each epoch
/// [`Training::train_epoch`] (steps; an interruption checkpoints) and [`Training::end_epoch`]
/// (metrics, validation, the stop vote, the checkpoint [`CheckpointPolicy`] asks for), then,
/// the run done, [`Training::drop_training_state`] and [`Training::finish`].
///
/// # Errors
/// Configuration problems found while building, libtorch errors, non-finite losses or
/// gradients, observer errors, and [`Error::Cancelled`] when `cancel` is set (checked between
/// steps; a checkpoint is written first, so that running again resumes from there).
/// [`Error::Distributed`] when a rank fails or the rendezvous does.
pub fn learn(
    config: &LearnerConfig,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<LearnOutput> {
    let mut warnings = Vec::new();
    let placement = Placement::join(config, observer, &mut warnings)?;
    // Held for the whole run when the model draws from libtorch's default generators.
    let _lease = lease_global_generators(config, observer, &mut warnings);
    let (init_hooks, step_hooks): (Vec<_>, Vec<_>) = js_hooks(config)?
        .into_iter()
        .partition(|h| h.kind == JsTrainingHookKind::Initialization);
    call_hooks(observer, &init_hooks, "before", config, 0, 0)?;
    let resumed = resume(config, &placement, observer)?;
    let (mut training, at) =
        Training::start(config, placement, resumed, observer, warnings, step_hooks)?;
    // The models' dropout draws from this run's generators from now on.
    let _generators = training.run.random.activate();
    training.probe_memory()?;
    let step = training.ctx.step;
    call_hooks(training.observer, &init_hooks, "after", config, 0, step)?;
    training.report_start(&at)?;
    let fresh = at.epoch == 0 && at.steps_in_epoch == 0;
    if config.validate_at_start && fresh && training.output.start_metrics.is_none() {
        training.validate_start()?;
    }
    training.epochs(at, cancel)?;
    training.drop_training_state()?;
    Ok(training.finish())
}

/// Calls the TypeScript hooks `hooks` for `phase` at `epoch` and global step `step`.
fn call_hooks(
    observer: &mut dyn Observer,
    hooks: &[JsHook],
    phase: &str,
    config: &LearnerConfig,
    epoch: u64,
    step: u64,
) -> Result<()> {
    let progress = StepProgress {
        epoch,
        step,
        total_steps: config.max_epochs * config.steps_per_epoch,
    };
    for hook in hooks {
        observer.js_hook(&hook.key, phase, progress)?;
    }
    Ok(())
}

/// Passes `messages` on to the observer and keeps them for the run's output.
fn pass_on_warnings(observer: &mut dyn Observer, into: &mut Vec<String>, messages: Vec<String>) {
    for message in messages {
        observer.warning(&message);
        into.push(message);
    }
}

/// Where this process trains: its runtime, the ranks it trains with and its share of the data.
struct Placement {
    runtime: Runtime,
    dist: Rc<Distributed>,
    shard: Shard,
}

impl Placement {
    /// Applies the runtime on this (the training) thread, as the thread count is per thread,
    /// and joins the other ranks: before anything random-dependent is built, as the samplers
    /// need this rank's shard.
    fn join(
        config: &LearnerConfig,
        observer: &mut dyn Observer,
        warnings: &mut Vec<String>,
    ) -> Result<Self> {
        let local_rank = DistEnv::from_env().map_or(0, |env| env.local_rank);
        let (runtime, runtime_warnings) =
            Runtime::for_local_rank(&config.fabric_config, local_rank)?;
        pass_on_warnings(observer, warnings, runtime_warnings);
        runtime.apply()?;
        let (dist, dist_warnings) = Distributed::join(&config.fabric_config, runtime.device)?;
        pass_on_warnings(observer, warnings, dist_warnings);
        let shard = dist.shard()?;
        pass_on_warnings(
            observer,
            warnings,
            reproducibility_warnings(config, &runtime),
        );
        Ok(Placement {
            runtime,
            dist: Rc::new(dist),
            shard,
        })
    }
}

/// A run under way: what the steps and epochs read and change.
struct Training<'a> {
    config: &'a LearnerConfig,
    observer: &'a mut dyn Observer,
    policy: CheckpointPolicy,
    /// The checkpoints directory, when the run has one.
    root: Option<PathBuf>,
    dist: Rc<Distributed>,
    run: Run,
    ctx: TrainerContext,
    step_hooks: Vec<JsHook>,
    heap: HeapTrimmer,
    step_losses: StepLosses,
    output: LearnOutput,
    warnings: Vec<String>,
}

impl<'a> Training<'a> {
    /// Continues `resumed`: puts the checkpoints directory in order, gives every rank rank 0's
    /// weights and sets up the trainer's context; returns where the epoch loop starts.
    fn start(
        config: &'a LearnerConfig,
        placement: Placement,
        resumed: Resumed,
        observer: &'a mut dyn Observer,
        mut warnings: Vec<String>,
        step_hooks: Vec<JsHook>,
    ) -> Result<(Self, StartAt)> {
        let Resumed {
            mut run,
            progress,
            from,
            skipped,
        } = resumed;
        let skips = skipped
            .iter()
            .map(|(dir, err)| format!("skipped checkpoint {}: {err}", dir.display()));
        pass_on_warnings(observer, &mut warnings, skips.collect());
        let dist = placement.dist;
        dist.check_same_step(progress.step)?;
        let policy = CheckpointPolicy::of(config);
        let root = config.checkpointspath.as_ref().map(PathBuf::from);
        // Every rank has read the checkpoints: rank 0 may now move and delete some.
        let mut learned_model = None;
        if let Some(root) = root.as_deref().filter(|_| dist.is_writer()) {
            let tidied = tidy(root, from.as_deref(), &progress, &policy, &skipped)?;
            pass_on_warnings(observer, &mut warnings, tidied.warnings);
            learned_model = tidied.learned_model;
        }
        if let Some(message) = dist.broadcast_parameters(run.model.as_ref())? {
            pass_on_warnings(observer, &mut warnings, vec![message]);
        }
        if !dist.is_writer() {
            mute_listener_files(&mut run);
        }
        let ctx = trainer_context(config, &dist, &run, &progress);
        let at = StartAt::of(&progress)?;
        let step_losses = StepLosses::new(config.step_losses, progress.partial_step_losses);
        let output = LearnOutput {
            epochs: progress.history,
            listeners: Default::default(),
            learned_model,
            checkpoints: progress.checkpoints,
            stopped: progress.stopped,
            resumed_from: from.map(|d| d.display().to_string()),
            warnings: Vec::new(),
            start_metrics: progress.start_metrics,
            dropped_training_state: None,
        };
        // The run's CPU tensors from here on are reused step after step (see HeapTrimmer).
        install_cpu_tensor_cache()?;
        let training = Training {
            config,
            observer,
            policy,
            root,
            dist,
            run,
            ctx,
            step_hooks,
            heap: HeapTrimmer::new(std::time::Duration::from_secs(1)),
            step_losses,
            output,
            warnings,
        };
        Ok((training, at))
    }

    /// Memory probes run before the first step, in a sandbox: their batches never reach the
    /// logs, and their dropout draws are taken back (a resumed run probes again).
    fn probe_memory(&mut self) -> Result<()> {
        let before_probes = self.run.random.states()?;
        self.run
            .trainer
            .prepare(self.run.model.as_ref(), &mut self.ctx)?;
        self.run
            .random
            .restore(&before_probes, "the state before the memory probes")?;
        self.report_warnings();
        Ok(())
    }

    /// Tells the observer where the run starts and when the listeners will run.
    fn report_start(&mut self, at: &StartAt) -> Result<()> {
        let start = RunStart {
            epochs_done: at.epoch,
            step: self.ctx.step,
            total_steps: self.config.max_epochs * self.config.steps_per_epoch,
            listener_intervals: self.run.listeners.iter().map(|l| l.interval()).collect(),
            resumed_from: self.output.resumed_from.clone(),
            // A resumed run's model comes from its checkpoint.
            new_weights: match self.output.resumed_from {
                None => self.run.new_weights.clone(),
                Some(_) => Vec::new(),
            },
        };
        self.observer.on_start(&start)
    }

    /// Trains the epochs left from `at` (none once the run stopped early).
    fn epochs(&mut self, at: StartAt, cancel: &AtomicBool) -> Result<()> {
        let mut first_step = at.steps_in_epoch;
        let mut partial_loss = at.partial_loss;
        for epoch in self
            .policy
            .epochs_left(at.epoch, self.output.stopped.is_some())
        {
            let trained = self.train_epoch(epoch, first_step, partial_loss.take(), cancel)?;
            first_step = 0;
            if self.end_epoch(epoch, trained)? {
                break;
            }
        }
        Ok(())
    }

    /// The steps of `epoch` from `first_step` on, adding their losses to `loss_sum`. A
    /// cancellation the ranks agree on ends it with a checkpoint inside the epoch.
    fn train_epoch(
        &mut self,
        epoch: u64,
        first_step: u64,
        mut loss_sum: Option<Tensor>,
        cancel: &AtomicBool,
    ) -> Result<TrainedEpoch> {
        self.ctx.epoch = epoch;
        let started = Instant::now();
        for done in first_step..self.config.steps_per_epoch {
            let asked = cancel.load(Ordering::Relaxed);
            if self.dist.agree_to_stop(self.ctx.step, asked)? {
                return Err(self.interrupt(epoch, done, loss_sum.as_ref())?);
            }
            loss_sum = Some(self.step(epoch, done, loss_sum)?);
        }
        let steps_here = self.config.steps_per_epoch - first_step;
        Ok(TrainedEpoch {
            loss_sum,
            steps_per_second: steps_here as f64 / started.elapsed().as_secs_f64().max(1e-9),
        })
    }

    /// Ends the run inside `epoch` after `done` of its steps: checkpoints there (every rank
    /// takes part, rank 0 writes) and returns the error that says where.
    fn interrupt(&mut self, epoch: u64, done: u64, loss_sum: Option<&Tensor>) -> Result<Error> {
        let ranks = match &self.root {
            Some(_) => self.dist.gather_rank_states(RankState::of(&self.run)?)?,
            None => Vec::new(),
        };
        let at = Progress {
            epoch: epoch - 1,
            step: self.ctx.step,
            steps_in_epoch: done,
            partial_metrics: self.ctx.metrics_snapshot()?,
            partial_loss: loss_sum.map(|t| t.f_double_value(&[])).transpose()?,
            history: self.output.epochs.clone(),
            checkpoints: self.output.checkpoints.clone(),
            stopped: None,
            start_metrics: self.output.start_metrics.clone(),
            partial_step_losses: self.step_losses.values()?,
        };
        let root = self.root.as_deref().filter(|_| self.dist.is_writer());
        Ok(checkpoint_interruption(&self.run, &at, &ranks, root))
    }

    /// The end of `epoch`: its metrics, validation, the stop vote and the checkpoint the
    /// policy asks for; returns whether the run ends here.
    fn end_epoch(&mut self, epoch: u64, trained: TrainedEpoch) -> Result<bool> {
        let (loss, train) = self.epoch_metrics(epoch, &trained)?;
        let started = Instant::now();
        let validated = self.validate(epoch, &train)?;
        let validation_seconds = started.elapsed().as_secs_f64();
        let report = EpochReport {
            epoch,
            step: self.ctx.step,
            loss,
            train,
            metrics: validated.metrics,
            steps_per_second: trained.steps_per_second,
            validation_seconds,
            step_losses: self.step_losses.take()?,
        };
        self.observer.on_epoch(&report)?;
        self.output.epochs.push(report);
        let stop = self.vote(epoch, validated.status, validated.stoppers)?;
        let end = self.policy.at_epoch_end(epoch, stop);
        if end.save {
            self.checkpoint(epoch)?;
        }
        Ok(end.finished)
    }

    /// The epoch's loss and training metrics, averaged over the ranks (each saw an equal share
    /// of every batch), and logged.
    fn epoch_metrics(
        &mut self,
        epoch: u64,
        trained: &TrainedEpoch,
    ) -> Result<(f64, BTreeMap<String, f64>)> {
        let mut loss = match &trained.loss_sum {
            Some(sum) => {
                let sum = sum.f_to_kind(Kind::Double)?.f_double_value(&[])?;
                sum / self.config.steps_per_epoch as f64
            }
            None => f64::NAN,
        };
        let mut train = self.ctx.take_metrics()?;
        train.insert("iter_per_seconds".into(), trained.steps_per_second);
        train.insert(EPOCH_LOSS.into(), loss);
        self.dist.average_metrics(&mut train)?;
        loss = train.remove(EPOCH_LOSS).unwrap_or(loss);
        if !loss.is_finite() {
            return Err(Error::NonFinite {
                step: self.ctx.step,
                what: format!("the training loss of epoch {epoch} is {loss}"),
            });
        }
        for (key, value) in &train {
            self.ctx.log_scalar(&format!("train/{key}"), *value)?;
        }
        Ok((loss, train))
    }

    /// The validation before the first step: what each listener measures of the model the run
    /// starts from, logged at step 0 and kept in the output (no best, no vote).
    fn validate_start(&mut self) -> Result<()> {
        self.run.model.set_training(false);
        let mut metrics = BTreeMap::new();
        for listener in &mut self.run.listeners {
            let model = self.run.model.as_ref();
            metrics.extend(listener.measure(0, model, &mut self.ctx, self.observer)?);
        }
        self.run.model.set_training(true);
        self.report_warnings();
        for (tag, value) in &metrics {
            self.ctx.log_scalar(tag, *value)?;
        }
        self.ctx.flush()?;
        self.output.start_metrics = Some(metrics);
        Ok(())
    }

    /// Calls the listeners (the model in evaluation mode) and logs what they measured.
    fn validate(&mut self, epoch: u64, train: &BTreeMap<String, f64>) -> Result<Validated> {
        let view = ListenerView {
            epoch,
            step: self.ctx.step,
            train,
        };
        let mut validated = Validated {
            status: ListenerStatus::NoDecision,
            stoppers: Vec::new(),
            metrics: BTreeMap::new(),
        };
        self.run.model.set_training(false);
        // The blocks the steps keep for reuse have other sizes than the validation's: handed
        // back, they do not stay resident beside it and raise the run's peak.
        release_free_heap();
        for listener in &mut self.run.listeners {
            let model = self.run.model.as_ref();
            let call = listener.call(&view, model, &mut self.ctx, self.observer)?;
            if call.status == ListenerStatus::Stop {
                validated.stoppers.push(listener.id().to_string());
            }
            validated.status = validated.status.max(call.status);
            validated.metrics.extend(call.metrics);
        }
        self.run.model.set_training(true);
        self.report_warnings();
        for (tag, value) in &validated.metrics {
            self.ctx.log_scalar(tag, *value)?;
        }
        self.ctx.flush()?;
        Ok(validated)
    }

    /// Whether the ranks stop after `epoch`: every rank validated the same weights; agreeing
    /// still guards against a listener that decides from something rank-local (a TypeScript
    /// listener, a timer). Records why in the output.
    fn vote(
        &mut self,
        epoch: u64,
        status: ListenerStatus,
        mut stoppers: Vec<String>,
    ) -> Result<bool> {
        let stop = self.dist.any_flag(status == ListenerStatus::Stop)?;
        if stop && stoppers.is_empty() {
            stoppers.push("of another rank".to_string());
        }
        if stop {
            self.output.stopped = Some(format!(
                "stopped after epoch {epoch} by listener(s) {}",
                stoppers.join(", ")
            ));
        }
        Ok(stop)
    }

    /// Checkpoints the end of `epoch`, with the early stop when there was one. Every rank takes
    /// part: rank 0 saves each rank's sampler and generators.
    fn checkpoint(&mut self, epoch: u64) -> Result<()> {
        let Some(root) = self.root.as_deref() else {
            return Ok(());
        };
        let ranks = self.dist.gather_rank_states(RankState::of(&self.run)?)?;
        if !self.dist.is_writer() {
            return Ok(());
        }
        let at = Progress {
            epoch,
            step: self.ctx.step,
            history: self.output.epochs.clone(),
            stopped: self.output.stopped.clone(),
            start_metrics: self.output.start_metrics.clone(),
            ..Progress::default()
        };
        let bests: Vec<u64> = self
            .run
            .listeners
            .iter()
            .flat_map(|l| l.best_epochs())
            .collect();
        let published = checkpoint_epoch(&self.run, at, &ranks, root, &bests, &self.policy)?;
        self.output.learned_model = Some(published.learned_model);
        self.output.checkpoints = published.checkpoints;
        Ok(())
    }

    /// Once the run is done (its last epoch trained, or stopped early): drops the training state
    /// of the kept epoch checkpoints, which only resuming needs (rank 0, unless the Learner's
    /// `keep_training_state`), and records what went in the output.
    fn drop_training_state(&mut self) -> Result<()> {
        let Some(root) = self.root.as_deref().filter(|_| self.dist.is_writer()) else {
            return Ok(());
        };
        let kept: Vec<u64> = self.output.checkpoints.keys().copied().collect();
        let dropped = drop_training_state(root, &kept, &self.policy)?;
        pass_on_warnings(self.observer, &mut self.warnings, dropped.warnings);
        self.output.dropped_training_state = dropped.state;
        Ok(())
    }

    /// Passes on the warnings the trainers gave (out-of-memory replays, probes skipped, ...).
    fn report_warnings(&mut self) {
        let messages = self.ctx.take_warnings();
        pass_on_warnings(self.observer, &mut self.warnings, messages);
    }

    /// The run's output, with the listeners' results.
    fn finish(mut self) -> LearnOutput {
        self.output.listeners = self
            .run
            .listeners
            .iter()
            .map(|l| (l.id().to_string(), l.output()))
            .collect();
        self.output.warnings = self.warnings;
        self.output
    }
}

/// The trainer's context of a run continuing at `progress`: logs (rank 0's), the ranks'
/// agreement, the loss scale and the unfinished epoch's metrics.
fn trainer_context(
    config: &LearnerConfig,
    dist: &Rc<Distributed>,
    run: &Run,
    progress: &Progress,
) -> TrainerContext {
    let logdir = config.logpath.as_ref().filter(|_| dist.is_writer());
    let mut ctx = TrainerContext::new(logdir.map(PathBuf::from));
    if dist.world() > 1 {
        let group = dist.clone();
        ctx.set_agreement(Box::new(move |flag| group.any_flag(flag)));
    }
    ctx.set_loss_scale(run.scaler.as_ref().map(|s| s.scale().shallow_clone()));
    ctx.step = progress.step;
    ctx.restore_metrics(&progress.partial_metrics);
    ctx
}

/// What an epoch's steps leave for its end.
struct TrainedEpoch {
    /// The summed step losses (None when the epoch had no step).
    loss_sum: Option<Tensor>,
    steps_per_second: f64,
}

/// What the listeners said of an epoch.
struct Validated {
    /// Their combined vote.
    status: ListenerStatus,
    /// Those that voted to stop.
    stoppers: Vec<String>,
    /// What they measured, by tag.
    metrics: BTreeMap<String, f64>,
}

/// Takes the process-wide lease on libtorch's default generators when the model draws from
/// them, saying so when another run holds it and this one must wait.
fn lease_global_generators(
    config: &LearnerConfig,
    observer: &mut dyn Observer,
    warnings: &mut Vec<String>,
) -> Option<GlobalGeneratorLease> {
    if !draws_from_global_generator(&config.model) {
        return None;
    }
    Some(GlobalGeneratorLease::try_take().unwrap_or_else(|| {
        let message = "waiting for another run of this process to end: learner.model draws \
                       its dropout from libtorch's default random generator (a TorchScript \
                       module), which one run at a time seeds and checkpoints"
            .to_string();
        observer.warning(&message);
        warnings.push(message);
        GlobalGeneratorLease::take()
    }))
}

/// Saves the checkpoint of an interruption at `at` as `interrupted/` under `root` and returns
/// the error that ends the run and says where it is; [`Error::Cancelled`] without a `root` (no
/// checkpoints directory, or a rank other than 0), the saving's error when it fails.
fn checkpoint_interruption(
    run: &Run,
    at: &Progress,
    ranks: &[RankState],
    root: Option<&Path>,
) -> Error {
    let Some(root) = root else {
        return Error::Cancelled;
    };
    match save_checkpoint(run, at, ranks, &root.join(INTERRUPTED)) {
        Ok(()) => Error::Interrupted {
            step: at.step,
            checkpoint: root.join(INTERRUPTED).display().to_string(),
        },
        Err(err) => err,
    }
}

/// Where the epoch loss rides along with the training metrics while they are averaged over
/// the ranks (a name no metric takes).
const EPOCH_LOSS: &str = "\u{0}epoch-loss";

/// On ranks other than 0: listeners keep validating and voting, but write no best model and
/// no info file (rank 0 writes them).
fn mute_listener_files(run: &mut Run) {
    for listener in &mut run.listeners {
        listener.mute_files();
    }
}
