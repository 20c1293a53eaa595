use tch::Tensor;

use crate::config::AdamConfig;
use crate::Result;

/// Adam as `torch.optim.Adam` computes it (coupled L2 decay, no amsgrad), one parameter group.
#[derive(Debug)]
pub struct Adam {
    config: AdamConfig,
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
    pub fn new(config: AdamConfig, params: Vec<Tensor>) -> Result<Self> {
        let zeros = |p: &Tensor| p.f_zeros_like();
        let exp_avg = params.iter().map(zeros).collect::<Result<Vec<_>, _>>()?;
        let exp_avg_sq = params.iter().map(zeros).collect::<Result<Vec<_>, _>>()?;
        Ok(Adam {
            config,
            params,
            exp_avg,
            exp_avg_sq,
            steps: 0,
        })
    }

    /// The learning rate of the (single) parameter group.
    pub fn lr(&self) -> f64 {
        self.config.lr
    }

    /// Clears the gradients of the optimized parameters.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn zero_grad(&mut self) -> Result<()> {
        for p in &self.params {
            let mut grad = p.grad();
            if grad.defined() {
                let _ = grad.f_detach_()?.f_zero_()?;
            }
        }
        Ok(())
    }

    /// One update from the current gradients; parameters without a gradient are left alone.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn step(&mut self) -> Result<()> {
        let _no_grad = tch::no_grad_guard();
        self.steps += 1;
        let AdamConfig {
            lr,
            betas: (beta1, beta2),
            eps,
            weight_decay,
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
            let grad = if weight_decay != 0.0 {
                grad.f_add(&p.f_mul_scalar(weight_decay)?)?
            } else {
                grad
            };
            let _ = m.f_lerp_(&grad, 1.0 - beta1)?;
            let _ = v.f_mul_scalar_(beta2)?;
            let _ = v.f_add_(&grad.f_mul(&grad)?.f_mul_scalar(1.0 - beta2)?)?;
            let denom = v.f_sqrt()?.f_div_scalar(bias2_sqrt)?.f_add_scalar(eps)?;
            let _ = p.f_sub_(&m.f_div(&denom)?.f_mul_scalar(lr / bias1)?)?;
        }
        Ok(())
    }
}
