//! [`Adam`] as `torch.optim.Adam` (coupled L2 decay) or AdamW (decoupled), one call to
//! libtorch's fused kernel per step.

use tch::{Kind, Tensor};

use super::fused_adam::{fused_adam, AdamStep};
use super::{copy_into, Optimizer};
use crate::config::{AdamConfig, AdamWConfig};
use crate::Result;

/// Adam as `torch.optim.Adam` (coupled L2 decay) or, `decoupled`, AdamW; no amsgrad. Each step
/// is one call to libtorch's fused kernel; like PyTorch, every parameter counts its own steps
/// (a parameter without a gradient at a step is left alone, its count too).
#[derive(Debug)]
pub struct Adam {
    config: AdamConfig,
    decoupled: bool,
    params: Vec<Tensor>,
    exp_avg: Vec<Tensor>,
    exp_avg_sq: Vec<Tensor>,
    steps: Vec<Tensor>,
}

/// AdamW has Adam's hyper-parameters; only the weight decay differs, and `new` is told which.
impl From<AdamWConfig> for AdamConfig {
    fn from(c: AdamWConfig) -> Self {
        AdamConfig {
            lr: c.lr,
            weight_decay: c.weight_decay,
            eps: c.eps,
            betas: c.betas,
        }
    }
}

impl Adam {
    /// An optimizer over `params` with zero-initialised moments.
    ///
    /// # Errors
    /// A libtorch error while allocating the moments.
    pub fn new(config: AdamConfig, decoupled: bool, params: Vec<Tensor>) -> Result<Self> {
        let zeros = |p: &Tensor| p.f_zeros_like();
        let exp_avg = params.iter().map(zeros).collect::<Result<Vec<_>, _>>()?;
        let exp_avg_sq = params.iter().map(zeros).collect::<Result<Vec<_>, _>>()?;
        let steps = params
            .iter()
            .map(|p| Tensor::f_zeros([], (Kind::Float, p.device())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Adam {
            config,
            decoupled,
            params,
            exp_avg,
            exp_avg_sq,
            steps,
        })
    }
}

impl Optimizer for Adam {
    fn step(&mut self, lr: f64) -> Result<()> {
        let _no_grad = tch::no_grad_guard();
        let with_grad: Vec<usize> = (0..self.params.len())
            .filter(|i| self.params[*i].grad().defined())
            .collect();
        if with_grad.is_empty() {
            return Ok(());
        }
        let pick = |ts: &[Tensor]| -> Vec<Tensor> {
            with_grad.iter().map(|i| ts[*i].shallow_clone()).collect()
        };
        let params = pick(&self.params);
        let grads: Vec<Tensor> = params.iter().map(Tensor::grad).collect();
        let mut steps = pick(&self.steps);
        for s in &mut steps {
            let _ = s.f_add_scalar_(1.0)?;
        }
        let AdamConfig {
            betas: (beta1, beta2),
            eps,
            weight_decay,
            ..
        } = self.config;
        let hyper = AdamStep {
            lr,
            beta1,
            beta2,
            weight_decay,
            eps,
            decoupled: self.decoupled,
        };
        fused_adam(
            &params,
            &grads,
            &pick(&self.exp_avg),
            &pick(&self.exp_avg_sq),
            &steps,
            hyper,
        )
    }

    fn base_lr(&self) -> f64 {
        self.config.lr
    }

    fn parameters(&self) -> &[Tensor] {
        &self.params
    }

    fn state(&self) -> Vec<Tensor> {
        self.exp_avg
            .iter()
            .chain(&self.exp_avg_sq)
            .chain(&self.steps)
            .map(Tensor::shallow_clone)
            .collect()
    }

    fn restore(&mut self, tensors: Vec<Tensor>) -> Result<()> {
        let mut live: Vec<Tensor> = self
            .exp_avg
            .iter()
            .chain(&self.exp_avg_sq)
            .chain(&self.steps)
            .map(Tensor::shallow_clone)
            .collect();
        copy_into(&mut live, tensors, "Adam state")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::fixtures::{check_trajectory, Fixture};

    fn adam(case: &str, decoupled: bool) {
        let fixture = Fixture::load();
        let c = &fixture.cases[case].config;
        let config = AdamConfig {
            lr: c["lr"].as_f64().unwrap(),
            weight_decay: c["weight_decay"].as_f64().unwrap(),
            eps: c["eps"].as_f64().unwrap(),
            betas: (
                c["betas"][0].as_f64().unwrap(),
                c["betas"][1].as_f64().unwrap(),
            ),
        };
        let lr = config.lr;
        check_trajectory(
            &fixture,
            case,
            |params| Box::new(Adam::new(config.clone(), decoupled, params).unwrap()),
            lr,
        );
    }

    #[test]
    fn adam_matches_pytorch() {
        adam("adam", false);
    }

    #[test]
    fn adam_with_l2_matches_pytorch() {
        adam("adam_l2", false);
    }

    #[test]
    fn adamw_matches_pytorch() {
        adam("adamw", true);
    }

    #[test]
    fn saving_and_restoring_continues_identically() {
        let fixture = Fixture::load();
        let config = AdamConfig {
            lr: 0.01,
            weight_decay: 0.0,
            eps: 1e-8,
            betas: (0.9, 0.999),
        };
        let make = || -> (Vec<Tensor>, Adam) {
            let params = fixture.initial_params();
            let opt = Adam::new(
                config.clone(),
                false,
                params.iter().map(Tensor::shallow_clone).collect(),
            )
            .unwrap();
            (params, opt)
        };
        let (a_params, mut a) = make();
        for step in 0..2 {
            fixture.set_grads(&a_params, step);
            a.step(0.01).unwrap();
        }
        let saved = a.state();
        let saved: Vec<Tensor> = saved.iter().map(|t| t.copy()).collect();
        let (b_params, mut b) = make();
        for (p, q) in b_params.iter().zip(&a_params) {
            tch::no_grad(|| p.shallow_clone().copy_(q));
        }
        b.restore(saved).unwrap();
        for step in 2..5 {
            fixture.set_grads(&a_params, step);
            fixture.set_grads(&b_params, step);
            a.step(0.01).unwrap();
            b.step(0.01).unwrap();
        }
        for (p, q) in a_params.iter().zip(&b_params) {
            assert!(p.equal(q));
        }
    }
}
