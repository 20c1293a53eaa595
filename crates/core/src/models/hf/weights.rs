//! [`HfWeights`]: the tensors of a Hugging Face directory (one safetensors file or its shards),
//! looked up by name with or without the base model's prefix, read as float32.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tch::{Kind, Tensor};

use crate::models::safetensors_file::SafetensorsFile;
use crate::{Error, Result};

/// The tensors of a Hugging Face directory (`model.safetensors`, or the shards a
/// `model.safetensors.index.json` lists), looked up by Hugging Face names with or without the
/// base model's prefix (`bert.`, `roberta.`, ...). A file's tensors are read when asked for, so
/// that a model built from them holds its weights once; floating ones come as float32.
#[derive(Debug)]
pub struct HfWeights {
    /// What errors name: the file, or the index of the shards.
    origin: String,
    prefix: String,
    tensors: BTreeMap<String, Stored>,
}

/// Where a tensor is: in a file (read on demand), or in memory.
#[derive(Debug)]
enum Stored {
    File(Arc<SafetensorsFile>, PathBuf),
    Memory(Tensor),
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

fn index_file(file: &Path, into: &mut BTreeMap<String, Stored>) -> Result<()> {
    if !file.is_file() {
        return Err(bad(file, "missing (the safetensors index lists it)"));
    }
    let opened = SafetensorsFile::open(file)
        .map_err(|e| bad(file, format!("not a readable safetensors file: {e}")))?;
    let opened = Arc::new(opened);
    for name in opened.names() {
        into.insert(
            name.clone(),
            Stored::File(Arc::clone(&opened), file.to_path_buf()),
        );
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
            index_file(&single, &mut tensors)?;
            single
        } else if index.is_file() {
            for shard in shards(&index)? {
                index_file(&shard, &mut tensors)?;
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
            tensors: tensors
                .into_iter()
                .map(|(name, t)| (name, Stored::Memory(t)))
                .collect(),
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

    /// Tensor `key`'s shape (it must be present).
    fn size(&self, key: &str) -> Vec<i64> {
        match &self.tensors[key] {
            Stored::File(file, _) => file.shape(key).unwrap_or_default().to_vec(),
            Stored::Memory(t) => t.size(),
        }
    }

    /// Tensor `key` as a tensor of its own (read from its file, or copied), float32 if floating.
    fn fetch(&self, key: &str) -> Result<Tensor> {
        let tensor = match &self.tensors[key] {
            Stored::File(file, path) => file.read(key).map_err(|e| bad(path, e))?,
            Stored::Memory(t) => t.f_detach_copy()?,
        };
        if tensor.is_floating_point() && tensor.kind() != Kind::Float {
            return Ok(tensor.f_to_kind(Kind::Float)?);
        }
        Ok(tensor)
    }

    fn checked(&self, key: &str, shape: &[i64], why: &str) -> Result<Tensor> {
        self.check_shape(key, shape, why)?;
        self.fetch(key)
    }

    fn check_shape(&self, key: &str, shape: &[i64], why: &str) -> Result<()> {
        let size = self.size(key);
        if size != shape {
            return Err(Error::model_directory(
                &self.origin,
                format!(
                    "tensor {key:?} has shape {:?} but {why} needs {shape:?}; \
                     does config.json describe these weights?",
                    size
                ),
            ));
        }
        Ok(())
    }

    /// Base-model tensor `name` (e.g. `embeddings.word_embeddings.weight`), which must be
    /// present with `shape`: a tensor of its own, which no later call shares.
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

    /// Whether the file holds base-model tensor `name` (checked against `shape`, not read).
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] when it is present with another shape.
    pub fn has_base(&self, name: &str, shape: &[i64]) -> Result<bool> {
        let Some(key) = self.base_key(name) else {
            return Ok(false);
        };
        self.check_shape(&key, shape, "config.json")?;
        Ok(true)
    }

    /// Whether the file holds head tensor `name` (stored without prefix).
    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The shape of head tensor `name`, if present.
    pub fn shape(&self, name: &str) -> Option<Vec<i64>> {
        self.tensors.contains_key(name).then(|| self.size(name))
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
    fn a_file_is_read_tensor_by_tensor_each_read_a_tensor_of_its_own_in_float32() {
        let dir = crate::config::tests_support::scratch_dir();
        let half = Tensor::from_slice(&[0.5f32, -2.0, 3.25]).to_kind(Kind::BFloat16);
        let ids = Tensor::from_slice(&[7i64, 8]);
        Tensor::write_safetensors(
            &[("bert.a.weight", half), ("b.ids", ids.shallow_clone())],
            dir.join("model.safetensors"),
        )
        .unwrap();
        let w = HfWeights::read(&dir, "bert").unwrap();
        assert!(w.has_base("a.weight", &[3]).unwrap());
        assert!(!w.has_base("z.weight", &[3]).unwrap());
        assert!(w.has_base("a.weight", &[4]).is_err());
        let (first, second) = (
            w.base("a.weight", &[3]).unwrap(),
            w.base("a.weight", &[3]).unwrap(),
        );
        assert_eq!(first.kind(), Kind::Float);
        assert_eq!(Vec::<f32>::try_from(&first).unwrap(), [0.5, -2.0, 3.25]);
        assert_ne!(first.data_ptr(), second.data_ptr());
        assert!(w.base("b.ids", &[2]).unwrap().equal(&ids));
        let memory = weights(&["bert.a.weight"]);
        let (x, y) = (
            memory.base("a.weight", &[2, 3]).unwrap(),
            memory.base("a.weight", &[2, 3]).unwrap(),
        );
        assert_ne!(x.data_ptr(), y.data_ptr());
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
