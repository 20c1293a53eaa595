use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use crate::config::MlpScorerConfig;
use crate::rng::Rng;
use crate::Result;

/// A multi-layer perceptron scorer: features `B × F` to scores `B`.
pub struct MlpScorer {
    vars: VarStore,
    layers: Vec<(Tensor, Tensor)>,
}

impl std::fmt::Debug for MlpScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MlpScorer")
            .field("layers", &self.layers.len())
            .finish()
    }
}

impl MlpScorer {
    /// A freshly initialised model. Weights and biases are drawn like PyTorch's `nn.Linear`
    /// (uniform in ±1/sqrt(fan_in)) from `rng`, so they depend on the seed alone.
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &MlpScorerConfig, rng: &mut Rng) -> Result<Self> {
        let vars = VarStore::new(Device::Cpu);
        let root = vars.root();
        let widths: Vec<i64> = std::iter::once(config.input_dim)
            .chain(config.hidden_dims.iter().copied())
            .chain(std::iter::once(1))
            .collect();
        let mut layers = Vec::with_capacity(widths.len() - 1);
        for (i, pair) in widths.windows(2).enumerate() {
            let (fan_in, fan_out) = (pair[0], pair[1]);
            let bound = 1.0 / (fan_in as f64).sqrt();
            let mut draw = |n: i64| -> Vec<f32> {
                (0..n)
                    .map(|_| rng.uniform_in(-bound, bound) as f32)
                    .collect()
            };
            let weight =
                Tensor::f_from_slice(&draw(fan_in * fan_out))?.f_view([fan_out, fan_in])?;
            let bias = Tensor::f_from_slice(&draw(fan_out))?;
            let layer = root.sub("layers").sub(i.to_string());
            layers.push((
                layer.f_var_copy("weight", &weight.f_to_kind(Kind::Float)?)?,
                layer.f_var_copy("bias", &bias.f_to_kind(Kind::Float)?)?,
            ));
        }
        Ok(MlpScorer { vars, layers })
    }

    /// Scores of a `B × F` feature batch, shape `B`.
    ///
    /// # Errors
    /// A libtorch error, e.g. when `F` is not the configured input width.
    pub fn forward(&self, features: &Tensor) -> Result<Tensor> {
        let mut x = features.shallow_clone();
        let last = self.layers.len() - 1;
        for (i, (w, b)) in self.layers.iter().enumerate() {
            x = x.f_linear(w, Some(b))?;
            if i < last {
                x = x.f_relu()?;
            }
        }
        Ok(x.f_squeeze_dim(-1)?)
    }

    /// The trainable parameters, in declaration order.
    pub fn parameters(&self) -> Vec<Tensor> {
        self.layers
            .iter()
            .flat_map(|(w, b)| [w.shallow_clone(), b.shallow_clone()])
            .collect()
    }

    /// The named variables (for checkpoints).
    pub fn var_store(&self) -> &VarStore {
        &self.vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> MlpScorerConfig {
        MlpScorerConfig {
            input_dim: 3,
            hidden_dims: vec![4],
        }
    }

    #[test]
    fn shapes_and_seed_determinism() {
        let a = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        let b = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        let x = Tensor::from_slice(&[0.5f32, -1.0, 2.0, 1.0, 0.0, -0.5]).view([2, 3]);
        let ya = a.forward(&x).unwrap();
        assert_eq!(ya.size(), vec![2]);
        assert!(ya.equal(&b.forward(&x).unwrap()));
        assert_eq!(a.parameters().len(), 4);
        assert_eq!(a.var_store().variables().len(), 4);
    }

    #[test]
    fn wrong_width_is_a_torch_error_not_a_panic() {
        let a = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        let err = a
            .forward(&Tensor::zeros([2, 5], (Kind::Float, Device::Cpu)))
            .unwrap_err();
        assert_eq!(err.code(), "ERR_TORCH");
        assert!(err.to_string().contains("2x5"), "{err}");
    }
}
