//! [`Params`]: the named parameters of a built-in model, drawn from its seed, so that naming,
//! sharing and loading are written once for every model.

use tch::{Kind, Tensor};

use super::NamedParameter;
use crate::rng::Rng;
use crate::{Error, Result};

/// Index of a parameter in a [`Params`] store.
pub(crate) type ParamId = usize;

/// The named parameters of a built-in model, in declaration order, drawn from the model's seed.
/// A model keeps [`ParamId`]s and reads its tensors here, so naming, sharing and loading are
/// written once for every model.
#[derive(Debug, Default)]
pub(crate) struct Params {
    entries: Vec<(String, Tensor)>,
}

fn trainable(values: Vec<f32>, shape: &[i64]) -> Result<Tensor> {
    Ok(Tensor::f_from_slice(&values)?
        .f_view(shape)?
        .f_to_kind(Kind::Float)?
        .set_requires_grad(true))
}

/// `prefix.name`, or `name` alone at the root.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

impl Params {
    /// Adds a parameter of `shape` holding `value` everywhere.
    pub fn constant(
        &mut self,
        name: impl Into<String>,
        shape: &[i64],
        value: f32,
    ) -> Result<ParamId> {
        let n = shape.iter().product::<i64>() as usize;
        self.push(name, trainable(vec![value; n], shape)?)
    }

    /// Adds a parameter drawn uniformly in `±bound` (PyTorch's `kaiming_uniform_(a=√5)` for a
    /// linear weight and its bias use `bound = 1/√fan_in`).
    pub fn uniform(
        &mut self,
        rng: &mut Rng,
        name: impl Into<String>,
        shape: &[i64],
        bound: f64,
    ) -> Result<ParamId> {
        let n = shape.iter().product::<i64>();
        let values = (0..n)
            .map(|_| rng.uniform_in(-bound, bound) as f32)
            .collect();
        self.push(name, trainable(values, shape)?)
    }

    /// Adds a parameter drawn from N(0, 1) (PyTorch's embedding initialisation); row
    /// `padding_row`, if any, is zero as `padding_idx` makes it.
    pub fn normal(
        &mut self,
        rng: &mut Rng,
        name: impl Into<String>,
        shape: &[i64],
        padding_row: Option<i64>,
    ) -> Result<ParamId> {
        let n = shape.iter().product::<i64>();
        let width = shape.iter().skip(1).product::<i64>();
        let values = (0..n)
            .map(|i| match padding_row {
                Some(row) if i / width == row => 0.0,
                _ => rng.normal() as f32,
            })
            .collect();
        self.push(name, trainable(values, shape)?)
    }

    /// A `torch.nn.Linear(fan_in, fan_out)` under `prefix`: `prefix.weight` and, with `bias`,
    /// `prefix.bias`, both uniform in ±1/√fan_in. An empty prefix names them `weight`, `bias`.
    pub fn linear(
        &mut self,
        rng: &mut Rng,
        prefix: &str,
        fan_in: i64,
        fan_out: i64,
        bias: bool,
    ) -> Result<Linear> {
        let bound = 1.0 / (fan_in as f64).sqrt();
        let weight = self.uniform(rng, join(prefix, "weight"), &[fan_out, fan_in], bound)?;
        let bias = if bias {
            Some(self.uniform(rng, join(prefix, "bias"), &[fan_out], bound)?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    /// A `torch.nn.LayerNorm(width)` under `prefix`: weight 1, bias 0.
    pub fn layer_norm(&mut self, prefix: &str, width: i64) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.constant(format!("{prefix}.weight"), &[width], 1.0)?,
            bias: self.constant(format!("{prefix}.bias"), &[width], 0.0)?,
            width,
            eps: 1e-5,
        })
    }

    /// Adds a parameter drawn from N(0, `std`²), as Hugging Face initialises linear layers.
    pub fn normal_scaled(
        &mut self,
        rng: &mut Rng,
        name: impl Into<String>,
        shape: &[i64],
        std: f64,
    ) -> Result<ParamId> {
        let n = shape.iter().product::<i64>();
        let values = (0..n).map(|_| (rng.normal() * std) as f32).collect();
        self.push(name, trainable(values, shape)?)
    }

