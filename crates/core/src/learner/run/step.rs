//! One training step: [`Training::step`] between the step hooks (the losses kept, the observer
//! told), and [`train_step`], the optimizer step itself: the gradients averaged over the ranks,
//! the loss scaler, the gradient hooks.

use tch::{Kind, Tensor};

use super::{call_hooks, Training};
use crate::learner::build::Run;
use crate::learner::distributed::Distributed;
use crate::learner::{StepProgress, TrainerContext};
use crate::Result;

impl Training<'_> {
    /// Step `done` (from 0) of `epoch` between the step hooks; returns `loss_sum` with its
    /// loss added.
    pub(super) fn step(
        &mut self,
        epoch: u64,
        done: u64,
        loss_sum: Option<Tensor>,
    ) -> Result<Tensor> {
        let before = self.ctx.step;
        call_hooks(
            self.observer,
            &self.step_hooks,
            "before",
            self.config,
            epoch,
            before,
        )?;
        let loss = train_step(&mut self.run, &mut self.ctx, &self.dist)?;
        self.step_losses.push(&loss)?;
        self.heap.after_step();
        self.report_warnings();
        let sum = match loss_sum {
            Some(sum) => sum.f_add(&loss)?,
            None => loss,
        };
        let step = self.ctx.step;
        call_hooks(
            self.observer,
            &self.step_hooks,
            "after",
            self.config,
            epoch,
            step,
        )?;
        let running_loss = match self.observer.wants_running_loss() {
            true => Some(sum.f_to_kind(Kind::Double)?.f_double_value(&[])? / (done + 1) as f64),
            false => None,
        };
        let after = StepProgress {
            epoch,
            step,
            total_steps: self.config.max_epochs * self.config.steps_per_epoch,
        };
        self.observer.on_step_with_loss(after, running_loss)?;
        Ok(sum)
    }
}

/// The metric of the loss scale (`train/gradient/scaler` once logged).
const SCALER_METRIC: &str = "gradient/scaler";

/// Handles on the parameters the optimizers update: what the gradient averaging, the scaler and
/// the gradient hooks work on.
fn optimized_parameters(run: &Run) -> Vec<Tensor> {
    run.optimizers
        .parameter_groups()
        .flatten()
        .map(Tensor::shallow_clone)
        .collect()
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
mod tests {
    use std::path::Path;

    use super::super::tests::config_in;
    use super::*;
    use crate::config::tests_support::scratch_dir;
    use crate::config::LearnerConfig;
    use crate::data::Shard;
    use crate::learner::build::build;
    use crate::learner::checkpoint::{
        load_checkpoint, save_checkpoint, CheckpointPolicy, Progress, RankState,
    };
    use crate::runtime::Runtime;

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
            ..Progress::default()
        };
        let target = dir.join("checkpoints").join("epoch-00000001");
        save_checkpoint(&run, &at, &[RankState::of(&run).unwrap()], &target).unwrap();
        let (_, mut fresh) = run_with_scaler(&dir);
        assert_ne!(fresh.scaler.as_ref().unwrap().state().unwrap(), state);
        let policy = CheckpointPolicy::of(&config);
        load_checkpoint(&mut fresh, &target, 0, &policy).unwrap();
        assert_eq!(fresh.scaler.as_ref().unwrap().state().unwrap(), state);
        // A checkpoint without scaler state does not fit a run that needs one.
        let (runtime, _) = Runtime::from_config(&config.fabric_config).unwrap();
        let plain = build(&config, &runtime, Shard::WHOLE, &None).unwrap();
        let other = dir.join("checkpoints").join("epoch-00000002");
        save_checkpoint(&plain, &at, &[RankState::of(&plain).unwrap()], &other).unwrap();
        let err = load_checkpoint(&mut fresh, &other, 0, &policy).unwrap_err();
        assert!(err.to_string().contains("no loss scaler state"), "{err}");
    }
}
