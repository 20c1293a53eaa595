//! [`Adafactor`] as the `transformers` library implements it: factored second moments for
//! matrices, RMS-clipped updates, step sizes relative to the step count and parameter scale.

use tch::{Kind, Tensor};

use super::{copy_into, Optimizer};
use crate::config::AdafactorConfig;
use crate::Result;

/// The running average of a parameter's squared gradients: for a parameter of two or more
/// dimensions, its means over the last dimension (`row`) and over the one before (`col`),
/// whose outer product estimates the whole matrix; otherwise the whole tensor.
#[derive(Debug)]
enum SecondMoment {
    Factored { row: Tensor, col: Tensor },
    Full(Tensor),
}

impl SecondMoment {
    fn zeros(p: &Tensor) -> Result<Self> {
        let shape = p.size();
        if shape.len() < 2 {
            return Ok(SecondMoment::Full(p.f_zeros_like()?));
        }
        let options = (p.kind(), p.device());
        let last = shape.len() - 1;
        let row = Tensor::f_zeros(&shape[..last], options)?;
        let mut col_shape = shape[..last - 1].to_vec();
        col_shape.push(shape[last]);
        Ok(SecondMoment::Factored {
            row,
            col: Tensor::f_zeros(&col_shape, options)?,
        })
    }

    fn tensors(&self) -> Vec<Tensor> {
        match self {
            SecondMoment::Factored { row, col } => vec![row.shallow_clone(), col.shallow_clone()],
            SecondMoment::Full(t) => vec![t.shallow_clone()],
        }
    }

    /// Averages `squared` in with weight `1 − keep` and returns the preconditioned `grad`.
    fn update(&mut self, squared: &Tensor, grad: &Tensor, keep: f64) -> Result<Tensor> {
        let blend = |avg: &mut Tensor, new: Tensor| -> Result<()> {
            let _ = avg
                .f_mul_scalar_(keep)?
                .f_add_(&new.f_mul_scalar(1.0 - keep)?)?;
            Ok(())
        };
        match self {
            SecondMoment::Factored { row, col } => {
                blend(row, squared.f_mean_dim(-1, false, None)?)?;
                blend(col, squared.f_mean_dim(-2, false, None)?)?;
                let row_factor = row
                    .f_div(&row.f_mean_dim(-1, true, None)?)?
                    .f_rsqrt()?
                    .f_unsqueeze(-1)?;
                let col_factor = col.f_unsqueeze(-2)?.f_rsqrt()?;
                Ok(row_factor.f_mul(&col_factor)?.f_mul(grad)?)
            }
            SecondMoment::Full(avg) => {
                blend(avg, squared.shallow_clone())?;
                Ok(avg.f_rsqrt()?.f_mul(grad)?)
            }
        }
    }
}

fn rms(t: &Tensor) -> Result<Tensor> {
    Ok(t.f_norm()?.f_div_scalar((t.numel() as f64).sqrt())?)
}

/// Adafactor as the `transformers` library implements it (the class Python's
/// `xpm_torch.optim.Adafactor` builds): factored second moments for matrices, updates clipped
/// by their root mean square, step sizes relative to the step count and the parameter's scale.
/// Every parameter counts its own steps, as in PyTorch.
#[derive(Debug)]
pub struct Adafactor {
    config: AdafactorConfig,
    params: Vec<Tensor>,
    steps: Vec<Tensor>,
    exp_avg: Vec<Tensor>,
    second: Vec<SecondMoment>,
}

impl Adafactor {
    /// An optimizer over `params` with zero-initialised moments.
    ///
    /// # Errors
    /// A libtorch error while allocating the moments.
    pub fn new(config: AdafactorConfig, params: Vec<Tensor>) -> Result<Self> {
        let steps = params
            .iter()
            .map(|p| Tensor::f_zeros([], (Kind::Double, p.device())))
            .collect::<Result<Vec<_>, _>>()?;
        let exp_avg = match config.beta1 {
            Some(_) => params
                .iter()
                .map(Tensor::f_zeros_like)
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let second = params
            .iter()
            .map(SecondMoment::zeros)
            .collect::<Result<_>>()?;
        Ok(Adafactor {
            config,
            params,
            steps,
            exp_avg,
            second,
        })
    }

    /// The step size before the parameter's scale, at its step `t` (from 1).
    fn step_size(&self, t: f64, lr: f64) -> f64 {
        if !self.config.relative_step {
            return lr;
        }
        let floor = if self.config.warmup_init {
            1e-6 * t
        } else {
            1e-2
        };
        floor.min(1.0 / t.sqrt())
    }

    fn step_one(&mut self, i: usize, lr: f64) -> Result<()> {
        let p = self.params[i].shallow_clone();
        let grad = p.grad();
        let _ = self.steps[i].f_add_scalar_(1.0)?;
        let t = self.steps[i].f_double_value(&[])?;
        let mut lr = self.step_size(t, lr);
        if self.config.scale_parameter {
            lr *= rms(&p)?.f_double_value(&[])?.max(self.config.eps.1);
        }
        let keep = 1.0 - t.powf(self.config.decay_rate);
        let squared = grad.f_square()?.f_add_scalar(self.config.eps.0)?;
        let mut update = self.second[i].update(&squared, &grad, keep)?;
        let excess = rms(&update)?
            .f_div_scalar(self.config.clip_threshold)?
            .f_clamp_min(1.0)?;
        update = update.f_div(&excess)?.f_mul_scalar(lr)?;
        if let Some(beta1) = self.config.beta1 {
            let avg = &mut self.exp_avg[i];
            let _ = avg
                .f_mul_scalar_(beta1)?
                .f_add_(&update.f_mul_scalar(1.0 - beta1)?)?;
            update = avg.shallow_clone();
        }
        let mut p = p;
        if self.config.weight_decay != 0.0 {
            let _ = p.f_add_(&p.f_mul_scalar(-self.config.weight_decay * lr)?)?;
        }
        let _ = p.f_sub_(&update)?;
        Ok(())
    }

    fn live_state(&self) -> Vec<Tensor> {
        let mut all: Vec<Tensor> = self.steps.iter().map(Tensor::shallow_clone).collect();
        all.extend(self.exp_avg.iter().map(Tensor::shallow_clone));
        all.extend(self.second.iter().flat_map(SecondMoment::tensors));
        all
    }
}

impl Optimizer for Adafactor {
    /// `lr` is the scheduled learning rate; a relative step size ignores it (a run refuses a
    /// scheduler on such an Adafactor).
    fn step(&mut self, lr: f64) -> Result<()> {
        let _no_grad = tch::no_grad_guard();
        for i in 0..self.params.len() {
            if self.params[i].grad().defined() {
                self.step_one(i, lr)?;
            }
        }
        Ok(())
    }

