//! The text scorers over Hugging Face encoders, [`CrossEncoder`] and [`BiEncoder`], and their
//! [`text_encoding`] (tokenizers, `max_length` checked against the position table).

use std::path::Path;
use std::sync::Arc;

use tch::{Kind, Tensor};

use super::by_length::by_length;
use super::config::EncoderSettings;
use super::encoder::{first_token, masked_mean, EncoderInput};
use super::model::{HfEncoderModel, HfSequenceClassifier};
use super::weights::HfWeights;
use crate::config::{BiEncoderConfig, CrossEncoderConfig, HfEncoderConfig, Pooling, Similarity};
use crate::data::{EncodedRows, EncodedTexts, ScoreInput, TextEncoding};
use crate::models::{Model, NamedParameter};
use crate::rng::Rng;
use crate::text::TextTokenizer;
use crate::{Error, Result};

fn input(rows: &EncodedRows) -> EncoderInput {
    EncoderInput {
        ids: rows.ids.shallow_clone(),
        type_ids: Some(rows.type_ids.shallow_clone()),
        mask: rows.mask.shallow_clone(),
    }
}

/// The directory of `encoder`, which must exist (`path` names the config in errors).
fn directory<'a>(encoder: &'a HfEncoderConfig, path: &str) -> Result<&'a Path> {
    let dir = Path::new(&encoder.path);
    if !dir.is_dir() {
        return Err(Error::config(
            format!("{path}.path"),
            format!(
                "{:?} is not a directory: give a local Hugging Face model directory \
                 (config.json, model.safetensors, tokenizer.json)",
                encoder.path
            ),
        ));
    }
    Ok(dir)
}

/// The config.json of the encoder in `dir`, refused (at `{path}.max_length`, `path` naming the
/// model config) when `max_length` is longer than its position table: a longer input would
/// index past the table and fail at the first long text, with libtorch's bare "index out of
/// range in self". Every input is cut to `max_length` tokens, special tokens included (a
/// cross-encoder's whole `[CLS] query [SEP] document [SEP]`), so this is the bound.
///
/// # Errors
/// As [`EncoderSettings::read`]; [`Error::Config`] for a `max_length` beyond the positions.
fn checked_settings(dir: &Path, max_length: i64, path: &str) -> Result<EncoderSettings> {
    let settings = EncoderSettings::read(dir)?;
    let positions = settings.max_positions;
    // RoBERTa numbers tokens from the padding id + 1: position ids run to pad + length.
    let (longest, table) = if settings.architecture.positions_after_padding() {
        let skipped = settings.pad_token_id + 1;
        (
            positions - skipped,
            format!(
                "max_position_embeddings {positions} less {skipped}, as {} numbers positions \
                 from the padding id {} + 1",
                settings.architecture.model_type(),
                settings.pad_token_id
            ),
        )
    } else {
        (positions, format!("max_position_embeddings {positions}"))
    };
    if max_length > longest {
        return Err(Error::config(
            format!("{path}.max_length"),
            format!(
                "{max_length} tokens do not fit the model, which has positions for {longest} \
                 ({table}, in {}): set max_length (512 by default) to at most {longest}; longer \
                 texts are cut to it",
                dir.join("config.json").display()
            ),
        ));
    }
    Ok(settings)
}

fn tokenizer(encoder: &HfEncoderConfig, max_length: i64, path: &str) -> Result<Arc<TextTokenizer>> {
    let dir = directory(encoder, path)?;
    Ok(Arc::new(TextTokenizer::from_dir(dir, max_length as usize)?))
}

/// How the text model `config` wants its records encoded, with its tokenizers (`None` for
/// other models); `path` names the model config in errors.
///
/// # Errors
/// [`Error::Config`] for a missing directory; [`Error::ModelDirectory`] for a missing or bad
/// tokenizer.json.
pub fn text_encoding(
    config: &crate::config::AnyModule,
    path: &str,
) -> Result<Option<TextEncoding>> {
    use crate::config::AnyModule;
    Ok(match config {
        AnyModule::CrossEncoder(c) => Some(TextEncoding::Pairs(tokenizer(
            &c.encoder,
            c.max_length as i64,
            &format!("{path}.encoder"),
        )?)),
        AnyModule::BiEncoder(c) => {
            let document = tokenizer(&c.encoder, c.max_length as i64, &format!("{path}.encoder"))?;
            let query = match &c.query_encoder {
                Some(q) => tokenizer(q, c.max_length as i64, &format!("{path}.query_encoder"))?,
                None => document.clone(),
            };
            Some(TextEncoding::Separate { query, document })
        }
        AnyModule::SigmoidOutput(c) => text_encoding(&c.model, &format!("{path}.model"))?,
        _ => None,
    })
}

/// A cross-encoder: `[CLS] query [SEP] document [SEP]` through a pretrained encoder and a
/// one-label sequence-classification head, whose logit is the score. Parameters carry the
/// names transformers gives a `…ForSequenceClassification` (`bert.embeddings…`,
/// `classifier.weight`).
#[derive(Debug)]
pub struct CrossEncoder {
    model: HfSequenceClassifier,
    training: bool,
}

impl CrossEncoder {
    /// Reads the encoder (and its head, when it has a one-label one; otherwise a new head
    /// drawn from `rng`); `path` names the config in errors.
    ///
    /// # Errors
    /// [`Error::Config`] for a missing directory or a `max_length` beyond the encoder's
    /// positions; [`Error::ModelDirectory`] for bad files.
    pub fn new(config: &CrossEncoderConfig, rng: &mut Rng, path: &str) -> Result<Self> {
        let dir = directory(&config.encoder, &format!("{path}.encoder"))?;
        let settings = checked_settings(dir, config.max_length as i64, path)?;
        let weights = HfWeights::read(dir, settings.architecture.base_prefix())?;
        Ok(CrossEncoder {
            model: HfSequenceClassifier::from_weights(&settings, &weights, 1, rng)?,
            training: true,
        })
    }

