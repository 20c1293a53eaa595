//! [`SafetensorsFile`]: a safetensors file indexed by its header, each tensor read from the
//! file straight into a tensor of its own when asked for. Loading a model this way holds its
//! weights once, one tensor at a time besides, where reading the whole file first held the
//! file's bytes and the tensors copied out of them together (twice the weights at the peak).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use tch::{Device, Kind, Tensor};

/// Where one tensor's bytes are, and what they hold.
#[derive(Debug, Clone)]
struct Stored {
    kind: Kind,
    shape: Vec<i64>,
    /// Byte range in the file.
    start: u64,
    len: u64,
}

/// A safetensors file's tensors by name, read on demand. Errors are messages about the file,
/// which callers wrap in the error that names it (a model directory, a checkpoint).
#[derive(Debug)]
pub struct SafetensorsFile {
    file: File,
    tensors: BTreeMap<String, Stored>,
}

/// The safetensors header's limit: larger is taken for a file of another kind.
const MAX_HEADER: u64 = 100 << 20;

fn kind_of(dtype: &str) -> Option<(Kind, u64)> {
    Some(match dtype {
        "F64" => (Kind::Double, 8),
        "F32" => (Kind::Float, 4),
        "F16" => (Kind::Half, 2),
        "BF16" => (Kind::BFloat16, 2),
        "I64" => (Kind::Int64, 8),
        "I32" => (Kind::Int, 4),
        "I16" => (Kind::Int16, 2),
        "I8" => (Kind::Int8, 1),
        "U8" => (Kind::Uint8, 1),
        "BOOL" => (Kind::Bool, 1),
        _ => return None,
    })
}

/// One header entry (`{"dtype", "shape", "data_offsets"}`) checked against the data's length.
fn entry(
    name: &str,
    value: &serde_json::Value,
    data_start: u64,
    file_len: u64,
) -> Result<Stored, String> {
    let field = |key: &str| {
        value
            .get(key)
            .ok_or_else(|| format!("tensor {name:?} has no {key:?} in the header"))
    };
    let dtype = field("dtype")?.as_str().unwrap_or_default();
    let (kind, width) = kind_of(dtype)
        .ok_or_else(|| format!("tensor {name:?} has the unsupported dtype {dtype:?}"))?;
    let dims: Option<Vec<u64>> = field("shape")?
        .as_array()
        .and_then(|a| a.iter().map(serde_json::Value::as_u64).collect());
    let dims = dims.ok_or_else(|| format!("tensor {name:?} has a malformed shape"))?;
    let offsets: Option<Vec<u64>> = field("data_offsets")?
        .as_array()
        .and_then(|a| a.iter().map(serde_json::Value::as_u64).collect());
    let [begin, end] = offsets.as_deref().unwrap_or_default() else {
        return Err(format!("tensor {name:?} has malformed data_offsets"));
    };
    let bytes = dims
        .iter()
        .try_fold(width, |n, &d| n.checked_mul(d))
        .filter(|&n| end.checked_sub(*begin) == Some(n));
    let start = data_start.checked_add(*begin);
    match (bytes, start) {
        (Some(len), Some(start)) if start.checked_add(len).is_some_and(|e| e <= file_len) => {
            Ok(Stored {
                kind,
                shape: dims.iter().map(|&d| d as i64).collect(),
                start,
                len,
            })
        }
        _ => Err(format!(
            "tensor {name:?}: its data_offsets [{begin}, {end}] do not hold a {dtype} tensor of \
             shape {dims:?} within the file (truncated or corrupt?)"
        )),
    }
}

