//! [`Mlp`]: a configurable multi-layer perceptron scorer (layer norm, activation, dropout) with
//! the parameter names of PyTorch's `nn.Sequential`.

use tch::Tensor;

use super::params::{LayerNorm, Linear, Params};
use super::{Model, NamedParameter};
use crate::config::{Activation, MlpConfig};
use crate::data::ScoreInput;
use crate::rng::Rng;
use crate::runtime::dropout;
use crate::Result;

/// One hidden block: linear, optional layer norm, activation, optional dropout.
#[derive(Debug)]
struct Block {
    linear: Linear,
    norm: Option<LayerNorm>,
}

/// A multi-layer perceptron scorer laid out as PyTorch's
/// `layers = nn.Sequential(Linear, [LayerNorm], Act, [Dropout], ..., Linear(h, 1))`, so its
/// parameters are `layers.<k>.weight|bias` with `k` counting every module of the sequence.
#[derive(Debug)]
pub struct Mlp {
    params: Params,
    blocks: Vec<Block>,
    output: Linear,
    activation: Activation,
    dropout: f64,
    training: bool,
}

impl Mlp {
    /// A fresh model with PyTorch's default initialisation drawn from `rng`.
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &MlpConfig, rng: &mut Rng) -> Result<Self> {
        let mut params = Params::default();
        let mut blocks = Vec::with_capacity(config.hidden_dims.len());
        let mut index = 0;
        let mut width = config.input_dim as i64;
        for hidden in config.hidden_dims.iter().map(|&h| h as i64) {
            let linear = params.linear(rng, &format!("layers.{index}"), width, hidden, true)?;
            index += 1;
            let norm = if config.layer_norm {
                index += 1;
                Some(params.layer_norm(&format!("layers.{}", index - 1), hidden)?)
            } else {
                None
            };
            index += 1; // the activation
            if config.dropout > 0.0 {
                index += 1;
            }
            blocks.push(Block { linear, norm });
            width = hidden;
        }
        let output = params.linear(rng, &format!("layers.{index}"), width, 1, true)?;
        Ok(Mlp {
            params,
            blocks,
            output,
            activation: config.activation,
            dropout: config.dropout,
            training: true,
        })
    }
}

/// Applies `activation`.
pub(crate) fn activate(activation: Activation, x: &Tensor) -> Result<Tensor> {
    Ok(match activation {
        Activation::Relu => x.f_relu()?,
        Activation::Gelu => x.f_gelu("none")?,
        Activation::Tanh => x.f_tanh()?,
    })
}

impl Model for Mlp {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let mut x = input.features("MLP")?.shallow_clone();
        for block in &self.blocks {
            x = block.linear.apply(&self.params, &x)?;
            if let Some(norm) = &block.norm {
                x = norm.apply(&self.params, &x)?;
            }
            x = activate(self.activation, &x)?;
            if self.dropout > 0.0 {
                x = dropout(&x, self.dropout, self.training)?;
            }
        }
        Ok(self.output.apply(&self.params, &x)?.f_squeeze_dim(-1)?)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "MLP")
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}
