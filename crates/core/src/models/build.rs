use super::{
    Drmm, DualEncoder, LinearScorer, Mlp, MlpScorer, Model, MultipleModel, TorchScriptModel,
    TransformerCrossEncoder,
};
use crate::config::ModelConfig;
use crate::rng::Rng;
use crate::Result;

/// The model `config` describes, its parameters drawn from `rng` (`path` names the config in
/// errors, e.g. `learner.model`).
///
/// # Errors
/// [`crate::Error::Config`] for a TorchScript file that cannot be loaded; a libtorch error.
pub fn build(config: &ModelConfig, rng: &mut Rng, path: &str) -> Result<Box<dyn Model>> {
    Ok(match config {
        ModelConfig::Mlp(c) => Box::new(MlpScorer::new(c, rng)?),
        ModelConfig::Linear(c) => Box::new(LinearScorer::new(c, rng)?),
        ModelConfig::MultiLayer(c) => Box::new(Mlp::new(c, rng)?),
        ModelConfig::DualEncoder(c) => Box::new(DualEncoder::new(c, rng)?),
        ModelConfig::Drmm(c) => Box::new(Drmm::new(c, rng)?),
        ModelConfig::Transformer(c) => Box::new(TransformerCrossEncoder::new(c, rng)?),
        ModelConfig::TorchScript(c) => Box::new(TorchScriptModel::load(c, path)?),
        ModelConfig::Multiple(c) => Box::new(MultipleModel::new(c, rng, path)?),
        ModelConfig::CrossEncoder(c) => Box::new(super::hf::CrossEncoder::new(c, rng, path)?),
        ModelConfig::BiEncoder(c) => Box::new(super::hf::BiEncoder::new(c, path)?),
        ModelConfig::Sigmoid(c) => Box::new(super::SigmoidOutput::new(c, rng, path)?),
    })
}

/// Whether a model of `config` draws random numbers from libtorch's default generators, which
/// the run then seeds and checkpoints (a TorchScript module's dropout, which we cannot redirect
/// to the run's own generators); the built-in models draw from the run's own.
pub fn draws_from_global_generator(config: &ModelConfig) -> bool {
    match config {
        ModelConfig::TorchScript(_) => true,
        ModelConfig::Multiple(c) => c.models.values().any(draws_from_global_generator),
        ModelConfig::Sigmoid(c) => draws_from_global_generator(&c.model),
        _ => false,
    }
}
