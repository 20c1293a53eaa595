//! [`save_hf_directories`]: a trained cross-encoder or bi-encoder written as Hugging Face
//! directories that `transformers` loads, with the source's tokenizer files.

use std::path::Path;

use serde_json::{json, Value};
use tch::Tensor;

use super::config::{Architecture, EncoderSettings};
use crate::config::{AnyModule, HfEncoderConfig};
use crate::models::Model;
use crate::{Error, Result};

/// The tokenizer files a Hugging Face directory may hold, copied as they are.
const TOKENIZER_FILES: [&str; 8] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "sentencepiece.bpe.model",
];

/// sentence-transformers' files, kept for a bi-encoder's encoder.
const SENTENCE_TRANSFORMERS_FILES: [&str; 4] = [
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
];

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

fn copy_present(from: &Path, to: &Path, names: &[&str]) -> Result<()> {
    for name in names {
        let source = from.join(name);
        if source.is_file() {
            let target = to.join(name);
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
            }
            std::fs::copy(&source, &target).map_err(io(&target))?;
        }
    }
    Ok(())
}

/// `source`'s config.json, with the architecture and labels transformers needs to load the
/// saved tensors (`head`: a one-label sequence-classification head).
fn config_json(source: &Path, head: bool) -> Result<Value> {
    let file = source.join("config.json");
    let text = std::fs::read_to_string(&file).map_err(io(&file))?;
    let mut config: Value = serde_json::from_str(&text)
        .map_err(|e| Error::model_directory(file.display().to_string(), e.to_string()))?;
    let settings = EncoderSettings::parse(&text, &file)?;
    let class = if head {
        settings.architecture.classifier_class().to_string()
    } else {
        base_class(settings.architecture).to_string()
    };
    let fields = config
        .as_object_mut()
        .ok_or_else(|| Error::model_directory(file.display().to_string(), "not a JSON object"))?;
    fields.insert("architectures".into(), json!([class]));
    fields.insert("dtype".into(), json!("float32"));
    fields.remove("torch_dtype");
    if head {
        fields.insert("num_labels".into(), json!(1));
        fields.insert("id2label".into(), json!({"0": "LABEL_0"}));
        fields.insert("label2id".into(), json!({"LABEL_0": 0}));
    }
    Ok(config)
}

fn base_class(architecture: Architecture) -> &'static str {
    match architecture {
        Architecture::Bert => "BertModel",
        Architecture::Roberta => "RobertaModel",
        Architecture::XlmRoberta => "XLMRobertaModel",
        Architecture::DistilBert => "DistilBertModel",
        Architecture::Electra => "ElectraModel",
    }
}

/// Writes one Hugging Face directory: config, the parameters named `prefix…` (prefix removed),
/// the source's tokenizer files and, for a base encoder, its sentence-transformers files.
fn write_directory(
    model: &dyn Model,
    encoder: &HfEncoderConfig,
    prefix: &str,
    head: bool,
    out: &Path,
) -> Result<()> {
    let source = Path::new(&encoder.path);
    std::fs::create_dir_all(out).map_err(io(out))?;
    let config = config_json(source, head)?;
    let text = serde_json::to_string_pretty(&config)
        .map_err(|e| Error::model_directory(out.display().to_string(), e.to_string()))?;
    let config_file = out.join("config.json");
    std::fs::write(&config_file, text + "\n").map_err(io(&config_file))?;
    let named: Vec<(String, Tensor)> = model
        .named_parameters()
        .into_iter()
        .filter_map(|p| {
            p.name
                .strip_prefix(prefix)
                .map(|n| (n.to_string(), p.tensor))
        })
        .map(|(n, t)| {
            Ok((
                n,
                t.f_detach()?
                    .f_to_device(tch::Device::Cpu)?
                    .f_to_kind(tch::Kind::Float)?
                    .f_contiguous()?,
            ))
        })
        .collect::<Result<_>>()?;
    let refs: Vec<(&str, &Tensor)> = named.iter().map(|(n, t)| (n.as_str(), t)).collect();
    Tensor::write_safetensors(&refs, out.join("model.safetensors"))?;
    copy_present(source, out, &TOKENIZER_FILES)?;
    if !head {
        copy_present(source, out, &SENTENCE_TRANSFORMERS_FILES)?;
    }
    Ok(())
}

/// Saves a trained `CrossEncoder` or `BiEncoder` as Hugging Face directories that
/// `transformers` loads: a cross-encoder as one `…ForSequenceClassification` directory with
/// one label; a shared bi-encoder as one base-model directory (with sentence-transformers'
/// files when its source had them); separate encoders as `query/` and `document/`. The
/// directory is written under a temporary name and renamed into place.
///
/// # Errors
/// [`Error::Config`] for other models or an existing `out`; [`Error::Io`] or a libtorch error.
pub fn save_hf_directories(model: &dyn Model, config: &AnyModule, out: &Path) -> Result<()> {
    if let AnyModule::SigmoidOutput(c) = config {
        // The directory holds the wrapped model, whose logits the sigmoid reads.
        return save_hf_directories(model, &c.model, out);
    }
    if out.exists() {
        return Err(Error::config(
            "directory",
            format!("{} exists: choose a new directory", out.display()),
        ));
    }
    let partial = crate::fsutil::temporary_sibling(out);
    let written = match config {
        AnyModule::CrossEncoder(c) => write_directory(model, &c.encoder, "", true, &partial),
        AnyModule::BiEncoder(c) => match &c.query_encoder {
            None => write_directory(model, &c.encoder, "", false, &partial),
            Some(q) => {
                write_directory(model, q, "query.", false, &partial.join("query")).and_then(|()| {
                    write_directory(
                        model,
                        &c.encoder,
                        "document.",
                        false,
                        &partial.join("document"),
                    )
                })
            }
        },
        _ => Err(Error::config(
            "model",
            "only a CrossEncoder or a BiEncoder saves as a Hugging Face directory",
        )),
    };
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, out).map_err(io(out))
}
