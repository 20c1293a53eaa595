use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tch::Tensor;

use super::build::{build, Run};
use super::listeners::{ListenerStatus, ListenerView};
use super::{EpochReport, LearnOutput, Observer, StepProgress, TrainerContext};
use crate::config::LearnerConfig;
use crate::{Error, Result};

/// Runs a whole training on the calling thread.
///
/// # Errors
/// Configuration problems found while building, libtorch errors, non-finite losses or
/// gradients, observer errors, and [`Error::Cancelled`] when `cancel` is set (checked
/// between steps).
pub fn learn(
    config: &LearnerConfig,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<LearnOutput> {
    let mut run = build(config)?;
    let checkpoints = config.checkpointspath.as_ref().map(PathBuf::from);
    let mut ctx = TrainerContext::new(
        config.steps_per_epoch,
        config.logpath.as_ref().map(PathBuf::from),
        checkpoints.clone(),
    );
    let total_steps = config.max_epochs * config.steps_per_epoch;
    let mut output = LearnOutput {
        epochs: Vec::with_capacity(config.max_epochs as usize),
        listeners: BTreeMap::new(),
        learned_model: None,
        checkpoints: BTreeMap::new(),
        stopped: None,
    };
    for epoch in 1..=config.max_epochs {
        ctx.epoch = epoch;
        let started = Instant::now();
        let mut loss_sum: Option<Tensor> = None;
        for _ in 0..config.steps_per_epoch {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let loss = train_step(&mut run, &mut ctx)?;
            loss_sum = Some(match loss_sum {
                Some(sum) => sum.f_add(&loss)?,
                None => loss,
            });
            observer.on_step(StepProgress {
                epoch,
                step: ctx.step,
                total_steps,
            })?;
        }
        let steps_per_second =
            config.steps_per_epoch as f64 / started.elapsed().as_secs_f64().max(1e-9);
        let loss = match &loss_sum {
            Some(sum) => sum.f_double_value(&[])? / config.steps_per_epoch as f64,
            None => f64::NAN,
        };
        if !loss.is_finite() {
            return Err(Error::NonFinite {
                step: ctx.step,
                what: format!("the training loss of epoch {epoch} is {loss}"),
            });
        }
        let mut train = ctx.take_metrics()?;
        train.insert("iter_per_seconds".into(), steps_per_second);
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
        for (tag, value) in &metrics {
            ctx.log_scalar(tag, *value)?;
        }
        ctx.flush()?;

        if let Some(dir) = &checkpoints {
            if epoch.is_multiple_of(config.checkpoint_interval) {
                let path = save_model(&run, dir, &format!("epoch-{epoch:08}"))?;
                output.checkpoints.insert(epoch, path);
            }
        }
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
        if status == ListenerStatus::Stop {
            output.stopped = Some(format!(
                "stopped after epoch {epoch} by listener(s) {}",
                stoppers.join(", ")
            ));
            break;
        }
    }
    if let Some(dir) = &checkpoints {
        output.learned_model = Some(save_model(&run, dir, "last")?);
    }
    output.listeners = run
        .listeners
        .iter()
        .map(|l| (l.id().to_string(), l.output()))
        .collect();
    Ok(output)
}

/// One optimizer step; returns the step's (detached) weighted loss.
fn train_step(run: &mut Run, ctx: &mut TrainerContext) -> Result<Tensor> {
    run.optimizers.zero_grad()?;
    let loss = run.trainer.process_step(run.model.as_ref(), ctx)?;
    if !run.gradient_hooks.is_empty() {
        let params: Vec<Tensor> = run
            .optimizers
            .parameter_groups()
            .flatten()
            .map(Tensor::shallow_clone)
            .collect();
        for hook in &run.gradient_hooks {
            hook.apply(&params, ctx)?;
        }
    }
    let rates = run.optimizers.step()?;
    for (i, lr) in rates.iter().enumerate() {
        ctx.add_value(&format!("gradient/scheduler/{}/1", i + 1), *lr)?;
    }
    ctx.step += 1;
    Ok(loss)
}

fn save_model(run: &Run, dir: &Path, name: &str) -> Result<String> {
    let path = dir.join(name).join("model.safetensors");
    run.model.save(&path)?;
    Ok(path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_learner;
    use crate::config::tests_support::demo_config_json;
    use crate::learner::NoObserver;

    fn run_demo(json: &str) -> LearnOutput {
        let dir = crate::config::tests_support::scratch_dir();
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
    fn cancellation_stops_between_steps() {
        let config = parse_learner(&demo_config_json()).unwrap();
        let err = learn(&config, &mut NoObserver, &AtomicBool::new(true)).unwrap_err();
        assert_eq!(err.code(), "ERR_CANCELLED");
    }

    #[test]
    fn mismatched_input_width_is_a_torch_error() {
        let json = demo_config_json().replace("\"input_dim\":8", "\"input_dim\":5");
        let config = parse_learner(&json).unwrap();
        let err = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(err.code(), "ERR_TORCH");
    }
}
