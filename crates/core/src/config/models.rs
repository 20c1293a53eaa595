use serde::{Deserialize, Serialize};

use super::rules::shown;
use super::tagged::config_enum;
use crate::{Error, Result};

config_enum! {
    /// The models.
    #[derive(Debug, Clone, PartialEq)]
    pub enum ModelConfig {
        /// `xpm_torch.models.MlpScorer`.
        Mlp(MlpScorerConfig) = "xpm_torch.models.MlpScorer",
        /// `xpm_torch.models.Linear`.
        Linear(LinearConfig) = "xpm_torch.models.Linear",
        /// `xpm_torch.models.MLP`.
        MultiLayer(MlpConfig) = "xpm_torch.models.MLP",
        /// `xpm_torch.models.EmbeddingDualEncoder`.
        DualEncoder(DualEncoderConfig) = "xpm_torch.models.EmbeddingDualEncoder",
        /// `xpm_torch.models.DRMM`.
        Drmm(DrmmConfig) = "xpm_torch.models.DRMM",
        /// `xpm_torch.models.TransformerCrossEncoder`.
        Transformer(TransformerConfig) = "xpm_torch.models.TransformerCrossEncoder",
        /// `xpm_torch.models.TorchScriptModel`.
        TorchScript(TorchScriptConfig) = "xpm_torch.models.TorchScriptModel",
        /// `xpm_torch.module.MultipleModel`.
        Multiple(MultipleModelConfig) = "xpm_torch.module.MultipleModel",
        /// `xpm_torch.models.CrossEncoder`.
        CrossEncoder(super::CrossEncoderConfig) = "xpm_torch.models.CrossEncoder",
        /// `xpm_torch.models.BiEncoder`.
        BiEncoder(super::BiEncoderConfig) = "xpm_torch.models.BiEncoder",
        /// `xpm_torch.models.SigmoidOutput`.
        Sigmoid(SigmoidOutputConfig) = "xpm_torch.models.SigmoidOutput",
    }
}

/// Another model's scores through a sigmoid: probabilities, or their logarithms.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SigmoidOutputConfig {
    /// The model whose real-valued scores are read as logits.
    pub model: Box<ModelConfig>,
    /// `probability` (sigmoid) or `log-probability` (log-sigmoid).
    pub output: SigmoidScores,
}

/// What [`SigmoidOutputConfig`] makes of the logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SigmoidScores {
    /// `sigmoid(x)`.
    Probability,
    /// `log(sigmoid(x))`.
    LogProbability,
}

/// Several named models trained together; `scorer` names the one that scores.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MultipleModelConfig {
    /// The models by name; their parameters are named `<name>.<parameter>`.
    pub models: std::collections::BTreeMap<String, ModelConfig>,
    /// The name of the model that scores.
    pub scorer: String,
}

/// A multi-layer perceptron mapping a feature vector to one relevance score.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MlpScorerConfig {
    /// Number of input features.
    pub input_dim: i64,
    /// Widths of the hidden layers (ReLU between layers); the output layer has width 1.
    pub hidden_dims: Vec<i64>,
}

/// A linear scorer: `torch.nn.Linear(input_dim, 1)`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinearConfig {
    /// Number of input features.
    pub input_dim: i64,
}

/// The non-linearity between layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `torch.nn.ReLU`.
    Relu,
    /// `torch.nn.GELU` (exact erf form).
    Gelu,
    /// `torch.nn.Tanh`.
    Tanh,
}

/// A multi-layer perceptron with a choice of activation, dropout and layer normalisation.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MlpConfig {
    /// Number of input features.
    pub input_dim: i64,
    /// Widths of the hidden layers; the output layer has width 1.
    pub hidden_dims: Vec<i64>,
    /// Activation after each hidden layer.
    pub activation: Activation,
    /// Dropout probability after each activation (0: none).
    pub dropout: f64,
    /// Layer normalisation after each hidden linear layer, before the activation.
    pub layer_norm: bool,
}

/// How a dual encoder compares its two vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Similarity {
    /// Cosine similarity.
    Cosine,
    /// Dot product.
    Dot,
}

/// Mean token embeddings of query and document (an `EmbeddingBag`), compared.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DualEncoderConfig {
    /// Token ids are below this; 0 is padding.
    pub vocab_size: i64,
    /// Embedding width.
    pub dim: i64,
    /// The score.
    pub similarity: Similarity,
}

