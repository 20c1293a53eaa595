use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;
use tch::{Kind, Tensor};

use super::build::{build, Run};
use super::{EpochReport, Observer, StepProgress};
use crate::config::LearnerConfig;
use crate::{Error, Result};

/// What a finished run returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearnOutput {
    /// One report per epoch, in order.
    pub epochs: Vec<EpochReport>,
}

/// Runs a whole training on the calling thread.
///
/// # Errors
/// Configuration problems found while building, libtorch errors, observer errors, and
/// [`Error::Cancelled`] when `cancel` is set (checked between steps).
pub fn learn(
    config: &LearnerConfig,
    observer: &mut dyn Observer,
    cancel: &AtomicBool,
) -> Result<LearnOutput> {
    let mut run = build(config)?;
    let total_steps = config.max_epochs * config.steps_per_epoch;
    let mut step = 0;
    let mut epochs = Vec::with_capacity(config.max_epochs as usize);
    for epoch in 1..=config.max_epochs {
        let started = Instant::now();
        // Detached running sums, read once per epoch: no per-step device synchronisation.
        let mut sums: Vec<Tensor> = Vec::new();
        let mut pairs = 0i64;
        for _ in 0..config.steps_per_epoch {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let (batch_sums, count) = train_step(&mut run)?;
            sums = if sums.is_empty() {
                batch_sums
            } else {
                sums.iter()
                    .zip(batch_sums)
                    .map(|(a, b)| a.f_add(&b))
                    .collect::<Result<_, _>>()?
            };
            pairs += count;
            step += 1;
            observer.on_step(StepProgress {
                epoch,
                step,
                total_steps,
            })?;
        }
        let elapsed = started.elapsed().as_secs_f64();
        let speed = config.steps_per_epoch as f64 / elapsed.max(1e-9);
        let report = epoch_report(&run, epoch, step, &sums, pairs, speed)?;
        observer.on_epoch(&report)?;
        epochs.push(report);
    }
    Ok(LearnOutput { epochs })
}

/// One optimizer step; returns each loss's detached sum and the number of pairs.
fn train_step(run: &mut Run) -> Result<(Vec<Tensor>, i64)> {
    for opt in &mut run.optimizers {
        opt.zero_grad()?;
    }
    let batch = run.sampler.next_batch(run.batch_size)?;
    let count = batch.len();
    let positive = run.model.forward(&batch.positive)?;
    let negative = run.model.forward(&batch.negative)?;
    let mut total: Option<Tensor> = None;
    let mut sums = Vec::with_capacity(run.losses.len());
    for loss in &run.losses {
        let sum = loss.sum(&positive, &negative)?;
        let weighted = sum.f_mul_scalar(loss.weight() / count as f64)?;
        total = Some(match total {
            Some(t) => t.f_add(&weighted)?,
            None => weighted,
        });
        sums.push(sum.f_detach()?.f_to_kind(Kind::Double)?);
    }
    if let Some(total) = total {
        total.f_backward()?;
    }
    for opt in &mut run.optimizers {
        opt.step()?;
    }
    Ok((sums, count))
}

fn epoch_report(
    run: &Run,
    epoch: u64,
    step: u64,
    sums: &[Tensor],
    pairs: i64,
    steps_per_second: f64,
) -> Result<EpochReport> {
    let mut losses = BTreeMap::new();
    let mut loss = 0.0;
    for (l, sum) in run.losses.iter().zip(sums) {
        let mean = sum.f_double_value(&[])? / pairs as f64;
        loss += l.weight() * mean;
        losses.insert(l.name().to_string(), mean);
    }
    let mut metrics = BTreeMap::new();
    for listener in &run.listeners {
        metrics.insert(
            format!("{}/accuracy", listener.id),
            listener.evaluation.accuracy(&run.model)?,
        );
    }
    Ok(EpochReport {
        epoch,
        step,
        loss,
        losses,
        metrics,
        steps_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_learner;
    use crate::config::tests_support::demo_config_json;
    use crate::learner::NoObserver;

    fn run_demo(json: &str) -> LearnOutput {
        let config = parse_learner(json).unwrap();
        learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn loss_falls_and_heldout_accuracy_rises() {
        let out = run_demo(&demo_config_json());
        assert_eq!(out.epochs.len(), 3);
        let first = &out.epochs[0];
        let last = &out.epochs[2];
        assert!(last.loss < first.loss, "{} !< {}", last.loss, first.loss);
        assert!(last.metrics["heldout/accuracy"] > 0.8, "{:?}", last.metrics);
        assert_eq!(last.step, 60);
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
