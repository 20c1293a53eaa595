//! [`SigmoidOutput`]: another model's scores read as logits and turned into (log-)probabilities,
//! adding no parameter so that its weights load into the bare model and back.

use tch::Tensor;

use super::{build, Model, NamedParameter, OutputType};
use crate::config::{Output, SigmoidOutputConfig};
use crate::data::{EncodedRows, ScoreInput};
use crate::rng::Rng;
use crate::Result;

/// Another model's scores read as logits and turned into probabilities (sigmoid) or
/// log-probabilities (log-sigmoid, exact where the sigmoid underflows), so that the losses take
/// their probability branches. It adds no parameter and keeps the model's names, so its weights
/// load into the bare model and back.
pub struct SigmoidOutput {
    model: Box<dyn Model>,
    output: OutputType,
}

impl std::fmt::Debug for SigmoidOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigmoidOutput")
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl SigmoidOutput {
    /// The wrapped model built from `rng` as it would be alone; `path` names the config in errors.
    ///
    /// # Errors
    /// [`crate::Error::Config`] for `output: real`; any error building the model.
    pub fn new(config: &SigmoidOutputConfig, rng: &mut Rng, path: &str) -> Result<Self> {
        crate::config::AnyModule::SigmoidOutput(config.clone()).validate(path)?;
        Ok(SigmoidOutput {
            model: build(&config.model, rng, &format!("{path}.model"))?,
            output: match config.output {
                Output::Probability => OutputType::Probability,
                Output::LogProbability => OutputType::LogProbability,
            },
        })
    }
}

impl Model for SigmoidOutput {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let logits = self.model.forward(input)?;
        Ok(match self.output {
            OutputType::LogProbability => logits.f_log_sigmoid()?,
            _ => logits.f_sigmoid()?,
        })
    }

    fn output_type(&self) -> OutputType {
        self.output
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.model.named_parameters()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.model.share(target, source)
    }

    fn set_training(&mut self, training: bool) {
        self.model.set_training(training);
    }

    fn inference_mode_safe(&self) -> bool {
        self.model.inference_mode_safe()
    }

    fn new_weights(&self) -> Vec<String> {
        self.model.new_weights()
    }

    fn embed(&self, texts: &EncodedRows, query: bool) -> Result<Tensor> {
        self.model.embed(texts, query)
    }
}
