use tch::Tensor;

use crate::data::{LtrDataset, PreferencePair};
use crate::models::MlpScorer;
use crate::Result;

/// Held-out data prepared once: features as a tensor and its preference pairs.
#[derive(Debug)]
pub struct PairwiseEvaluation {
    features: Tensor,
    pairs: Vec<PreferencePair>,
}

impl PairwiseEvaluation {
    /// Prepares `dataset` for repeated evaluation.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn new(dataset: &LtrDataset) -> Result<Self> {
        Ok(PairwiseEvaluation {
            features: dataset.features_tensor()?,
            pairs: dataset.preference_pairs(),
        })
    }

    /// Fraction of preference pairs the model scores in the right order (strictly); `NaN`
    /// when the data has no pair.
    ///
    /// # Errors
    /// A libtorch error from the forward pass.
    pub fn accuracy(&self, model: &MlpScorer) -> Result<f64> {
        let _no_grad = tch::no_grad_guard();
        let scores = Vec::<f32>::try_from(model.forward(&self.features)?)?;
        let correct = self
            .pairs
            .iter()
            .filter(|(i, j)| scores[*i as usize] > scores[*j as usize])
            .count();
        Ok(correct as f64 / self.pairs.len() as f64)
    }
}
