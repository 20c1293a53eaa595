//! A Hugging Face directory's config.json read into [`EncoderSettings`]: the encoder family
//! ([`Architecture`]), sizes and activation, whatever names each family uses for them.

use std::path::Path;

use serde::Deserialize;

use crate::{Error, Result};

/// The encoder families read from a Hugging Face directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// `bert` (MiniLM, ms-marco cross-encoders).
    Bert,
    /// `roberta`.
    Roberta,
    /// `xlm-roberta` (RoBERTa's layout and prefix).
    XlmRoberta,
    /// `distilbert`.
    DistilBert,
    /// `electra` (the discriminator).
    Electra,
}

/// The `model_type` values [`Architecture::from_model_type`] accepts.
pub const SUPPORTED_MODEL_TYPES: [&str; 5] =
    ["bert", "roberta", "xlm-roberta", "distilbert", "electra"];

impl Architecture {
    /// The architecture of a config.json `model_type`.
    pub fn from_model_type(model_type: &str) -> Option<Self> {
        Some(match model_type {
            "bert" => Architecture::Bert,
            "roberta" => Architecture::Roberta,
            "xlm-roberta" => Architecture::XlmRoberta,
            "distilbert" => Architecture::DistilBert,
            "electra" => Architecture::Electra,
            _ => return None,
        })
    }

    /// The config.json `model_type`.
    pub fn model_type(self) -> &'static str {
        match self {
            Architecture::Bert => "bert",
            Architecture::Roberta => "roberta",
            Architecture::XlmRoberta => "xlm-roberta",
            Architecture::DistilBert => "distilbert",
            Architecture::Electra => "electra",
        }
    }

    /// The prefix of the base model's keys in a file saved from a head class (XLM-R uses
    /// RoBERTa's).
    pub fn base_prefix(self) -> &'static str {
        match self {
            Architecture::Bert => "bert",
            Architecture::Roberta | Architecture::XlmRoberta => "roberta",
            Architecture::DistilBert => "distilbert",
            Architecture::Electra => "electra",
        }
    }

    /// The `…ForSequenceClassification` class name transformers gives this architecture.
    pub fn classifier_class(self) -> &'static str {
        match self {
            Architecture::Bert => "BertForSequenceClassification",
            Architecture::Roberta => "RobertaForSequenceClassification",
            Architecture::XlmRoberta => "XLMRobertaForSequenceClassification",
            Architecture::DistilBert => "DistilBertForSequenceClassification",
            Architecture::Electra => "ElectraForSequenceClassification",
        }
    }

    /// Whether positions count from the padding id (RoBERTa's scheme).
    pub fn positions_after_padding(self) -> bool {
        matches!(self, Architecture::Roberta | Architecture::XlmRoberta)
    }
}

/// The feed-forward activation (`hidden_act`, DistilBERT's `activation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Exact (erf) GELU: `gelu`.
    Gelu,
    /// The tanh approximation: `gelu_new`, `gelu_pytorch_tanh`, `gelu_fast`.
    GeluTanh,
    /// `relu`.
    Relu,
    /// `silu` / `swish`.
    Silu,
}

const SUPPORTED_ACTIVATIONS: &str =
    "gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu, swish";

impl Activation {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            "silu" | "swish" => Activation::Silu,
            _ => return None,
        })
    }

    /// The name written back to config.json.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Gelu => "gelu",
            Activation::GeluTanh => "gelu_pytorch_tanh",
            Activation::Relu => "relu",
            Activation::Silu => "silu",
        }
    }
}

/// The sizes and settings of one encoder, whatever names its config.json uses for them.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderSettings {
    /// The family.
    pub architecture: Architecture,
    /// Rows of the word embedding.
    pub vocab_size: i64,
    /// Width of the layers (`hidden_size`, DistilBERT's `dim`).
    pub hidden_size: i64,
    /// Width of the embeddings (ELECTRA's `embedding_size`; the hidden size elsewhere).
    pub embedding_size: i64,
    /// Number of layers.
    pub layers: i64,
    /// Attention heads per layer.
    pub heads: i64,
    /// Width of the feed-forward layer.
    pub intermediate_size: i64,
    /// Feed-forward activation.
    pub activation: Activation,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f64,
    /// Rows of the position embedding.
    pub max_positions: i64,
    /// Rows of the token type embedding (0 for DistilBERT, which has none).
    pub type_vocab_size: i64,
    /// The padding token id.
    pub pad_token_id: i64,
    /// Dropout on embeddings and layer outputs.
    pub hidden_dropout: f64,
    /// Dropout on attention probabilities.
    pub attention_dropout: f64,
    /// Dropout in the classification head.
    pub classifier_dropout: f64,
    /// Labels of a classification head (`id2label`, `num_labels`; 2 when absent).
    pub num_labels: i64,
    /// Standard deviation of new linear weights (`initializer_range`, 0.02 by default).
    pub initializer_range: f64,
}

