//! [`TorchScriptModel`]: a module saved with `torch.jit.save`, trained in place under its
//! PyTorch parameter names.

use std::path::Path;

use tch::{CModule, Tensor};

use super::{Model, NamedParameter};
use crate::config::{Input, TorchScriptModelConfig};
use crate::data::ScoreInput;
use crate::{Error, Result};

/// A model scripted or traced in Python and saved with `torch.jit.save`. Its parameters (the
/// module's `named_parameters()`, under PyTorch's names) are trained in place: optimizers update
/// the very tensors the module computes with, and freezing turns their `requires_grad` off.
pub struct TorchScriptModel {
    module: CModule,
    /// Handles on the module's own parameter tensors.
    parameters: Vec<(String, Tensor)>,
    input: Input,
    id: String,
}

impl std::fmt::Debug for TorchScriptModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TorchScriptModel")
            .field("id", &self.id)
            .field("parameters", &self.parameters.len())
            .finish()
    }
}

impl TorchScriptModel {
    /// Loads the module at `config.path` on the CPU (`path` names the config in errors).
    ///
    /// # Errors
    /// [`Error::Config`] when the file is missing or is not a TorchScript module, or when the
    /// module has no parameter to train.
    pub fn load(config: &TorchScriptModelConfig, path: &str) -> Result<Self> {
        let file = Path::new(&config.path);
        if !file.is_file() {
            return Err(Error::config(
                format!("{path}.path"),
                format!(
                    "{}: no such file (save the module with torch.jit.save)",
                    config.path
                ),
            ));
        }
        let mut module = CModule::load(file).map_err(|e| {
            Error::config(
                format!("{path}.path"),
                format!(
                    "{} is not a TorchScript module (torch.jit.script or torch.jit.trace, then \
                     torch.jit.save): {e}",
                    config.path
                ),
            )
        })?;
        module.f_set_train()?;
        let parameters = module
            .named_parameters()?
            .into_iter()
            .map(|(name, tensor)| (name, tensor.set_requires_grad(true)))
            .collect::<Vec<_>>();
        if parameters.is_empty() {
            return Err(Error::config(
                format!("{path}.path"),
                format!("{}: the module has no parameter to train", config.path),
            ));
        }
        Ok(TorchScriptModel {
            module,
            parameters,
            input: config.input,
            id: config.id.clone(),
        })
    }
}

impl Model for TorchScriptModel {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let name = format!("TorchScriptModel {:?}", self.id);
        let output = match self.input {
            Input::Features => self.module.forward_ts(&[input.features(&name)?])?,
            Input::Text => {
                let (q, d) = input.text(&name)?;
                self.module
                    .forward_ts(&[&q.ids, &q.lengths, &d.ids, &d.lengths])?
            }
        };
        let rows = input.len();
        let scores = match output.size().as_slice() {
            [b] if *b == rows => output,
            [b, 1] if *b == rows => output.f_squeeze_dim(-1)?,
            other => {
                return Err(Error::config(
                    "learner.model",
                    format!(
                        "{name}: forward returned shape {other:?}; a scorer returns one score per \
                         row, shape [{rows}] or [{rows}, 1]"
                    ),
                ))
            }
        };
        Ok(scores)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.parameters
            .iter()
            .map(|(name, tensor)| NamedParameter {
                name: name.clone(),
                tensor: tensor.shallow_clone(),
            })
            .collect()
    }

    fn share(&mut self, target: &str, _source: &str) -> Result<()> {
        Err(Error::config(
            target,
            "a TorchScript module's parameters cannot be tied from outside: TorchScript \
             exposes no way to replace a module attribute, so tie them in Python before \
             scripting (e.g. `self.b.weight = self.a.weight`)",
        ))
    }

    fn inference_mode_safe(&self) -> bool {
        false
    }

    fn set_training(&mut self, training: bool) {
        // Switching modes only fails for a module without a `train` method, which `load`
        // has already called successfully.
        let _ = if training {
            self.module.f_set_train()
        } else {
            self.module.f_set_eval()
        };
    }
}