/// DRMM: matching histograms of query–document term similarities, a feed-forward network per
/// query term, term gating.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrmmConfig {
    /// Token ids are below this; 0 is padding.
    pub vocab_size: i64,
    /// Embedding width.
    pub dim: i64,
    /// Histogram bins over cosine similarity [-1, 1]; the last holds exact matches.
    pub bins: i64,
    /// Hidden widths of the feed-forward network over each histogram (tanh between).
    pub hidden_dims: Vec<i64>,
}

/// A small Transformer cross-encoder over `[CLS] query [SEP] document`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TransformerConfig {
    /// Token ids are below this; 0 is padding; `[CLS]` and `[SEP]` are `vocab_size` and
    /// `vocab_size + 1`.
    pub vocab_size: i64,
    /// Model width.
    pub dim: i64,
    /// Attention heads (divides `dim`).
    pub heads: i64,
    /// Encoder layers.
    pub layers: i64,
    /// Width of each layer's feed-forward network.
    pub ffn_dim: i64,
    /// Longest input (special tokens included); documents are truncated to fit.
    pub max_length: i64,
    /// Dropout probability.
    pub dropout: f64,
}

/// What a TorchScript module's `forward` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScriptInput {
    /// `forward(features: B×F float)`.
    Features,
    /// `forward(query_ids, query_lengths, document_ids, document_lengths)` (int64, 0-padded).
    Text,
}

/// A model scripted or traced in Python and saved with `torch.jit.save`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchScriptConfig {
    /// What the model is (its identity: paths never enter identifiers).
    pub id: String,
    /// The `.pt` file.
    pub path: String,
    /// What `forward` takes.
    pub input: ScriptInput,
}

impl ModelConfig {
    /// The cross-field rules of the models (declared in TypeScript too, with the same messages;
    /// the value rules of single fields come from the schema, see `rules.rs`).
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match self {
            ModelConfig::Transformer(c) => {
                if c.heads > 0 && c.dim % c.heads != 0 {
                    return Err(Error::config(
                        format!("{path}.heads"),
                        format!("must divide dim ({})", c.dim),
                    ));
                }
                Ok(())
            }
            ModelConfig::Sigmoid(c) => c.model.validate(&format!("{path}.model")),
            ModelConfig::Multiple(c) => {
                c.check(path)?;
                c.models
                    .iter()
                    .try_for_each(|(name, m)| m.validate(&format!("{path}.models.{name}")))
            }
            _ => Ok(()),
        }
    }
}

impl ModelConfig {
    /// The prefix of this model's parameter names that `part` owns when `part` is this model
    /// (`""`), the model a SigmoidOutput wraps (`""`: it keeps the names) or an entry of a
    /// MultipleModel (`"<name>."`); `None` when `part` is none of them.
    pub fn prefix_of(&self, part: &ModelConfig) -> Option<String> {
        if self == part {
            return Some(String::new());
        }
        match self {
            ModelConfig::Sigmoid(c) => c.model.prefix_of(part),
            ModelConfig::Multiple(c) => c.models.iter().find_map(|(name, entry)| {
                entry.prefix_of(part).map(|inner| format!("{name}.{inner}"))
            }),
            _ => None,
        }
    }
}

impl MultipleModelConfig {
    /// Checks the names: at least one model, none empty or holding a `.`, `scorer` among them.
    pub(crate) fn check(&self, path: &str) -> Result<()> {
        if self.models.is_empty() {
            return Err(Error::config(
                format!("{path}.models"),
                "needs at least one model",
            ));
        }
        if let Some(bad) = self.models.keys().find(|n| n.is_empty() || n.contains('.')) {
            return Err(Error::config(
                format!("{path}.models"),
                format!("{} cannot name a model: names are non-empty and hold no \".\" (parameters are named <model>.<parameter>)", shown(bad)),
            ));
        }
        if !self.models.contains_key(&self.scorer) {
            // In order, as the TypeScript message sorts them: the map is ordered.
            let names: Vec<&String> = self.models.keys().collect();
            return Err(Error::config(
                format!("{path}.scorer"),
                format!(
                    "{} is not one of the models {}",
                    shown(&self.scorer),
                    shown(names)
                ),
            ));
        }
        Ok(())
    }
}