/// The config.json fields we read; the others (of which there are many) are ignored.
#[derive(Debug, Default, Deserialize)]
struct RawConfig {
    model_type: Option<String>,
    vocab_size: Option<i64>,
    hidden_size: Option<i64>,
    embedding_size: Option<i64>,
    num_hidden_layers: Option<i64>,
    num_attention_heads: Option<i64>,
    intermediate_size: Option<i64>,
    hidden_act: Option<String>,
    layer_norm_eps: Option<f64>,
    max_position_embeddings: Option<i64>,
    type_vocab_size: Option<i64>,
    pad_token_id: Option<i64>,
    hidden_dropout_prob: Option<f64>,
    attention_probs_dropout_prob: Option<f64>,
    classifier_dropout: Option<f64>,
    position_embedding_type: Option<String>,
    num_labels: Option<i64>,
    initializer_range: Option<f64>,
    id2label: Option<serde_json::Map<String, serde_json::Value>>,
    // DistilBERT's names.
    dim: Option<i64>,
    n_layers: Option<i64>,
    n_heads: Option<i64>,
    hidden_dim: Option<i64>,
    activation: Option<String>,
    dropout: Option<f64>,
    attention_dropout: Option<f64>,
    seq_classif_dropout: Option<f64>,
}

fn bad(file: &Path, message: impl Into<String>) -> Error {
    Error::model_directory(file.display().to_string(), message)
}

impl EncoderSettings {
    /// Reads `dir/config.json`.
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] naming the file: missing or unreadable, an unknown `model_type`
    /// (listing the supported ones), an unsupported activation or position scheme, sizes that
    /// do not fit together.
    pub fn read(dir: &Path) -> Result<Self> {
        let file = dir.join("config.json");
        let text = std::fs::read_to_string(&file).map_err(|e| {
            bad(
                &file,
                format!("cannot read it ({e}); a Hugging Face model directory holds config.json"),
            )
        })?;
        Self::parse(&text, &file)
    }

    /// Parses the text of a config.json (`file` names it in errors).
    ///
    /// # Errors
    /// As [`EncoderSettings::read`].
    pub fn parse(text: &str, file: &Path) -> Result<Self> {
        let raw: RawConfig = serde_json::from_str(text)
            .map_err(|e| bad(file, format!("not a valid config.json: {e}")))?;
        let model_type = raw.model_type.clone().ok_or_else(|| {
            bad(
                file,
                format!(
                    "no model_type; supported model types are {}",
                    SUPPORTED_MODEL_TYPES.join(", ")
                ),
            )
        })?;
        let architecture = Architecture::from_model_type(&model_type).ok_or_else(|| {
            bad(
                file,
                format!(
                    "model_type {model_type:?} is not supported; supported model types are {}",
                    SUPPORTED_MODEL_TYPES.join(", ")
                ),
            )
        })?;
        if let Some(kind) = raw.position_embedding_type.as_deref() {
            if kind != "absolute" {
                return Err(bad(
                    file,
                    format!("position_embedding_type {kind:?} is not supported; only \"absolute\""),
                ));
            }
        }
        let settings = if architecture == Architecture::DistilBert {
            Self::distilbert(&raw, file)?
        } else {
            Self::bert_like(architecture, &raw, file)?
        };
        settings.check(file)?;
        Ok(settings)
    }

    fn bert_like(architecture: Architecture, raw: &RawConfig, file: &Path) -> Result<Self> {
        let electra = architecture == Architecture::Electra;
        let roberta = architecture.positions_after_padding();
        let hidden_size = raw.hidden_size.unwrap_or(if electra { 256 } else { 768 });
        let hidden_dropout = raw.hidden_dropout_prob.unwrap_or(0.1);
        Ok(EncoderSettings {
            architecture,
            vocab_size: raw
                .vocab_size
                .unwrap_or(if roberta { 50265 } else { 30522 }),
            hidden_size,
            embedding_size: if electra {
                raw.embedding_size.unwrap_or(128)
            } else {
                hidden_size
            },
            layers: raw.num_hidden_layers.unwrap_or(12),
            heads: raw
                .num_attention_heads
                .unwrap_or(if electra { 4 } else { 12 }),
            intermediate_size: raw
                .intermediate_size
                .unwrap_or(if electra { 1024 } else { 3072 }),
            activation: activation(raw.hidden_act.as_deref(), "hidden_act", file)?,
            layer_norm_eps: raw.layer_norm_eps.unwrap_or(1e-12),
            max_positions: raw.max_position_embeddings.unwrap_or(512),
            type_vocab_size: raw.type_vocab_size.unwrap_or(2),
            pad_token_id: raw.pad_token_id.unwrap_or(if roberta { 1 } else { 0 }),
            hidden_dropout,
            attention_dropout: raw.attention_probs_dropout_prob.unwrap_or(0.1),
            classifier_dropout: raw.classifier_dropout.unwrap_or(hidden_dropout),
            num_labels: num_labels(raw),
            initializer_range: raw.initializer_range.unwrap_or(0.02),
        })
    }

    fn distilbert(raw: &RawConfig, file: &Path) -> Result<Self> {
        let dim = raw.dim.unwrap_or(768);
        Ok(EncoderSettings {
            architecture: Architecture::DistilBert,
            vocab_size: raw.vocab_size.unwrap_or(30522),
            hidden_size: dim,
            embedding_size: dim,
            layers: raw.n_layers.unwrap_or(6),
            heads: raw.n_heads.unwrap_or(12),
            intermediate_size: raw.hidden_dim.unwrap_or(3072),
            activation: activation(raw.activation.as_deref(), "activation", file)?,
            // DistilBERT's LayerNorms use a fixed epsilon, with no config field.
            layer_norm_eps: 1e-12,
            max_positions: raw.max_position_embeddings.unwrap_or(512),
            type_vocab_size: 0,
            pad_token_id: raw.pad_token_id.unwrap_or(0),
            hidden_dropout: raw.dropout.unwrap_or(0.1),
            attention_dropout: raw.attention_dropout.unwrap_or(0.1),
            classifier_dropout: raw.seq_classif_dropout.unwrap_or(0.2),
            num_labels: num_labels(raw),
            initializer_range: raw.initializer_range.unwrap_or(0.02),
        })
    }

    fn check(&self, file: &Path) -> Result<()> {
        let sizes = [
            ("vocab size", self.vocab_size),
            ("hidden size", self.hidden_size),
            ("embedding size", self.embedding_size),
            ("number of layers", self.layers),
            ("number of attention heads", self.heads),
            ("intermediate size", self.intermediate_size),
            ("max_position_embeddings", self.max_positions),
        ];
        if let Some((what, value)) = sizes.iter().find(|(_, v)| *v <= 0) {
            return Err(bad(
                file,
                format!("the {what} is {value}; it must be positive"),
            ));
        }
        if self.hidden_size % self.heads != 0 {
            return Err(bad(
                file,
                format!(
                    "the hidden size {} is not a multiple of the {} attention heads",
                    self.hidden_size, self.heads
                ),
            ));
        }
        Ok(())
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> i64 {
        self.hidden_size / self.heads
    }
}

