//! [`build`]: the model a configuration describes, and whether it draws from libtorch's default
//! generators (a TorchScript module's dropout) rather than the run's own.

use super::{
    Drmm, DualEncoder, LinearScorer, Mlp, MlpScorer, Model, MultipleModel, TorchScriptModel,
    TransformerCrossEncoder,
};
use crate::config::AnyModule;
use crate::rng::Rng;
use crate::Result;

/// The stream of a run's seed that a model's new parameters are drawn from (see
/// [`crate::rng::Rng::derive`]): a Learner's, and a model opened with that seed.
pub const MODEL_INIT_STREAM: &str = "model/init";

/// The model `config` describes, its parameters drawn from `rng` (`path` names the config in
/// errors, e.g. `learner.model`).
///
/// # Errors
/// [`crate::Error::Config`] for a TorchScript file that cannot be loaded; a libtorch error.
pub fn build(config: &AnyModule, rng: &mut Rng, path: &str) -> Result<Box<dyn Model>> {
    Ok(match config {
        AnyModule::MlpScorer(c) => Box::new(MlpScorer::new(c, rng)?),
        AnyModule::Linear(c) => Box::new(LinearScorer::new(c, rng)?),
        AnyModule::Mlp(c) => Box::new(Mlp::new(c, rng)?),
        AnyModule::EmbeddingDualEncoder(c) => Box::new(DualEncoder::new(c, rng)?),
        AnyModule::Drmm(c) => Box::new(Drmm::new(c, rng)?),
        AnyModule::TransformerCrossEncoder(c) => Box::new(TransformerCrossEncoder::new(c, rng)?),
        AnyModule::TorchScriptModel(c) => Box::new(TorchScriptModel::load(c, path)?),
        AnyModule::MultipleModel(c) => Box::new(MultipleModel::new(c, rng, path)?),
        AnyModule::CrossEncoder(c) => Box::new(super::hf::CrossEncoder::new(c, rng, path)?),
        AnyModule::BiEncoder(c) => Box::new(super::hf::BiEncoder::new(c, path)?),
        AnyModule::SigmoidOutput(c) => Box::new(super::SigmoidOutput::new(c, rng, path)?),
    })
}

/// Whether a model of `config` draws random numbers from libtorch's default generators, which
/// the run then seeds and checkpoints (a TorchScript module's dropout, which we cannot redirect
/// to the run's own generators); the built-in models draw from the run's own.
pub fn draws_from_global_generator(config: &AnyModule) -> bool {
    match config {
        AnyModule::TorchScriptModel(_) => true,
        AnyModule::MultipleModel(c) => c.models.values().any(draws_from_global_generator),
        AnyModule::SigmoidOutput(c) => draws_from_global_generator(&c.model),
        _ => false,
    }
}
