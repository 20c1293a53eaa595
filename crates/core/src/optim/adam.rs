use tch::Tensor;

use super::{copy_into, Optimizer};
use crate::config::AdamConfig;
use crate::Result;

/// Adam as `torch.optim.Adam` (coupled L2 decay) or, `decoupled`, AdamW; no amsgrad.
#[derive(Debug)]
pub struct Adam {
    config: AdamConfig,
    decoupled: bool,
    params: Vec<Tensor>,
    exp_avg: Vec<Tensor>,
    exp_avg_sq: Vec<Tensor>,
    steps: u64,
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
        Ok(Adam {
            config,
            decoupled,
            params,
            exp_avg,
            exp_avg_sq,
            steps: 0,
        })
    }
}

impl Optimizer for Adam {
    fn step(&mut self, lr: f64) -> Result<()> {
        let _no_grad = tch::no_grad_guard();
        self.steps += 1;
        let AdamConfig {
            betas: (beta1, beta2),
            eps,
            weight_decay,
            ..
        } = self.config;
        let t = self.steps as i32;
        let bias1 = 1.0 - beta1.powi(t);
        let bias2_sqrt = (1.0 - beta2.powi(t)).sqrt();
        for ((p, m), v) in self
            .params
            .iter_mut()
            .zip(&mut self.exp_avg)
            .zip(&mut self.exp_avg_sq)
        {
            let grad = p.grad();
            if !grad.defined() {
                continue;
            }
            let grad = if weight_decay == 0.0 {
                grad
            } else if self.decoupled {
                let _ = p.f_mul_scalar_(1.0 - lr * weight_decay)?;
                grad
            } else {
                grad.f_add(&p.f_mul_scalar(weight_decay)?)?
            };
            let _ = m.f_lerp_(&grad, 1.0 - beta1)?;
            let _ = v.f_mul_scalar_(beta2)?;
            let _ = v.f_add_(&grad.f_mul(&grad)?.f_mul_scalar(1.0 - beta2)?)?;
            let denom = v.f_sqrt()?.f_div_scalar(bias2_sqrt)?.f_add_scalar(eps)?;
            let _ = p.f_sub_(&m.f_div(&denom)?.f_mul_scalar(lr / bias1)?)?;
        }
        Ok(())
    }

    fn base_lr(&self) -> f64 {
        self.config.lr
    }

    fn parameters(&self) -> &[Tensor] {
        &self.params
    }

    fn state(&self) -> (Vec<Tensor>, u64) {
        let tensors = self
            .exp_avg
            .iter()
            .chain(&self.exp_avg_sq)
            .map(Tensor::shallow_clone)
            .collect();
        (tensors, self.steps)
    }

    fn restore(&mut self, tensors: Vec<Tensor>, steps: u64) -> Result<()> {
        let mut live: Vec<Tensor> = self
            .exp_avg
            .iter()
            .chain(&self.exp_avg_sq)
            .map(Tensor::shallow_clone)
            .collect();
        copy_into(&mut live, tensors, "Adam moments")?;
        self.steps = steps;
        Ok(())
    }
}
