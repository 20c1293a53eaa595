//! [`Sgd`]: stochastic gradient descent without momentum, with coupled L2 decay, as
//! `torch.optim.SGD`.

use tch::Tensor;

use super::{copy_into, Optimizer};
use crate::config::SgdConfig;
use crate::Result;

/// Stochastic gradient descent without momentum, with coupled L2 decay (`torch.optim.SGD`).
#[derive(Debug)]
pub struct Sgd {
    config: SgdConfig,
    params: Vec<Tensor>,
}

impl Sgd {
    /// An optimizer over `params`.
    pub fn new(config: SgdConfig, params: Vec<Tensor>) -> Self {
        Sgd { config, params }
    }
}

impl Optimizer for Sgd {
    fn step(&mut self, lr: f64) -> Result<()> {
        let _no_grad = tch::no_grad_guard();
        for p in &mut self.params {
            let grad = p.grad();
            if !grad.defined() {
                continue;
            }
            let grad = if self.config.weight_decay != 0.0 {
                grad.f_add(&p.f_mul_scalar(self.config.weight_decay)?)?
            } else {
                grad
            };
            let _ = p.f_sub_(&grad.f_mul_scalar(lr)?)?;
        }
        Ok(())
    }

    fn base_lr(&self) -> f64 {
        self.config.lr
    }

    fn parameters(&self) -> &[Tensor] {
        &self.params
    }

    fn state(&self) -> Vec<Tensor> {
        Vec::new()
    }

    fn restore(&mut self, tensors: Vec<Tensor>) -> Result<()> {
        copy_into(&mut [], tensors, "SGD state")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::fixtures::{check_trajectory, Fixture};

    #[test]
    fn sgd_matches_pytorch() {
        let fixture = Fixture::load();
        let c = &fixture.cases["sgd"].config;
        let config = SgdConfig {
            lr: c["lr"].as_f64().unwrap(),
            weight_decay: c["weight_decay"].as_f64().unwrap(),
        };
        let lr = config.lr;
        check_trajectory(
            &fixture,
            "sgd",
            |params| Box::new(Sgd::new(config.clone(), params)),
            lr,
        );
    }
}
