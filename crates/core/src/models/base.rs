//! The [`Model`] trait the learner trains, its [`NamedParameter`]s, and the [`OutputType`] of its
//! scores that decides how losses turn them into probabilities.

use std::path::Path;

use tch::Tensor;

use crate::data::ScoreInput;
use crate::{Error, Result};

/// What a model's scores are, which decides how a loss turns them into probabilities
/// (`real`, `probability`, `log-probability` in configurations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputType {
    /// Any real number, read as a logit.
    Real,
    /// A probability in (0, 1).
    Probability,
    /// The logarithm of a probability, so at most 0.
    LogProbability,
}

/// Scoring without gradients (see [`ScoringScope::enter`]).
pub enum ScoringScope {
    /// libtorch's inference mode: no autograd bookkeeping at all.
    Inference(crate::runtime::InferenceMode),
    /// `no_grad`, for models that are not [`Model::inference_mode_safe`].
    NoGrad(tch::NoGradGuard),
}

impl ScoringScope {
    /// Scores `model` without gradients on the calling thread until dropped: in inference
    /// mode where the model allows it, else under `no_grad`.
    ///
    /// # Errors
    /// A libtorch error entering inference mode.
    pub fn enter(model: &dyn Model) -> Result<Self> {
        Ok(if model.inference_mode_safe() {
            ScoringScope::Inference(crate::runtime::InferenceMode::enter()?)
        } else {
            ScoringScope::NoGrad(tch::no_grad_guard())
        })
    }
}

/// A named trainable tensor of a model.
#[derive(Debug)]
pub struct NamedParameter {
    /// Dotted name, e.g. `layers.0.weight`.
    pub name: String,
    /// The tensor (a shallow handle: updating it updates the model).
    pub tensor: Tensor,
}

/// A model the learner trains: scores from features, named parameters, saving.
pub trait Model: Send {
    /// Scores of a batch of `B` (query, document) rows, shape `B`.
    ///
    /// # Errors
    /// [`Error::Config`] when the model cannot score this kind of input (see
    /// [`ScoreInput::features`]), or a libtorch error (e.g. a shape mismatch).
    fn forward(&self, input: &ScoreInput) -> Result<Tensor>;

    /// What the scores are; the losses read them accordingly.
    fn output_type(&self) -> OutputType {
        OutputType::Real
    }

    /// Every parameter with its name, in declaration order; a shared parameter appears under
    /// each name, as one tensor.
    fn named_parameters(&self) -> Vec<NamedParameter>;

    /// Makes parameter `target` the very tensor of parameter `source`.
    ///
    /// # Errors
    /// [`Error::Config`] when a name is unknown or the shapes differ.
    fn share(&mut self, target: &str, source: &str) -> Result<()>;

    /// Switches between training and evaluation behaviour (dropout, ...).
    fn set_training(&mut self, _training: bool) {}

    /// Whether a forward in libtorch's inference mode leaves nothing behind that a later
    /// training forward reads. A TorchScript module does not: its executor keeps what it
    /// recorded of a run, and a training run after an inference-mode validation fails with
    /// "Inference tensors cannot be saved for backward".
    fn inference_mode_safe(&self) -> bool {
        true
    }

    /// The parameters its pretrained files lacked, drawn new when it was built (a
    /// cross-encoder's head over an encoder saved without one), as transformers reports the
    /// weights it "newly initialized": its scores mean nothing until they are trained. Empty
    /// for a model without pretrained files, which draws all its parameters.
    fn new_weights(&self) -> Vec<String> {
        Vec::new()
    }

    /// One vector per encoded text (`query`: by the query encoder), for models that embed
    /// texts apart (bi-encoders).
    ///
    /// # Errors
    /// [`Error::Config`] for models that do not embed texts.
    fn embed(&self, _texts: &crate::data::EncodedRows, _query: bool) -> Result<Tensor> {
        Err(Error::config(
            "model",
            "this model does not embed texts: embed() needs a BiEncoder",
        ))
    }

    /// Writes the parameters to a safetensors file, in their dtype (float64 stays float64),
    /// from host copies, through a temporary file and a rename.
    ///
    /// # Errors
    /// [`Error::Io`] or a libtorch error.
    fn save(&self, path: &Path) -> Result<()> {
        let params = self.named_parameters();
        let named: Vec<(&str, Tensor)> = params
            .iter()
            .map(|p| {
                Ok((
                    p.name.as_str(),
                    p.tensor.f_detach()?.f_to_device(tch::Device::Cpu)?,
                ))
            })
            .collect::<Result<_>>()?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let tmp = crate::fsutil::temporary_sibling(path);
        Tensor::write_safetensors(&named, &tmp)?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }
}
