//! [`MlpScorer`]: a multi-layer perceptron scorer of feature vectors, ReLU between layers,
//! parameters `layers.<k>.weight|bias` drawn like PyTorch's `nn.Linear`.

use tch::{Kind, Tensor};

use super::{Model, NamedParameter};
use crate::config::MlpScorerConfig;
use crate::data::ScoreInput;
use crate::rng::Rng;
use crate::{Error, Result};

/// A multi-layer perceptron scorer: features `B × F` to scores `B`, ReLU between layers.
#[derive(Debug)]
pub struct MlpScorer {
    /// `(weight, bias)` per layer; shared parameters are the same tensor in two places.
    layers: Vec<(Tensor, Tensor)>,
}

fn layer_index(name: &str) -> Option<(usize, bool)> {
    let rest = name.strip_prefix("layers.")?;
    let (index, kind) = rest.split_once('.')?;
    let is_weight = match kind {
        "weight" => true,
        "bias" => false,
        _ => return None,
    };
    Some((index.parse().ok()?, is_weight))
}

impl MlpScorer {
    /// A freshly initialised model. Weights and biases are drawn like PyTorch's `nn.Linear`
    /// (uniform in ±1/sqrt(fan_in)) from `rng`, so they depend on the seed alone.
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &MlpScorerConfig, rng: &mut Rng) -> Result<Self> {
        let widths: Vec<i64> = std::iter::once(config.input_dim)
            .chain(config.hidden_dims.iter().copied())
            .map(|w| w as i64)
            .chain(std::iter::once(1))
            .collect();
        let mut layers = Vec::with_capacity(widths.len() - 1);
        for pair in widths.windows(2) {
            let (fan_in, fan_out) = (pair[0], pair[1]);
            let bound = 1.0 / (fan_in as f64).sqrt();
            let mut draw = |shape: &[i64]| -> Result<Tensor> {
                let n = shape.iter().product::<i64>();
                let values: Vec<f32> = (0..n)
                    .map(|_| rng.uniform_in(-bound, bound) as f32)
                    .collect();
                Ok(Tensor::f_from_slice(&values)?
                    .f_view(shape)?
                    .f_to_kind(Kind::Float)?
                    .set_requires_grad(true))
            };
            let weight = draw(&[fan_out, fan_in])?;
            let bias = draw(&[fan_out])?;
            layers.push((weight, bias));
        }
        Ok(MlpScorer { layers })
    }

    fn slot(&mut self, name: &str) -> Result<&mut Tensor> {
        let unknown = || {
            Error::config(
                name,
                "no such parameter in MlpScorer (names are layers.<i>.weight|bias)",
            )
        };
        let (index, is_weight) = layer_index(name).ok_or_else(unknown)?;
        let layer = self.layers.get_mut(index).ok_or_else(unknown)?;
        Ok(if is_weight {
            &mut layer.0
        } else {
            &mut layer.1
        })
    }
}

impl Model for MlpScorer {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let mut x = input.features("MlpScorer")?.shallow_clone();
        let last = self.layers.len() - 1;
        for (i, (w, b)) in self.layers.iter().enumerate() {
            x = x.f_linear(w, Some(b))?;
            if i < last {
                x = x.f_relu()?;
            }
        }
        Ok(x.f_squeeze_dim(-1)?)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.layers
            .iter()
            .enumerate()
            .flat_map(|(i, (w, b))| {
                [
                    NamedParameter {
                        name: format!("layers.{i}.weight"),
                        tensor: w.shallow_clone(),
                    },
                    NamedParameter {
                        name: format!("layers.{i}.bias"),
                        tensor: b.shallow_clone(),
                    },
                ]
            })
            .collect()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        let source_tensor = self.slot(source)?.shallow_clone();
        let slot = self.slot(target)?;
        if slot.size() != source_tensor.size() {
            return Err(Error::config(
                target,
                format!(
                    "cannot share {source} {:?} with {target} {:?}: shapes differ",
                    source_tensor.size(),
                    slot.size()
                ),
            ));
        }
        *slot = source_tensor;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn config() -> MlpScorerConfig {
        MlpScorerConfig {
            input_dim: 3,
            hidden_dims: vec![3],
        }
    }

    #[test]
    fn shapes_and_seed_determinism() {
        let a = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        let b = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        let x = ScoreInput::Features(
            Tensor::from_slice(&[0.5f32, -1.0, 2.0, 1.0, 0.0, -0.5]).view([2, 3]),
        );
        let ya = a.forward(&x).unwrap();
        assert_eq!(ya.size(), vec![2]);
        assert!(ya.equal(&b.forward(&x).unwrap()));
        let names: Vec<String> = a.named_parameters().into_iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "layers.0.weight",
                "layers.0.bias",
                "layers.1.weight",
                "layers.1.bias"
            ]
        );
    }

    #[test]
    fn wrong_width_is_a_torch_error_not_a_panic() {
        let a = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        let err = a
            .forward(&ScoreInput::Features(Tensor::zeros(
                [2, 5],
                (Kind::Float, Device::Cpu),
            )))
            .unwrap_err();
        assert_eq!(err.code(), "ERR_TORCH");
        assert!(err.to_string().contains("2x5"), "{err}");
    }

    #[test]
    fn sharing_makes_one_tensor_and_checks_shapes() {
        let mut m = MlpScorer::new(&config(), &mut Rng::new(1)).unwrap();
        m.share("layers.1.weight", "layers.0.weight").unwrap_err();
        m.share("layers.1.bias", "layers.0.bias").unwrap_err();
        let mut square = MlpScorer::new(
            &MlpScorerConfig {
                input_dim: 2,
                hidden_dims: vec![2, 2],
            },
            &mut Rng::new(2),
        )
        .unwrap();
        square.share("layers.1.weight", "layers.0.weight").unwrap();
        let params = square.named_parameters();
        assert_eq!(params[2].tensor.data_ptr(), params[0].tensor.data_ptr());
        assert!(square.share("layers.9.weight", "layers.0.weight").is_err());
    }
}