    /// Adds a parameter made of `tensor` (e.g. just read from a file), as float32. It keeps
    /// `tensor`'s storage when that is float32 and contiguous already: give a tensor nothing
    /// else holds.
    pub fn tensor(&mut self, name: impl Into<String>, tensor: Tensor) -> Result<ParamId> {
        let own = tensor
            .f_detach()?
            .f_to_kind(Kind::Float)?
            .f_contiguous()?
            .set_requires_grad(true);
        self.push(name, own)
    }

    /// Adds a parameter of `shape` holding `values` (row-major).
    pub fn values(
        &mut self,
        name: impl Into<String>,
        shape: &[i64],
        values: Vec<f32>,
    ) -> Result<ParamId> {
        self.push(name, trainable(values, shape)?)
    }

    fn push(&mut self, name: impl Into<String>, tensor: Tensor) -> Result<ParamId> {
        self.entries.push((name.into(), tensor));
        Ok(self.entries.len() - 1)
    }

    /// The tensor of parameter `id`.
    pub fn get(&self, id: ParamId) -> &Tensor {
        &self.entries[id].1
    }

    /// Every parameter with its name, in declaration order.
    pub fn named(&self) -> Vec<NamedParameter> {
        self.entries
            .iter()
            .map(|(name, tensor)| NamedParameter {
                name: name.clone(),
                tensor: tensor.shallow_clone(),
            })
            .collect()
    }

    fn position(&self, name: &str, model: &str) -> Result<usize> {
        self.entries
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
                Error::config(
                    name,
                    format!("{model} has no parameter {name:?}; its parameters are {known:?}"),
                )
            })
    }

    /// Makes parameter `target` the very tensor of parameter `source` (`model` names the model
    /// in errors).
    ///
    /// # Errors
    /// [`Error::Config`] when a name is unknown or the shapes differ.
    pub fn share(&mut self, target: &str, source: &str, model: &str) -> Result<()> {
        let from = self.position(source, model)?;
        let to = self.position(target, model)?;
        let source_tensor = self.entries[from].1.shallow_clone();
        if source_tensor.size() != self.entries[to].1.size() {
            return Err(Error::config(
                target,
                format!(
                    "cannot share {source} {:?} with {target} {:?}: shapes differ",
                    source_tensor.size(),
                    self.entries[to].1.size()
                ),
            ));
        }
        self.entries[to].1 = source_tensor;
        Ok(())
    }
}

/// The parameters of one linear layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Linear {
    weight: ParamId,
    bias: Option<ParamId>,
}

impl Linear {
    /// A linear layer over parameters already in the store.
    pub fn from_ids(weight: ParamId, bias: Option<ParamId>) -> Self {
        Linear { weight, bias }
    }

    /// `x · weightᵀ + bias`.
    pub fn apply(&self, params: &Params, x: &Tensor) -> Result<Tensor> {
        Ok(x.f_linear(params.get(self.weight), self.bias.map(|b| params.get(b)))?)
    }
}

/// The parameters of one layer normalisation and its epsilon (1e-5, PyTorch's default, unless
/// built with [`LayerNorm::from_ids`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LayerNorm {
    weight: ParamId,
    bias: ParamId,
    width: i64,
    eps: f64,
}

impl LayerNorm {
    /// A layer normalisation over parameters already in the store.
    pub fn from_ids(weight: ParamId, bias: ParamId, width: i64, eps: f64) -> Self {
        LayerNorm {
            weight,
            bias,
            width,
            eps,
        }
    }

    /// Normalises the last dimension.
    pub fn apply(&self, params: &Params, x: &Tensor) -> Result<Tensor> {
        Ok(x.f_layer_norm(
            [self.width],
            Some(params.get(self.weight)),
            Some(params.get(self.bias)),
            self.eps,
            true,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_read_for_a_parameter_becomes_it_without_a_copy() {
        let mut params = Params::default();
        let read = Tensor::from_slice(&[1.0f32, 2.0]);
        let storage = read.data_ptr();
        let id = params.tensor("w", read).unwrap();
        assert_eq!(params.get(id).data_ptr(), storage);
        assert!(params.get(id).requires_grad());
        let half = Tensor::from_slice(&[1.0f32, 2.0]).to_kind(Kind::Half);
        let id = params.tensor("h", half).unwrap();
        assert_eq!(params.get(id).kind(), Kind::Float);
    }
}
