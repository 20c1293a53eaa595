//! [`HfWeights`]: the tensors of a Hugging Face directory (one safetensors file or its shards),
//! looked up by name with or without the base model's prefix, read as float32.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tch::{Kind, Tensor};

use crate::{Error, Result};

/// The tensors of a Hugging Face directory (`model.safetensors`, or the shards a
/// `model.safetensors.index.json` lists), looked up by Hugging Face names with or without the
/// base model's prefix (`bert.`, `roberta.`, ...). Floating tensors are read as float32.
#[derive(Debug)]
pub struct HfWeights {
    /// What errors name: the file, or the index of the shards.
    origin: String,
    prefix: String,
    tensors: BTreeMap<String, Tensor>,
}

fn bad(file: &Path, message: impl Into<String>) -> Error {
    Error::model_directory(file.display().to_string(), message)
}

/// The shard files of a `model.safetensors.index.json`, in order, each once.
fn shards(index: &Path) -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(index).map_err(|e| Error::io(index, e))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| bad(index, format!("not a valid safetensors index: {e}")))?;
    let map = json
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| bad(index, "no \"weight_map\" object"))?;
    let mut files = BTreeSet::new();
    for (name, file) in map {
        let file = file
            .as_str()
            .ok_or_else(|| bad(index, format!("weight_map[{name:?}] is not a file name")))?;
        files.insert(file.to_string());
    }
    let dir = index.parent().unwrap_or(Path::new("."));
    Ok(files.into_iter().map(|f| dir.join(f)).collect())
}

fn read_file(file: &Path, into: &mut BTreeMap<String, Tensor>) -> Result<()> {
    if !file.is_file() {
        return Err(bad(file, "missing (the safetensors index lists it)"));
    }
    let tensors = Tensor::read_safetensors(file)
        .map_err(|e| bad(file, format!("not a readable safetensors file: {e}")))?;
    for (name, tensor) in tensors {
        let tensor = if tensor.is_floating_point() {
            tensor.f_to_kind(Kind::Float)?
        } else {
            tensor
        };
        into.insert(name, tensor);
    }
    Ok(())
}

