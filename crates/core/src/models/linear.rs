//! [`LinearScorer`]: a linear map of feature vectors to scores, as `torch.nn.Linear(input_dim, 1)`.

use tch::Tensor;

use super::params::{Linear, Params};
use super::{Model, NamedParameter};
use crate::config::LinearConfig;
use crate::data::ScoreInput;
use crate::rng::Rng;
use crate::Result;

/// A linear scorer, `torch.nn.Linear(input_dim, 1)`: parameters `weight` and `bias`.
#[derive(Debug)]
pub struct LinearScorer {
    params: Params,
    layer: Linear,
}

impl LinearScorer {
    /// A fresh model drawn like PyTorch's `nn.Linear` from `rng`.
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &LinearConfig, rng: &mut Rng) -> Result<Self> {
        let mut params = Params::default();
        let layer = params.linear(rng, "", config.input_dim as i64, 1, true)?;
        Ok(LinearScorer { params, layer })
    }
}

impl Model for LinearScorer {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let x = input.features("Linear")?;
        Ok(self.layer.apply(&self.params, x)?.f_squeeze_dim(-1)?)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "Linear")
    }
}
