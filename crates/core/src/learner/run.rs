use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tch::{Kind, Tensor};

use super::build::{build, js_hooks, Run};
use super::checkpoint::{
    checkpoint_dirs, checkpoint_epoch, load_checkpoint, recorded_step, save_checkpoint, save_due,
    tidy, Progress, RankState, INTERRUPTED,
};
use super::distributed::Distributed;
use super::listeners::{ListenerStatus, ListenerView};
use super::reproducibility::reproducibility_warnings;
use super::{EpochReport, LearnOutput, Observer, StepProgress, TrainerContext};
use crate::batching::memory::HeapTrimmer;
use crate::config::{JsHookKind, LearnerConfig};
use crate::data::Shard;
use crate::models::draws_from_global_generator;
use crate::runtime::{GlobalGeneratorLease, Runtime};
use crate::{Error, Result};

/// Runs a whole training on the calling thread, continuing from the newest complete checkpoint
/// in the learner's checkpoint directory when there is one.
///
/// With `fabric_config.strategy: "ddp"` and a launch environment of several ranks (`RANK`,
/// `WORLD_SIZE`, ... as set by `learn()` in TypeScript, torchrun or SLURM), this process joins
/// the others first and trains data-parallel; see `learner/distributed.rs` for what the ranks
/// share and that only rank 0 writes files.
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
    let checkpoints = config.checkpointspath.as_ref().map(PathBuf::from);
    let mut warnings = Vec::new();
    let (runtime, runtime_warnings) = Runtime::from_config(&config.fabric_config)?;
    for message in runtime_warnings {
        observer.warning(&message);
        warnings.push(message);
    }
    // On this (the training) thread: the thread count is per thread.
    runtime.apply()?;
    // Before anything random-dependent is built: the samplers need this rank's shard.
    let (dist, dist_warnings) = Distributed::join(&config.fabric_config, runtime.device)?;
    let dist = std::rc::Rc::new(dist);
    for message in dist_warnings {
        observer.warning(&message);
        warnings.push(message);
    }
    let shard = dist.shard()?;
    for message in reproducibility_warnings(config, &runtime) {
        observer.warning(&message);
        warnings.push(message);
    }
    // Held for the whole run when the model draws from libtorch's default generators.
    let _lease = lease_global_generators(config, observer, &mut warnings);
    let hooks = js_hooks(config);
    let (init_hooks, step_hooks): (Vec<_>, Vec<_>) = hooks
        .iter()
        .partition(|h| h.kind == JsHookKind::Initialization);
    let start = StepProgress {
        epoch: 0,
        step: 0,
        total_steps: config.max_epochs * config.steps_per_epoch,
    };
    for hook in &init_hooks {
        observer.js_hook(&hook.key, "before", start)?;
    }
    let (mut run, progress, resumed, skipped) =
        resume(config, &runtime, shard, checkpoints.as_deref(), observer)?;
    for (dir, err) in &skipped {
        let message = format!("skipped checkpoint {}: {err}", dir.display());
        observer.warning(&message);
        warnings.push(message);
    }
    dist.check_same_step(progress.step)?;
    // Every rank has read the checkpoints: rank 0 may now move and delete some.
    let mut learned_model = None;
    if let Some(root) = checkpoints.as_deref().filter(|_| dist.is_writer()) {
        let tidied = tidy(
            root,
            resumed.as_deref(),
            &progress,
            config.checkpoint_keep,
            &skipped,
        )?;
        for message in tidied.warnings {
            observer.warning(&message);
            warnings.push(message);
        }
        learned_model = tidied.learned_model;
    }
    let resumed_from = resumed.map(|d| d.display().to_string());
    if let Some(message) = dist.broadcast_parameters(run.model.as_ref())? {
        observer.warning(&message);
        warnings.push(message);
    }
    if !dist.is_writer() {
        mute_listener_files(&mut run);
    }
    let logdir = config.logpath.as_ref().filter(|_| dist.is_writer());
    let mut ctx = TrainerContext::new(logdir.map(PathBuf::from));
    if dist.world() > 1 {
        let group = dist.clone();
        ctx.set_agreement(Box::new(move |flag| group.any_flag(flag)));
    }
    ctx.set_loss_scale(run.scaler.as_ref().map(|s| s.scale().shallow_clone()));
    ctx.step = progress.step;
    ctx.restore_metrics(&progress.partial_metrics);
    // The models' dropout draws from this run's generators from now on.
    let _generators = run.random.activate();
    // Memory probes run before the first step, in a sandbox: their batches never reach the logs,
    // and their dropout draws are taken back (a resumed run probes again).
    let before_probes = run.random.states()?;
    run.trainer.prepare(run.model.as_ref(), &mut ctx)?;
    run.random
        .restore(&before_probes, "the state before the memory probes")?;
    report_warnings(&mut ctx, observer, &mut warnings);
    for hook in &init_hooks {
        observer.js_hook(
            &hook.key,
            "after",
            StepProgress {
                step: ctx.step,
                ..start
            },
        )?;
    }
    let total_steps = config.max_epochs * config.steps_per_epoch;
    let mut output = LearnOutput {
        epochs: progress.history,
        listeners: Default::default(),
        learned_model,
        checkpoints: progress.checkpoints,
        stopped: None,
        resumed_from,
        warnings: Vec::new(),
    };
    let mut first_step = progress.steps_in_epoch;
    let mut partial_loss = match progress.partial_loss {
        Some(v) => Some(Tensor::f_from_slice(&[v as f32])?.f_squeeze()?),
        None => None,
    };
    let mut heap = HeapTrimmer::new(std::time::Duration::from_secs(1));
    for epoch in progress.epoch + 1..=config.max_epochs {
        ctx.epoch = epoch;
        let started = Instant::now();
        let mut loss_sum = partial_loss.take();
        for done in first_step..config.steps_per_epoch {
            if dist.agree_to_stop(ctx.step, cancel.load(Ordering::Relaxed))? {
                let ranks = match &checkpoints {
                    Some(_) => dist.gather_rank_states(RankState::of(&run)?)?,
                    None => Vec::new(),
                };
                let at = Progress {
                    epoch: epoch - 1,
                    step: ctx.step,
                    steps_in_epoch: done,
                    partial_metrics: ctx.metrics_snapshot()?,
                    partial_loss: loss_sum
                        .as_ref()
                        .map(|t| t.f_double_value(&[]))
                        .transpose()?,
                    history: output.epochs.clone(),
                    checkpoints: output.checkpoints.clone(),
                };
                let root = checkpoints.as_deref().filter(|_| dist.is_writer());
                return Err(interrupt(&run, &at, &ranks, root));
            }
            let before = StepProgress {
                epoch,
                step: ctx.step,
                total_steps,
            };
            for hook in &step_hooks {
                observer.js_hook(&hook.key, "before", before)?;
            }
            let loss = train_step(&mut run, &mut ctx, &dist)?;
            heap.after_step();
            report_warnings(&mut ctx, observer, &mut warnings);
            loss_sum = Some(match loss_sum {
                Some(sum) => sum.f_add(&loss)?,
                None => loss,
            });
            let after = StepProgress {
                epoch,
                step: ctx.step,
                total_steps,
            };
            for hook in &step_hooks {
                observer.js_hook(&hook.key, "after", after)?;
            }
            let running_loss = match (&loss_sum, observer.wants_running_loss()) {
                (Some(sum), true) => {
                    Some(sum.f_to_kind(Kind::Double)?.f_double_value(&[])? / (done + 1) as f64)
                }
                _ => None,
            };
            observer.on_step_with_loss(after, running_loss)?;
        }
        let steps_here = config.steps_per_epoch - first_step;
        first_step = 0;
        let steps_per_second = steps_here as f64 / started.elapsed().as_secs_f64().max(1e-9);
        let mut loss = match &loss_sum {
            Some(sum) => {
                sum.f_to_kind(Kind::Double)?.f_double_value(&[])? / config.steps_per_epoch as f64
            }
            None => f64::NAN,
        };
        let mut train = ctx.take_metrics()?;
        train.insert("iter_per_seconds".into(), steps_per_second);
        // Averaged over the ranks: each saw an equal share of every batch.
        train.insert(EPOCH_LOSS.into(), loss);
        dist.average_metrics(&mut train)?;
        loss = train.remove(EPOCH_LOSS).unwrap_or(loss);
        if !loss.is_finite() {
            return Err(Error::NonFinite {
                step: ctx.step,
                what: format!("the training loss of epoch {epoch} is {loss}"),
            });
        }
        for (key, value) in &train {
            ctx.log_scalar(&format!("train/{key}"), *value)?;
        }

        let view = ListenerView {
            epoch,
            step: ctx.step,
            train: &train,
        };
        let mut status = ListenerStatus::NoDecision;
        let mut stoppers = Vec::new();
        let mut metrics = BTreeMap::new();
        run.model.set_training(false);
        for listener in &mut run.listeners {
            let call = listener.call(&view, run.model.as_ref(), &mut ctx, observer)?;
            if call.status == ListenerStatus::Stop {
                stoppers.push(listener.id().to_string());
            }
            status = status.max(call.status);
            metrics.extend(call.metrics);
        }
        run.model.set_training(true);
        report_warnings(&mut ctx, observer, &mut warnings);
        for (tag, value) in &metrics {
            ctx.log_scalar(tag, *value)?;
        }
        ctx.flush()?;

        let report = EpochReport {
            epoch,
            step: ctx.step,
            loss,
            train,
            metrics,
            steps_per_second,
        };
        observer.on_epoch(&report)?;
        output.epochs.push(report);
        // Every rank validated the same weights; agreeing still guards against a listener
        // that decides from something rank-local (a TypeScript listener, a timer).
        let stop = dist.any_flag(status == ListenerStatus::Stop)?;
        if stop && stoppers.is_empty() {
            stoppers.push("of another rank".to_string());
        }
        if stop {
            output.stopped = Some(format!(
                "stopped after epoch {epoch} by listener(s) {}",
                stoppers.join(", ")
            ));
        }
        let save = save_due(epoch, config.checkpoint_interval, config.max_epochs, stop);
        if let Some(root) = checkpoints.as_deref().filter(|_| save) {
            // Every rank takes part: rank 0 saves each rank's sampler and generators.
            let ranks = dist.gather_rank_states(RankState::of(&run)?)?;
            if dist.is_writer() {
                let at = Progress {
                    epoch,
                    step: ctx.step,
                    steps_in_epoch: 0,
                    partial_metrics: Default::default(),
                    partial_loss: None,
                    history: output.epochs.clone(),
                    checkpoints: Default::default(),
                };
                let bests: Vec<u64> = run.listeners.iter().flat_map(|l| l.best_epochs()).collect();
                let published =
                    checkpoint_epoch(&run, at, &ranks, root, &bests, config.checkpoint_keep)?;
                output.learned_model = Some(published.learned_model);
                output.checkpoints = published.checkpoints;
            }
        }
        if stop {
            break;
        }
    }
    output.listeners = run
        .listeners
        .iter()
        .map(|l| (l.id().to_string(), l.output()))
        .collect();
    output.warnings = warnings;
    Ok(output)
}