impl SafetensorsFile {
    /// Reads the header of the file at `path` (no tensor data).
    ///
    /// # Errors
    /// A message when the file cannot be read or its header is not a valid safetensors one.
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = File::open(path).map_err(|e| e.to_string())?;
        let file_len = file.metadata().map_err(|e| e.to_string())?.len();
        let mut word = [0u8; 8];
        file.read_exact_at(&mut word, 0)
            .map_err(|_| "shorter than a safetensors header".to_string())?;
        let header_len = u64::from_le_bytes(word);
        if header_len > MAX_HEADER || 8 + header_len > file_len {
            return Err(format!(
                "its header length ({header_len} bytes) does not fit the file ({file_len} bytes)"
            ));
        }
        let mut header = vec![0u8; header_len as usize];
        file.read_exact_at(&mut header, 8)
            .map_err(|e| e.to_string())?;
        let json: serde_json::Value = serde_json::from_slice(&header)
            .map_err(|e| format!("its header is not valid JSON: {e}"))?;
        let object = json
            .as_object()
            .ok_or_else(|| "its header is not a JSON object".to_string())?;
        let data_start = 8 + header_len;
        let tensors = object
            .iter()
            .filter(|(name, _)| *name != "__metadata__")
            .map(|(name, value)| Ok((name.clone(), entry(name, value, data_start, file_len)?)))
            .collect::<Result<_, String>>()?;
        Ok(SafetensorsFile { file, tensors })
    }

    /// The names of the file's tensors, in order.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.tensors.keys()
    }

    /// Whether the file holds tensor `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The shape of tensor `name`, if the file holds it.
    pub fn shape(&self, name: &str) -> Option<&[i64]> {
        self.tensors.get(name).map(|s| s.shape.as_slice())
    }

    /// Tensor `name`, read from the file into a new CPU tensor of its dtype.
    ///
    /// # Errors
    /// A message when the file holds no such tensor or cannot be read.
    pub fn read(&self, name: &str) -> Result<Tensor, String> {
        let stored = self
            .tensors
            .get(name)
            .ok_or_else(|| format!("holds no tensor {name:?}"))?;
        if cfg!(target_endian = "big") {
            return Err("safetensors data is little-endian; this machine is not".into());
        }
        let tensor = Tensor::f_empty(stored.shape.as_slice(), (stored.kind, Device::Cpu))
            .map_err(|e| e.to_string())?;
        if stored.len > 0 {
            // SAFETY: a new tensor is contiguous, owned here alone, and `len` bytes long: its
            // dtype's width times its shape's product, which `entry` checked.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(tensor.data_ptr().cast::<u8>(), stored.len as usize)
            };
            self.file
                .read_exact_at(bytes, stored.start)
                .map_err(|e| format!("cannot read tensor {name:?}: {e}"))?;
        }
        Ok(tensor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(tensors: &[(&str, Tensor)]) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = crate::config::tests_support::scratch_dir();
        let path = dir.join("model.safetensors");
        Tensor::write_safetensors(tensors, &path).unwrap();
        (dir, path)
    }

    #[test]
    fn tensors_read_back_with_their_dtype_shape_and_values() {
        let a = Tensor::arange(12, (Kind::Float, Device::Cpu)).reshape([3, 4]);
        let b = Tensor::from_slice(&[1i64, -2, 3]);
        let c = Tensor::from_slice(&[0.5f32, -1.25]).to_kind(Kind::BFloat16);
        let empty = Tensor::zeros([0, 4], (Kind::Float, Device::Cpu));
        let (_dir, path) = written(&[
            ("a", a.shallow_clone()),
            ("b", b.shallow_clone()),
            ("c", c.shallow_clone()),
            ("empty", empty),
        ]);
        let file = SafetensorsFile::open(&path).unwrap();
        assert_eq!(file.names().collect::<Vec<_>>(), ["a", "b", "c", "empty"]);
        assert_eq!(file.shape("a"), Some([3i64, 4].as_slice()));
        assert!(file.read("a").unwrap().equal(&a));
        assert!(file.read("b").unwrap().equal(&b));
        let read_c = file.read("c").unwrap();
        assert_eq!(read_c.kind(), Kind::BFloat16);
        assert!(read_c.equal(&c));
        assert_eq!(file.read("empty").unwrap().size(), [0, 4]);
        assert!(file.read("z").unwrap_err().contains("\"z\""));
    }

    #[test]
    fn a_truncated_or_foreign_file_is_refused_with_what_is_wrong() {
        let a = Tensor::arange(1000, (Kind::Float, Device::Cpu));
        let (dir, path) = written(&[("a", a)]);
        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.join("cut.safetensors");
        std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
        let err = SafetensorsFile::open(&cut).unwrap_err();
        assert!(err.contains("\"a\"") && err.contains("truncated"), "{err}");
        let foreign = dir.join("foreign.safetensors");
        std::fs::write(&foreign, b"PK\x03\x04 a zip file, not safetensors").unwrap();
        let err = SafetensorsFile::open(&foreign).unwrap_err();
        assert!(err.contains("header length"), "{err}");
    }
}
