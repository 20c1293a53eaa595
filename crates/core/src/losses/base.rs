use tch::Tensor;

use crate::Result;

/// A loss over pairs of scores.
pub trait PairwiseLoss: Send {
    /// The name metrics are logged under (the reference's, e.g. `pair-hinge`).
    fn name(&self) -> &'static str;
    /// Weight in the trainer's sum of losses.
    fn weight(&self) -> f64;
    /// Sum of the per-pair losses for preferred scores `positive` and other scores `negative`.
    ///
    /// # Errors
    /// A libtorch error.
    fn sum(&self, positive: &Tensor, negative: &Tensor) -> Result<Tensor>;
}