    /// Whether the head came from the directory.
    pub fn head_loaded(&self) -> bool {
        self.model.head_loaded()
    }
}

impl Model for CrossEncoder {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        match input.encoded("CrossEncoder")? {
            EncodedTexts::Pairs(rows) => Ok(by_length(rows, |rows| {
                self.model.logits(&self::input(rows), self.training)
            })?
            .f_squeeze_dim(-1)?),
            EncodedTexts::Separate { .. } => Err(Error::config(
                "learner.model",
                "CrossEncoder scores (query, document) pairs encoded together, but the data \
                 encoded them apart (for a BiEncoder)",
            )),
        }
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.model.named_parameters()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.model.share(target, source)
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }

    fn new_weights(&self) -> Vec<String> {
        self.model.new_weights().to_vec()
    }
}

/// A bi-encoder: queries and documents embedded apart (one shared encoder, or a query encoder
/// beside the document encoder), pooled, optionally L2-normalised, and compared. A shared
/// encoder's parameters carry the base model's names (`embeddings.word_embeddings.weight`, as
/// sentence-transformers saves them); separate ones are named `query.…` and `document.…`.
#[derive(Debug)]
pub struct BiEncoder {
    document: HfEncoderModel,
    query: Option<HfEncoderModel>,
    pooling: Pooling,
    normalize: bool,
    similarity: Similarity,
    training: bool,
}

/// The encoder of `config`, its parameters named after `prefix`; `path` names the model config
/// and `field` the encoder's in it.
fn read_encoder(
    config: &HfEncoderConfig,
    prefix: &str,
    max_length: i64,
    path: &str,
    field: &str,
) -> Result<HfEncoderModel> {
    let dir = directory(config, &format!("{path}.{field}"))?;
    let settings = checked_settings(dir, max_length, path)?;
    let weights = HfWeights::read(dir, settings.architecture.base_prefix())?;
    HfEncoderModel::named(&settings, &weights, prefix)
}

impl BiEncoder {
    /// Reads the encoders; `path` names the config in errors.
    ///
    /// # Errors
    /// [`Error::Config`] for a missing directory or a `max_length` beyond an encoder's
    /// positions; [`Error::ModelDirectory`] for bad files.
    pub fn new(config: &BiEncoderConfig, path: &str) -> Result<Self> {
        let separate = config.query_encoder.is_some();
        let document = read_encoder(
            &config.encoder,
            if separate { "document" } else { "" },
            config.max_length as i64,
            path,
            "encoder",
        )?;
        let query = config
            .query_encoder
            .as_ref()
            .map(|q| read_encoder(q, "query", config.max_length as i64, path, "query_encoder"))
            .transpose()?;
        Ok(BiEncoder {
            document,
            query,
            pooling: config.pooling,
            normalize: config.normalize,
            similarity: config.similarity,
            training: true,
        })
    }

    /// One vector per row of `rows`, by the query or the document encoder.
    ///
    /// # Errors
    /// A libtorch error.
    fn vectors(&self, rows: &EncodedRows, query: bool) -> Result<Tensor> {
        let encoder = match (&self.query, query) {
            (Some(q), true) => q,
            _ => &self.document,
        };
        let pooled = by_length(rows, |rows| {
            let input = input(rows);
            let hidden = encoder.hidden(&input, self.training)?;
            match self.pooling {
                Pooling::Mean => masked_mean(&hidden, &input.mask),
                Pooling::Cls => first_token(&hidden),
            }
        })?;
        if self.normalize {
            normalized(&pooled)
        } else {
            Ok(pooled)
        }
    }
}

/// Rows divided by their L2 norm (at least 1e-12, as `torch.nn.functional.normalize`).
fn normalized(x: &Tensor) -> Result<Tensor> {
    let norm = x
        .f_norm_scalaropt_dim(2, [-1i64].as_slice(), true)?
        .f_clamp_min(1e-12)?;
    Ok(x.f_div(&norm)?)
}

impl Model for BiEncoder {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let EncodedTexts::Separate { query, document } = input.encoded("BiEncoder")? else {
            return Err(Error::config(
                "learner.model",
                "BiEncoder embeds queries and documents apart, but the data encoded them as \
                 pairs (for a CrossEncoder)",
            ));
        };
        let q = self.vectors(query, true)?;
        let d = self.vectors(document, false)?;
        Ok(match self.similarity {
            Similarity::Dot => {
                q.f_mul(&d)?
                    .f_sum_dim_intlist([-1i64].as_slice(), false, None::<Kind>)?
            }
            Similarity::Cosine => Tensor::f_cosine_similarity(&q, &d, -1, 1e-8)?,
        })
    }

    fn embed(&self, texts: &EncodedRows, query: bool) -> Result<Tensor> {
        self.vectors(texts, query)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        let mut all = self.document.named_parameters();
        if let Some(q) = &self.query {
            all.extend(q.named_parameters());
        }
        all
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        match &mut self.query {
            Some(q) if target.starts_with("query.") && source.starts_with("query.") => {
                q.share(target, source)
            }
            Some(_) if target.starts_with("query.") || source.starts_with("query.") => {
                Err(Error::config(
                    target,
                    "BiEncoder shares parameters only within one encoder",
                ))
            }
            _ => self.document.share(target, source),
        }
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}