fn activation(name: Option<&str>, field: &str, file: &Path) -> Result<Activation> {
    let name = name.unwrap_or("gelu");
    Activation::parse(name).ok_or_else(|| {
        bad(
            file,
            format!("{field} {name:?} is not supported; supported: {SUPPORTED_ACTIVATIONS}"),
        )
    })
}

fn num_labels(raw: &RawConfig) -> i64 {
    raw.id2label
        .as_ref()
        .map(|m| m.len() as i64)
        .or(raw.num_labels)
        .unwrap_or(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<EncoderSettings> {
        EncoderSettings::parse(text, Path::new("model/config.json"))
    }

    #[test]
    fn an_unknown_model_type_lists_the_supported_ones() {
        let err = parse(r#"{"model_type": "gpt2"}"#).unwrap_err().to_string();
        assert!(err.contains("model/config.json"), "{err}");
        assert!(err.contains("\"gpt2\" is not supported"), "{err}");
        assert!(
            err.contains("bert, roberta, xlm-roberta, distilbert, electra"),
            "{err}"
        );
    }

    #[test]
    fn distilbert_reads_its_own_field_names_and_fixed_epsilon() {
        let s = parse(
            r#"{"model_type": "distilbert", "dim": 32, "n_layers": 2, "n_heads": 4,
                "hidden_dim": 64, "activation": "gelu", "vocab_size": 100,
                "layer_norm_eps": 0.5, "seq_classif_dropout": 0.3}"#,
        )
        .unwrap();
        assert_eq!(
            (s.hidden_size, s.layers, s.heads, s.intermediate_size),
            (32, 2, 4, 64)
        );
        assert_eq!(s.layer_norm_eps, 1e-12);
        assert_eq!(s.type_vocab_size, 0);
        assert_eq!(s.classifier_dropout, 0.3);
    }

    #[test]
    fn roberta_defaults_pad_to_one_and_labels_follow_id2label() {
        let s = parse(
            r#"{"model_type": "xlm-roberta", "id2label": {"0": "LABEL_0"},
                "classifier_dropout": null}"#,
        )
        .unwrap();
        assert_eq!(s.pad_token_id, 1);
        assert_eq!(s.num_labels, 1);
        assert_eq!(s.classifier_dropout, s.hidden_dropout);
        assert_eq!(s.architecture.base_prefix(), "roberta");
    }

    #[test]
    fn relative_positions_and_unknown_activations_are_refused() {
        let err = parse(r#"{"model_type": "bert", "position_embedding_type": "relative_key"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("relative_key"), "{err}");
        let err = parse(r#"{"model_type": "bert", "hidden_act": "mish"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("hidden_act \"mish\""), "{err}");
    }

    #[test]
    fn heads_must_divide_the_hidden_size() {
        let err = parse(r#"{"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a multiple"), "{err}");
    }
}
