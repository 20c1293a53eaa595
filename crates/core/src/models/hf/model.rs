//! Hugging Face models under the names transformers saves: a base encoder ([`HfEncoderModel`])
//! and an encoder with a sequence-classification head ([`HfSequenceClassifier`]).

use std::path::Path;

use tch::Tensor;

use super::config::EncoderSettings;
use super::encoder::{masked_mean, Encoder, EncoderInput, Loader};
use super::head::Head;
use super::weights::HfWeights;
use crate::models::params::Params;
use crate::models::NamedParameter;
use crate::rng::Rng;
use crate::Result;

/// A pretrained base encoder (`AutoModel`) read from a Hugging Face directory. Its parameters
/// carry the base model's names without prefix (`embeddings.word_embeddings.weight`, ...), as
/// `BertModel.save_pretrained` and sentence-transformers write them.
#[derive(Debug)]
pub struct HfEncoderModel {
    params: Params,
    encoder: Encoder,
}

impl HfEncoderModel {
    /// Reads `dir` (config.json and safetensors weights, with or without the base prefix).
    ///
    /// # Errors
    /// [`crate::Error::ModelDirectory`] naming the file: see [`EncoderSettings::read`] and
    /// [`HfWeights::read`]; a missing or mis-shaped tensor.
    pub fn load(dir: &Path) -> Result<Self> {
        let settings = EncoderSettings::read(dir)?;
        let weights = HfWeights::read(dir, settings.architecture.base_prefix())?;
        Self::from_weights(&settings, &weights)
    }

    /// The encoder `settings` describe, with the tensors of `weights`.
    ///
    /// # Errors
    /// [`crate::Error::ModelDirectory`] naming a missing or mis-shaped tensor; nothing is kept.
    pub fn from_weights(settings: &EncoderSettings, weights: &HfWeights) -> Result<Self> {
        Self::named(settings, weights, "")
    }

    /// As [`HfEncoderModel::from_weights`], its parameters named under `prefix` (e.g.
    /// `query.embeddings…`; none when empty).
    ///
    /// # Errors
    /// As [`HfEncoderModel::from_weights`].
    pub fn named(settings: &EncoderSettings, weights: &HfWeights, prefix: &str) -> Result<Self> {
        let mut params = Params::default();
        let encoder = Encoder::load(
            settings,
            &mut Loader {
                weights,
                params: &mut params,
                prefix,
            },
        )?;
        Ok(HfEncoderModel { params, encoder })
    }

    /// Makes parameter `target` the very tensor of parameter `source`.
    ///
    /// # Errors
    /// [`crate::Error::Config`] when a name is unknown or the shapes differ.
    pub fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "BiEncoder")
    }

    /// The settings read from config.json.
    pub fn settings(&self) -> &EncoderSettings {
        &self.encoder.settings
    }

    /// The last hidden states, `B × T × H`.
    ///
    /// # Errors
    /// A libtorch error (e.g. ids beyond the vocabulary).
    pub fn hidden(&self, input: &EncoderInput, training: bool) -> Result<Tensor> {
        self.encoder.hidden(&self.params, input, training)
    }

    /// The mask-weighted mean of the hidden states, `B × H`.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn mean(&self, input: &EncoderInput, training: bool) -> Result<Tensor> {
        masked_mean(&self.hidden(input, training)?, &input.mask)
    }

    /// The pooler output `tanh(pooler.dense(h[:, 0]))`, when the file has a pooler.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn pooler_output(&self, input: &EncoderInput) -> Result<Option<Tensor>> {
        let hidden = self.hidden(input, false)?;
        self.encoder.pooled(&self.params, &hidden)
    }

    /// Every parameter with its Hugging Face name.
    pub fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }
}

/// An encoder with a sequence-classification head (`…ForSequenceClassification`). Its
/// parameters carry the names transformers saves such a model under: the base model's with
/// its prefix (`bert.embeddings…`), the head's without (`classifier.weight`, ...).
#[derive(Debug)]
pub struct HfSequenceClassifier {
    params: Params,
    encoder: Encoder,
    head: Head,
}

impl HfSequenceClassifier {
    /// Reads `dir` with a head of `labels` outputs: the file's head when it has one of that
    /// size, otherwise a new one drawn from `rng`.
    ///
    /// # Errors
    /// As [`HfEncoderModel::load`]; a file head missing a part or mis-shaped.
    pub fn load(dir: &Path, labels: i64, rng: &mut Rng) -> Result<Self> {
        let settings = EncoderSettings::read(dir)?;
        let weights = HfWeights::read(dir, settings.architecture.base_prefix())?;
        Self::from_weights(&settings, &weights, labels, rng)
    }

    /// The classifier `settings` describe, with the tensors of `weights`.
    ///
    /// # Errors
    /// As [`HfSequenceClassifier::load`].
    pub fn from_weights(
        settings: &EncoderSettings,
        weights: &HfWeights,
        labels: i64,
        rng: &mut Rng,
    ) -> Result<Self> {
        let prefix = settings.architecture.base_prefix();
        let mut params = Params::default();
        let mut encoder = Encoder::load(
            settings,
            &mut Loader {
                weights,
                params: &mut params,
                prefix,
            },
        )?;
        let head = Head::build(
            &mut encoder,
            Some(weights),
            &mut params,
            rng,
            labels,
            prefix,
        )?;
        Ok(HfSequenceClassifier {
            params,
            encoder,
            head,
        })
    }

    /// The settings read from config.json.
    pub fn settings(&self) -> &EncoderSettings {
        &self.encoder.settings
    }

    /// Makes parameter `target` the very tensor of parameter `source`.
    ///
    /// # Errors
    /// [`crate::Error::Config`] when a name is unknown or the shapes differ.
    pub fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "CrossEncoder")
    }

    /// Whether the head came from the file (otherwise it is new).
    pub fn head_loaded(&self) -> bool {
        self.head.loaded
    }

    /// The parameters the file lacked, drawn new: a head's, and a BERT pooler's.
    pub fn new_weights(&self) -> &[String] {
        &self.head.new_weights
    }

    /// Logits, `B × labels`.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn logits(&self, input: &EncoderInput, training: bool) -> Result<Tensor> {
        let hidden = self.encoder.hidden(&self.params, input, training)?;
        self.head
            .apply(&self.encoder, &self.params, &hidden, training)
    }

    /// The base model's last hidden states, `B × T × H`.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn hidden(&self, input: &EncoderInput, training: bool) -> Result<Tensor> {
        self.encoder.hidden(&self.params, input, training)
    }

    /// Every parameter with its Hugging Face name.
    pub fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }
}