impl HfWeights {
    /// Reads the weights of `dir`; `prefix` is the base model's key prefix.
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] naming the file: no safetensors weights (with how to convert a
    /// `pytorch_model.bin`), an unreadable file or index, a missing shard.
    pub fn read(dir: &Path, prefix: &str) -> Result<Self> {
        let single = dir.join("model.safetensors");
        let index = dir.join("model.safetensors.index.json");
        let mut tensors = BTreeMap::new();
        let origin = if single.is_file() {
            read_file(&single, &mut tensors)?;
            single
        } else if index.is_file() {
            for shard in shards(&index)? {
                read_file(&shard, &mut tensors)?;
            }
            index
        } else if dir.join("pytorch_model.bin").is_file() {
            return Err(bad(
                &dir.join("pytorch_model.bin"),
                "only PyTorch pickle weights; convert them to safetensors first, e.g. in Python: \
                 AutoModel.from_pretrained(dir).save_pretrained(dir, safe_serialization=True) \
                 (or the matching …ForSequenceClassification class), which writes model.safetensors",
            ));
        } else {
            return Err(bad(
                dir,
                "no model.safetensors or model.safetensors.index.json in this directory",
            ));
        };
        Ok(HfWeights {
            origin: origin.display().to_string(),
            prefix: prefix.to_string(),
            tensors,
        })
    }

    /// Weights held in memory (`origin` names them in errors).
    pub fn from_tensors(
        origin: impl Into<String>,
        prefix: &str,
        tensors: impl IntoIterator<Item = (String, Tensor)>,
    ) -> Self {
        HfWeights {
            origin: origin.into(),
            prefix: prefix.to_string(),
            tensors: tensors.into_iter().collect(),
        }
    }

    /// The key under which base-model tensor `name` is stored: `prefix.name`, `name`, or
    /// either with the legacy `LayerNorm.gamma`/`beta` spelling.
    fn base_key(&self, name: &str) -> Option<String> {
        let legacy = name
            .strip_suffix("LayerNorm.weight")
            .map(|stem| format!("{stem}LayerNorm.gamma"))
            .or_else(|| {
                name.strip_suffix("LayerNorm.bias")
                    .map(|stem| format!("{stem}LayerNorm.beta"))
            });
        let mut candidates = vec![format!("{}.{name}", self.prefix), name.to_string()];
        if let Some(legacy) = legacy {
            candidates.push(format!("{}.{legacy}", self.prefix));
            candidates.push(legacy);
        }
        candidates
            .into_iter()
            .find(|k| self.tensors.contains_key(k))
    }

    fn checked(&self, key: &str, shape: &[i64], why: &str) -> Result<Tensor> {
        let tensor = &self.tensors[key];
        if tensor.size() != shape {
            return Err(Error::model_directory(
                &self.origin,
                format!(
                    "tensor {key:?} has shape {:?} but {why} needs {shape:?}; \
                     does config.json describe these weights?",
                    tensor.size()
                ),
            ));
        }
        Ok(tensor.shallow_clone())
    }

    /// Base-model tensor `name` (e.g. `embeddings.word_embeddings.weight`), which must be
    /// present with `shape`.
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] naming the file and the tensor when it is missing or mis-shaped.
    pub fn base(&self, name: &str, shape: &[i64]) -> Result<Tensor> {
        let key = self.base_key(name).ok_or_else(|| {
            Error::model_directory(
                &self.origin,
                format!(
                    "lacks the tensor {name:?} (or {:?}) that config.json's model needs",
                    format!("{}.{name}", self.prefix)
                ),
            )
        })?;
        self.checked(&key, shape, "config.json")
    }

    /// Base-model tensor `name` if the file holds it (checked against `shape`).
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] when it is present with another shape.
    pub fn base_optional(&self, name: &str, shape: &[i64]) -> Result<Option<Tensor>> {
        self.base_key(name)
            .map(|key| self.checked(&key, shape, "config.json"))
            .transpose()
    }

    /// Whether the file holds head tensor `name` (stored without prefix).
    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The shape of head tensor `name`, if present.
    pub fn shape(&self, name: &str) -> Option<Vec<i64>> {
        self.tensors.get(name).map(|t| t.size())
    }

    /// Head tensor `name` (stored without prefix), which must be present with `shape`.
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] naming the file and the tensor when it is missing or mis-shaped.
    pub fn head(&self, name: &str, shape: &[i64]) -> Result<Tensor> {
        if !self.has(name) {
            return Err(Error::model_directory(
                &self.origin,
                format!("holds part of a classification head but lacks {name:?}"),
            ));
        }
        self.checked(name, shape, "the classification head")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(names: &[&str]) -> HfWeights {
        HfWeights::from_tensors(
            "dir/model.safetensors",
            "bert",
            names.iter().map(|n| {
                (
                    n.to_string(),
                    Tensor::zeros([2, 3], (Kind::Float, tch::Device::Cpu)),
                )
            }),
        )
    }

    #[test]
    fn base_tensors_are_found_with_or_without_the_prefix_and_by_legacy_names() {
        let w = weights(&["bert.a.weight", "b.weight", "c.LayerNorm.gamma"]);
        assert!(w.base("a.weight", &[2, 3]).is_ok());
        assert!(w.base("b.weight", &[2, 3]).is_ok());
        assert!(w.base("c.LayerNorm.weight", &[2, 3]).is_ok());
    }

    #[test]
    fn a_missing_or_misshaped_tensor_is_named() {
        let w = weights(&["bert.a.weight"]);
        let err = w.base("z.weight", &[2, 3]).unwrap_err().to_string();
        assert!(err.contains("dir/model.safetensors"), "{err}");
        assert!(err.contains("\"z.weight\""), "{err}");
        let err = w.base("a.weight", &[3, 3]).unwrap_err().to_string();
        assert!(err.contains("\"bert.a.weight\" has shape [2, 3]"), "{err}");
        assert!(err.contains("[3, 3]"), "{err}");
    }

    #[test]
    fn only_pickle_weights_say_how_to_convert() {
        let dir = std::env::temp_dir().join(format!("xpm-hf-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pytorch_model.bin"), b"not read").unwrap();
        let err = HfWeights::read(&dir, "bert").unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("pytorch_model.bin"), "{err}");
        assert!(err.contains("safe_serialization=True"), "{err}");
    }
}