    /// The external learning rate; with relative steps, the step size of the first parameter's
    /// coming step, before its scale (what the run logs as the learning rate).
    fn base_lr(&self) -> f64 {
        match self.config.lr {
            Some(lr) if !self.config.relative_step => lr,
            _ => {
                let done = self
                    .steps
                    .first()
                    .and_then(|s| s.f_double_value(&[]).ok())
                    .unwrap_or(0.0);
                self.step_size(done + 1.0, 0.0)
            }
        }
    }

    fn parameters(&self) -> &[Tensor] {
        &self.params
    }

    fn state(&self) -> Vec<Tensor> {
        self.live_state()
    }

    fn restore(&mut self, tensors: Vec<Tensor>) -> Result<()> {
        copy_into(&mut self.live_state(), tensors, "Adafactor state")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::fixtures::{check_trajectory, Fixture};

    /// The fixture's keyword arguments over transformers' defaults.
    fn config_of(fixture: &Fixture, case: &str) -> AdafactorConfig {
        let c = &fixture.cases[case].config;
        let f = |key: &str, default: f64| c.get(key).and_then(|v| v.as_f64()).unwrap_or(default);
        let b = |key: &str, default: bool| c.get(key).and_then(|v| v.as_bool()).unwrap_or(default);
        let eps = c.get("eps").map_or((1e-30, 1e-3), |e| {
            (e[0].as_f64().unwrap(), e[1].as_f64().unwrap())
        });
        AdafactorConfig {
            lr: c.get("lr").and_then(|v| v.as_f64()),
            weight_decay: f("weight_decay", 0.0),
            relative_step: b("relative_step", true),
            eps,
            clip_threshold: f("clip_threshold", 1.0),
            decay_rate: f("decay_rate", -0.8),
            beta1: c.get("beta1").and_then(|v| v.as_f64()),
            scale_parameter: b("scale_parameter", true),
            warmup_init: b("warmup_init", false),
        }
    }

    fn matches(case: &str) {
        let fixture = Fixture::load();
        let config = config_of(&fixture, case);
        config.validate("optimizer").unwrap();
        // A relative step size ignores the scheduled rate: give it one that would show.
        let lr = config.lr.unwrap_or(123.0);
        check_trajectory(
            &fixture,
            case,
            |params| Box::new(Adafactor::new(config.clone(), params).unwrap()),
            lr,
        );
    }

    #[test]
    fn relative_steps_match_transformers() {
        matches("adafactor");
    }

    #[test]
    fn warmup_init_with_weight_decay_matches_transformers() {
        matches("adafactor_warmup_init");
    }

    #[test]
    fn a_fixed_lr_with_first_moment_and_clipping_matches_transformers() {
        matches("adafactor_fixed_lr");
    }

    #[test]
    fn saving_and_restoring_continues_identically() {
        let fixture = Fixture::load();
        let config = config_of(&fixture, "adafactor_fixed_lr");
        let make = || -> (Vec<Tensor>, Adafactor) {
            let params = fixture.initial_params();
            let shallow = params.iter().map(Tensor::shallow_clone).collect();
            (params, Adafactor::new(config.clone(), shallow).unwrap())
        };
        let (a_params, mut a) = make();
        for step in 0..3 {
            fixture.set_grads(&a_params, step);
            a.step(0.05).unwrap();
        }
        let saved: Vec<Tensor> = a.state().iter().map(Tensor::copy).collect();
        let (b_params, mut b) = make();
        for (p, q) in b_params.iter().zip(&a_params) {
            tch::no_grad(|| p.shallow_clone().copy_(q));
        }
        b.restore(saved).unwrap();
        for step in 3..5 {
            fixture.set_grads(&a_params, step);
            fixture.set_grads(&b_params, step);
            a.step(0.05).unwrap();
            b.step(0.05).unwrap();
        }
        for (p, q) in a_params.iter().zip(&b_params) {
            assert!(p.equal(q));
        }
    }

    #[test]
    fn the_logged_rate_of_warmup_init_grows_with_the_step_count() {
        let fixture = Fixture::load();
        let params = fixture.initial_params();
        let shallow = params.iter().map(Tensor::shallow_clone).collect();
        let mut opt =
            Adafactor::new(config_of(&fixture, "adafactor_warmup_init"), shallow).unwrap();
        assert!((opt.base_lr() - 1e-6).abs() < 1e-18);
        for step in 0..5 {
            fixture.set_grads(&params, step);
            opt.step(0.0).unwrap();
        }
        assert!((opt.base_lr() - 6e-6).abs() < 1e-18, "{}", opt.base_lr());
    }
}