/// A checkpoint that failed to load, and why.
type Skipped = Vec<(PathBuf, Error)>;

/// Builds the run and restores the newest checkpoint that loads; returns the run, its progress,
/// the checkpoint it resumed from, and those that failed to load (damaged or not fitting: never
/// deleted, see [`tidy`]).
fn resume(
    config: &LearnerConfig,
    runtime: &Runtime,
    shard: Shard,
    root: Option<&Path>,
    observer: &mut dyn Observer,
) -> Result<(Run, Progress, Option<PathBuf>, Skipped)> {
    let js = observer.js_data();
    let mut run = build(config, runtime, shard, &js)?;
    let empty = Progress {
        epoch: 0,
        step: 0,
        steps_in_epoch: 0,
        partial_metrics: Default::default(),
        partial_loss: None,
        history: Vec::new(),
        checkpoints: Default::default(),
    };
    let mut skipped = Vec::new();
    let Some(root) = root else {
        return Ok((run, empty, None, skipped));
    };
    let mut candidates: Vec<(u64, PathBuf)> = checkpoint_dirs(root)
        .into_iter()
        .map(|d| (recorded_step(&d), d))
        .collect();
    candidates.sort_by(|a, b| b.cmp(a));
    for (_, dir) in candidates {
        match load_checkpoint(&mut run, &dir, shard.rank) {
            Ok(progress) => return Ok((run, progress, Some(dir), skipped)),
            Err(err) => {
                skipped.push((dir, err));
                // A failed restore may have changed some of the run: start from a fresh one.
                run = build(config, runtime, shard, &js)?;
            }
        }
    }
    Ok((run, empty, None, skipped))
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

fn interrupt(run: &Run, at: &Progress, ranks: &[RankState], root: Option<&Path>) -> Error {
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

/// The metric of the loss scale (`train/gradient/scaler` once logged).
const SCALER_METRIC: &str = "gradient/scaler";

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

fn optimized_parameters(run: &Run) -> Vec<Tensor> {
    run.optimizers
        .parameter_groups()
        .flatten()
        .map(Tensor::shallow_clone)
        .collect()
}

/// Passes on the warnings the trainers gave (out-of-memory replays, probes skipped, ...).
fn report_warnings(ctx: &mut TrainerContext, observer: &mut dyn Observer, into: &mut Vec<String>) {
    for message in ctx.take_warnings() {
        observer.warning(&message);
        into.push(message);
    }
}

/// One optimizer step; returns the step's (detached) weighted loss. Under DDP the gradients
/// are averaged over the ranks right after the backward. With a loss scaler the gradients are
/// unscaled before the gradient hooks see them, and a step whose gradients are not finite (on
/// any rank) is skipped by all ranks (the schedules still advance).
fn train_step(run: &mut Run, ctx: &mut TrainerContext, dist: &Distributed) -> Result<Tensor> {
    run.optimizers.zero_grad()?;
    let loss = run.trainer.process_step(run.model.as_ref(), ctx)?;
    let distributed = dist.world() > 1;
    let params = if run.scaler.is_some() || !run.gradient_hooks.is_empty() || distributed {
        optimized_parameters(run)
    } else {
        Vec::new()
    };
    dist.average_gradients(&params)?;
    let finite = match &mut run.scaler {
        Some(scaler) => {
            ctx.add_value(SCALER_METRIC, scaler.scale_value()?)?;
            let local = scaler.unscale(&params)?;
            let finite = !dist.any_flag(!local)?;
            if local && !finite {
                scaler.record_non_finite()?;
            }
            scaler.update()?;
            finite
        }
        None => true,
    };
    if finite {
        for hook in &run.gradient_hooks {
            hook.apply(&params, ctx)?;
        }
    }
    let rates = if finite {
        run.optimizers.step()?
    } else {
        run.optimizers.skip()
    };
    for (key, lr) in run.lr_metrics.iter().zip(rates) {
        ctx.add_value(key, lr)?;
    }
    ctx.step += 1;
    Ok(loss)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::parse_learner;
    use crate::config::tests_support::{demo_config_json, scratch_dir};
    use crate::learner::NoObserver;

    /// Raises `flag` once step `steps` is done: a cancellation at a chosen step.
    pub(in crate::learner) struct CancelAfter<'a> {
        pub steps: u64,
        pub flag: &'a AtomicBool,
    }

    impl Observer for CancelAfter<'_> {
        fn on_step(&mut self, progress: StepProgress) -> Result<()> {
            if progress.step >= self.steps {
                self.flag.store(true, Ordering::Relaxed);
            }
            Ok(())
        }
    }

    fn config_in(dir: &Path) -> LearnerConfig {
        let json = demo_config_json().replace("/tmp/job", &dir.display().to_string());
        parse_learner(&json).unwrap()
    }

    fn run_demo(json: &str) -> LearnOutput {
        let dir = scratch_dir();
        let json = json.replace("/tmp/job", &dir.display().to_string());
        let config = parse_learner(&json).unwrap();
        learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn loss_falls_and_heldout_accuracy_rises() {
        let out = run_demo(&demo_config_json());
        assert_eq!(out.epochs.len(), 3);
        let first = &out.epochs[0];
        let last = &out.epochs[2];
        assert!(last.loss < first.loss, "{} !< {}", last.loss, first.loss);
        assert!(
            last.metrics["heldout/pairwise_accuracy"] > 0.8,
            "{:?}",
            last.metrics
        );
        assert_eq!(last.step, 60);
        assert!((last.train["pair-hinge"] - last.loss).abs() < 1e-6);
        assert!((last.train["gradient/scheduler/1/1"] - 0.01).abs() < 1e-12);
    }

    const ADAM: &str = r#"{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.01,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}"#;
    const ADAFACTOR: &str = r#"{"__xpmtype__":"xpm_torch.optim.Adafactor","weight_decay":0.0,"relative_step":true,
        "eps":[1e-30,1e-3],"clip_threshold":1.0,"decay_rate":-0.8,"scale_parameter":true,"warmup_init":false}"#;

    #[test]
    fn adafactor_with_relative_steps_trains_and_refuses_a_scheduler() {
        let json = demo_config_json().replace(ADAM, ADAFACTOR);
        assert_ne!(json, demo_config_json());
        let out = run_demo(&json);
        let (first, last) = (&out.epochs[0], &out.epochs[2]);
        assert!(last.loss < first.loss, "{} !< {}", last.loss, first.loss);
        // The logged rate is the relative step size, min(1e-2, 1/√t).
        assert!((last.train["gradient/scheduler/1/1"] - 1e-2).abs() < 1e-12);

        let scheduled = json.replace(
            r#""filter":"#,
            r#""scheduler":{"__xpmtype__":"xpm_torch.schedulers.CosineWithWarmup","num_warmup_steps":2,"num_cycles":0.5},"filter":"#,
        );
        let dir = scratch_dir();
        let config =
            parse_learner(&scheduled.replace("/tmp/job", &dir.display().to_string())).unwrap();
        let err = learn(&config, &mut NoObserver, &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("learner.optimizers[0].scheduler:"), "{err}");
    }

    #[test]
    fn same_seed_gives_identical_losses() {
        let a = run_demo(&demo_config_json());
        let b = run_demo(&demo_config_json());
        let losses = |o: &LearnOutput| {
            o.epochs
                .iter()
                .map(|e| e.loss.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(losses(&a), losses(&b));
    }

    #[test]
    fn cancellation_writes_a_checkpoint_and_resuming_matches_an_uninterrupted_run() {
        let whole = run_demo(&demo_config_json());
        let dir = scratch_dir();
        let config = config_in(&dir);
        let flag = AtomicBool::new(false);
        // Interrupted in the middle of the second epoch (20 steps per epoch).
        let err = learn(
            &config,
            &mut CancelAfter {
                steps: 27,
                flag: &flag,
            },
            &flag,
        )
        .unwrap_err();
        assert_eq!(err.code(), "ERR_INTERRUPTED");
        assert!(
            err.to_string()
                .starts_with("training was interrupted at step 27;"),
            "{err}"
        );
        let resumed = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
        assert!(resumed
            .resumed_from
            .as_ref()
            .unwrap()
            .ends_with("interrupted"));
        let model = |o: &LearnOutput| std::fs::read(o.learned_model.as_ref().unwrap()).unwrap();
        assert_eq!(model(&resumed), model(&whole));
        let losses = |o: &LearnOutput| {
            o.epochs
                .iter()
                .map(|e| e.loss.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(losses(&resumed), losses(&whole));
        assert!(!dir.join("checkpoints").join(INTERRUPTED).exists());
    }

    #[test]
    fn a_damaged_checkpoint_is_skipped_with_a_warning_and_kept() {
        let whole = run_demo(&demo_config_json());
        let dir = scratch_dir();
        let config = config_in(&dir);
        learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
        // Damage the newest checkpoint and forget the two after the first epoch.
        let root = dir.join("checkpoints");
        std::fs::remove_dir_all(root.join("epoch-00000002")).unwrap();
        let newest = root.join("epoch-00000003").join("model/model.safetensors");
        let bytes = std::fs::read(&newest).unwrap();
        std::fs::write(&newest, &bytes[..bytes.len() / 2]).unwrap();
        let resumed = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
        assert!(resumed
            .resumed_from
            .as_ref()
            .unwrap()
            .ends_with("epoch-00000001"));
        // The skip, then where the damaged checkpoint is kept.
        assert_eq!(resumed.warnings.len(), 2);
        assert!(resumed.warnings[1].contains("epoch-00000003.damaged"));
        assert!(
            resumed.warnings[0].contains("epoch-00000003")
                && resumed.warnings[0].contains("model/model.safetensors"),
            "{:?}",
            resumed.warnings
        );
        let model = |o: &LearnOutput| std::fs::read(o.learned_model.as_ref().unwrap()).unwrap();
        assert_eq!(model(&resumed), model(&whole));
    }

    /// The demo under another precision; the float32 matmul precision stays the one the other
    /// tests run with (it is process-wide and tests run in parallel).
    fn demo_in(precision: &str) -> String {
        demo_config_json().replace(
            "\"precision\":\"32-true\",",
            &format!("\"precision\":\"{precision}\",\"torch_fp32_precision\":\"high\","),
        )
    }

    #[test]
    fn bf16_mixed_still_reaches_the_demo_accuracy() {
        let out = run_demo(&demo_in("bf16-mixed"));
        let last = &out.epochs[2];
        assert!(
            last.metrics["heldout/pairwise_accuracy"] > 0.8,
            "{:?}",
            last.metrics
        );
        assert!(last.loss < out.epochs[0].loss);
        // Float32 master weights.
        let saved = Tensor::read_safetensors(out.learned_model.as_ref().unwrap()).unwrap();
        assert!(saved.iter().all(|(_, t)| t.kind() == Kind::Float));
        // Its losses differ from a float32 run's: autocast really changed the arithmetic.
        let fp32 = run_demo(&demo_config_json());
        assert_ne!(out.epochs[0].loss.to_bits(), fp32.epochs[0].loss.to_bits());
    }

    #[test]
    fn sixty_four_true_trains_and_saves_in_float64() {
        let out = run_demo(&demo_in("64-true"));
        let saved = Tensor::read_safetensors(out.learned_model.as_ref().unwrap()).unwrap();
        assert!(!saved.is_empty());
        assert!(saved.iter().all(|(_, t)| t.kind() == Kind::Double));
        assert!(out.epochs[2].metrics["heldout/pairwise_accuracy"] > 0.8);
        // The optimizer state follows the parameters.
        let dir = PathBuf::from(out.learned_model.unwrap());
        let checkpoint = dir.ancestors().nth(3).unwrap().join("epoch-00000003");
        let optimizer = Tensor::read_safetensors(checkpoint.join("optimizer.safetensors")).unwrap();
        let moments: Vec<Kind> = optimizer.iter().map(|(_, t)| t.kind()).collect();
        assert!(moments.contains(&Kind::Double), "{moments:?}");
    }

    #[test]
    fn a_legacy_precision_runs_with_a_deprecation_warning() {
        let json = demo_in("32").replace("\"max_epochs\":3", "\"max_epochs\":1");
        let out = run_demo(&json);
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(
            out.warnings[0]
                .starts_with("learner.fabric_config.precision: precision \"32\" is deprecated"),
            "{:?}",
            out.warnings
        );
        let err = parse_learner(&demo_in("8-bit"))
            .and_then(|c| learn(&c, &mut NoObserver, &AtomicBool::new(false)))
            .err()
            .unwrap();
        assert_eq!(err.code(), "ERR_CONFIG");
    }

    fn run_with_scaler(dir: &Path) -> (LearnerConfig, Run) {
        let config = config_in(dir);
        let (runtime, _) = Runtime::from_config(&config.fabric_config).unwrap();
        let mut run = build(&config, &runtime, Shard::WHOLE, &None).unwrap();
        // The scaler logic of 16-mixed, on the CPU.
        run.scaler = Some(crate::runtime::LossScaler::new(tch::Device::Cpu).unwrap());
        (config, run)
    }

    fn weights(run: &Run) -> Vec<Tensor> {
        optimized_parameters(run).iter().map(Tensor::copy).collect()
    }

    #[test]
    fn a_step_with_infinite_gradients_is_skipped_and_halves_the_scale() {
        let (_, mut run) = run_with_scaler(&scratch_dir());
        let mut ctx = TrainerContext::new(None);
        let scale = run.scaler.as_ref().unwrap().scale().shallow_clone();
        // Injected: the backpropagated loss is multiplied by infinity.
        ctx.set_loss_scale(Some(Tensor::from(f32::INFINITY)));
        let before = weights(&run);
        let _ = train_step(&mut run, &mut ctx, &Distributed::single()).unwrap();
        let after = weights(&run);
        assert!(before.iter().zip(&after).all(|(a, b)| a.equal(b)));
        assert_eq!(scale.double_value(&[]), 32768.0);
        assert_eq!(run.optimizers.learning_rates().len(), 1);
        // A normal step with the (halved) scale updates the weights with unscaled gradients.
        ctx.set_loss_scale(Some(scale.shallow_clone()));
        let _ = train_step(&mut run, &mut ctx, &Distributed::single()).unwrap();
        assert!(before.iter().zip(&weights(&run)).any(|(a, b)| !a.equal(b)));
        let train = ctx.take_metrics().unwrap();
        assert_eq!(train[SCALER_METRIC], (65536.0 + 32768.0) / 2.0);
        assert_eq!(ctx.step, 2);
    }

    #[test]
    fn scaled_and_unscaled_steps_give_the_same_weights() {
        let (config, mut scaled) = run_with_scaler(&scratch_dir());
        let (runtime, _) = Runtime::from_config(&config.fabric_config).unwrap();
        let mut plain = build(&config, &runtime, Shard::WHOLE, &None).unwrap();
        let mut ctx_scaled = TrainerContext::new(None);
        ctx_scaled.set_loss_scale(Some(
            scaled.scaler.as_ref().unwrap().scale().shallow_clone(),
        ));
        let mut ctx_plain = TrainerContext::new(None);
        for _ in 0..3 {
            let _ = train_step(&mut scaled, &mut ctx_scaled, &Distributed::single()).unwrap();
            let _ = train_step(&mut plain, &mut ctx_plain, &Distributed::single()).unwrap();
        }
        // Scaling by a power of two and back is exact.
        for (a, b) in weights(&scaled).iter().zip(&weights(&plain)) {
            assert!(a.equal(b));
        }
    }

    #[test]
    fn the_checkpoint_round_trips_the_scaler_state() {
        use crate::runtime::ScalerState;
        let dir = scratch_dir();
        let (config, mut run) = run_with_scaler(&dir);
        let state = ScalerState {
            scale: 1024.0,
            growth_tracker: 17,
        };
        run.scaler.as_mut().unwrap().restore(&state).unwrap();
        let at = Progress {
            epoch: 1,
            step: 20,
            steps_in_epoch: 0,
            partial_metrics: Default::default(),
            partial_loss: None,
            history: Vec::new(),
            checkpoints: Default::default(),
        };
        let target = dir.join("checkpoints").join("epoch-00000001");
        save_checkpoint(&run, &at, &[RankState::of(&run).unwrap()], &target).unwrap();
        let (_, mut fresh) = run_with_scaler(&dir);
        assert_ne!(fresh.scaler.as_ref().unwrap().state().unwrap(), state);
        load_checkpoint(&mut fresh, &target, 0).unwrap();
        assert_eq!(fresh.scaler.as_ref().unwrap().state().unwrap(), state);
        // A checkpoint without scaler state does not fit a run that needs one.
        let (runtime, _) = Runtime::from_config(&config.fabric_config).unwrap();
        let plain = build(&config, &runtime, Shard::WHOLE, &None).unwrap();
        let other = dir.join("checkpoints").join("epoch-00000002");
        save_checkpoint(&plain, &at, &[RankState::of(&plain).unwrap()], &other).unwrap();
        let err = load_checkpoint(&mut fresh, &other, 0).unwrap_err();
        assert!(err.to_string().contains("no loss scaler state"), "{err}");
    }

    #[test]
    fn mismatched_input_width_is_a_torch_error() {
        let json = demo_config_json().replace("\"input_dim\":8", "\"input_dim\":5");
        let config = parse_learner(&json).unwrap();
        let err = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(err.code(), "ERR_TORCH");
    }
}
