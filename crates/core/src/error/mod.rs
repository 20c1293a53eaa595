//! The core's [`Error`] and [`Result`]: every failure of a run, with the stable code and payload
//! the binding hands to JavaScript, and the recognition of libtorch's out-of-memory errors.

use std::fmt;

mod distributed;

pub use distributed::DistributedError;

/// Result of every fallible operation of the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can stop a run, with a stable [`Error::code`] the binding hands to JavaScript.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration document is malformed or inconsistent; `path` is the dotted config path.
    #[error("{path}: {message}")]
    Config {
        /// Dotted path from the root configuration, e.g. `trainer.hooks[0].margin`.
        path: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// libtorch raised an exception (shape mismatch, out of memory, ...).
    #[error("libtorch error: {0}")]
    Torch(TorchMessage),
    /// The training thread panicked; the run is abandoned but the process lives on.
    #[error("internal error (panic in the training thread): {0}")]
    Panic(String),
    /// The run was interrupted on request before anything could be saved.
    #[error("training was cancelled")]
    Cancelled,
    /// The run was interrupted on request after writing a checkpoint to resume from.
    #[error("training was interrupted at step {step}; its state is saved in {checkpoint}: run the same job again to resume")]
    Interrupted {
        /// The global step reached.
        step: u64,
        /// The checkpoint written.
        checkpoint: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Gradients or scores became NaN or infinite.
    #[error("non-finite values at step {step}: {what}")]
    NonFinite {
        /// The global step.
        step: u64,
        /// What was not finite.
        what: String,
    },
    /// A checkpoint cannot be written or does not fit the run.
    #[error("checkpoint {what}: {message}")]
    Checkpoint {
        /// The checkpoint (directory or part).
        what: String,
        /// What is wrong.
        message: String,
    },
    /// A pretrained model directory (Hugging Face layout: `config.json`, weights, tokenizer)
    /// cannot be read, does not describe its weights, or cannot be written.
    #[error("model directory: {file}: {message}")]
    ModelDirectory {
        /// The file of the directory at fault (or the directory).
        file: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A data file is malformed; `line` and `column` are 1-based.
    #[error("{file}:{line}:{column}: {message}")]
    Data {
        /// The file, as the caller named it.
        file: String,
        /// Line of the offending text.
        line: usize,
        /// Column (in characters) where the offending text starts.
        column: usize,
        /// What is wrong, quoting the offending text.
        message: String,
    },
    /// A listener or hook written in JavaScript failed.
    #[error("{0}")]
    Callback(String),
    /// A distributed run failed: its environment, rendezvous or a collective.
    #[error(transparent)]
    Distributed(#[from] DistributedError),
    /// What was asked is valid but not available here (a dtype, a device, a size libtorch's
    /// interfaces cannot take): not a bug, and not fixed by changing the configuration alone.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl Error {
    /// Stable machine-readable code, mirrored by the TypeScript error classes.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Config { .. } => "ERR_CONFIG",
            Error::Torch(_) if is_out_of_memory(self) => "ERR_OUT_OF_MEMORY",
            Error::Torch(_) => "ERR_TORCH",
            Error::Panic(_) => "ERR_PANIC",
            Error::Cancelled => "ERR_CANCELLED",
            Error::Interrupted { .. } => "ERR_INTERRUPTED",
            Error::Io { .. } => "ERR_IO",
            Error::NonFinite { .. } => "ERR_NON_FINITE",
            Error::Callback(_) => "ERR_CALLBACK",
            Error::Data { .. } => "ERR_DATA",
            Error::Checkpoint { .. } => "ERR_CHECKPOINT",
            Error::ModelDirectory { .. } => "ERR_MODEL_DIRECTORY",
            Error::Distributed(_) => "ERR_DISTRIBUTED",
            Error::Unsupported(_) => "ERR_UNSUPPORTED",
        }
    }

    /// The error as data for the binding: `code`, the full `message`, and each field of the
    /// variant under a stable camelCase name (`detail` is the message without its prefix).
    /// TypeScript builds its error classes from these fields.
    pub fn payload(&self) -> serde_json::Value {
        use serde_json::json;
        use DistributedError as D;
        let fields = match self {
            Error::Config { path, message } => json!({ "path": path, "detail": message }),
            Error::Torch(message) => json!({ "detail": message.0 }),
            Error::Panic(message) | Error::Callback(message) | Error::Unsupported(message) => {
                json!({ "detail": message })
            }
            Error::Cancelled => json!({}),
            Error::Interrupted { step, checkpoint } => {
                json!({ "step": step, "checkpoint": checkpoint })
            }
            Error::Io { path, message } => json!({ "path": path, "detail": message }),
            Error::NonFinite { step, what } => json!({ "step": step, "what": what }),
            Error::Checkpoint { what, message } => {
                json!({ "checkpoint": what, "detail": message })
            }
            Error::ModelDirectory { file, message } => json!({ "file": file, "detail": message }),
            Error::Data {
                file,
                line,
                column,
                message,
            } => json!({ "file": file, "line": line, "column": column, "detail": message }),
            Error::Distributed(D::Env { variable, message }) => {
                json!({ "reason": "environment", "variable": variable, "detail": message })
            }
            Error::Distributed(D::Rendezvous {
                rank,
                world,
                master,
                message,
            }) => json!({
                "reason": "rendezvous", "rank": rank, "worldSize": world, "master": master,
                "detail": message,
            }),
            Error::Distributed(D::Collective {
                rank,
                world,
                operation,
                dead_ranks,
                message,
            }) => json!({
                "reason": "collective", "rank": rank, "worldSize": world,
                "operation": operation, "deadRanks": dead_ranks, "detail": message,
            }),
        };
        let mut payload = json!({ "code": self.code(), "message": self.to_string() });
        if let (Some(out), serde_json::Value::Object(fields)) = (payload.as_object_mut(), fields) {
            out.extend(fields);
        }
        payload
    }

    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, err: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            message: err.to_string(),
        }
    }

    /// A checkpoint problem.
    pub fn checkpoint(what: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Checkpoint {
            what: what.into(),
            message: message.into(),
        }
    }

    /// A pretrained model directory's `file` is at fault.
    pub fn model_directory(file: impl Into<String>, message: impl Into<String>) -> Self {
        Error::ModelDirectory {
            file: file.into(),
            message: message.into(),
        }
    }

    /// A configuration error at `path`.
    pub fn config(path: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Config {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// A libtorch message without the C++ backtrace libtorch appends to it.
#[derive(Debug)]
pub struct TorchMessage(pub String);

impl fmt::Display for TorchMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<tch::TchError> for Error {
    fn from(err: tch::TchError) -> Self {
        let full = match err {
            tch::TchError::Torch(msg) => msg,
            other => other.to_string(),
        };
        let cut = full
            .find("\nException raised from")
            .or_else(|| full.find("Exception raised from"))
            .unwrap_or(full.len());
        Error::Torch(TorchMessage(full[..cut].trim().to_string()))
    }
}

/// Whether `err` is libtorch running out of memory: CUDA's allocator, cuBLAS's allocation
/// failure, cuDNN's not-supported status (how cuDNN reports oversized workspaces), or the CPU
/// allocator (libtorch's; the core's CPU tensor cache fails as C++ does, with `std::bad_alloc`).
pub fn is_out_of_memory(err: &Error) -> bool {
    let Error::Torch(message) = err else {
        return false;
    };
    let text = message.0.as_str();
    (text.contains("CUDA") && text.contains("out of memory"))
        || text.contains("cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.")
        || text.contains("DefaultCPUAllocator: can't allocate memory")
        || text.contains("CUBLAS_STATUS_ALLOC_FAILED")
        || text.contains("std::bad_alloc")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_errors_lose_their_backtrace() {
        let err: Error = tch::TchError::Torch(
            "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)\nException raised from at::foo\nframe #0".into(),
        )
        .into();
        assert_eq!(
            err.to_string(),
            "libtorch error: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
        );
        assert_eq!(err.code(), "ERR_TORCH");
    }

    #[test]
    fn payloads_carry_every_field() {
        let data = Error::Data {
            file: "train.txt".into(),
            line: 3,
            column: 7,
            message: "bad label".into(),
        };
        assert_eq!(
            data.payload(),
            serde_json::json!({
                "code": "ERR_DATA", "message": "train.txt:3:7: bad label",
                "file": "train.txt", "line": 3, "column": 7, "detail": "bad label",
            })
        );
        let collective = Error::Distributed(DistributedError::Collective {
            rank: 1,
            world: 2,
            operation: "all_reduce",
            dead_ranks: vec![0],
            message: "peer gone".into(),
        });
        let payload = collective.payload();
        assert_eq!(payload["code"], "ERR_DISTRIBUTED");
        assert_eq!(payload["deadRanks"], serde_json::json!([0]));
        assert_eq!(payload["operation"], "all_reduce");
    }

    #[test]
    fn running_out_of_memory_has_a_code_of_its_own() {
        let oom: Error = tch::TchError::Torch(
            "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)"
                .into(),
        )
        .into();
        assert_eq!(oom.code(), "ERR_OUT_OF_MEMORY");
        assert_eq!(oom.payload()["code"], "ERR_OUT_OF_MEMORY");
    }
}

#[cfg(test)]
mod out_of_memory_tests {
    use super::*;

    fn torch(message: &str) -> Error {
        tch::TchError::Torch(message.to_string()).into()
    }

    #[test]
    fn the_libtorch_messages_of_an_allocation_failure_are_out_of_memory() {
        for message in [
            "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity)",
            "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a \
             non-contiguous input.",
            "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: \
             you tried to allocate 858993459200 bytes.",
            "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "std::bad_alloc",
        ] {
            assert!(is_out_of_memory(&torch(message)), "{message}");
        }
    }

    #[test]
    fn other_errors_are_not() {
        assert!(!is_out_of_memory(&torch(
            "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
        )));
        assert!(!is_out_of_memory(&torch("CUDA error: device-side assert")));
        assert!(!is_out_of_memory(&torch("out of memory")));
        assert!(!is_out_of_memory(&Error::config("x", "CUDA out of memory")));
    }

    #[test]
    fn a_real_cpu_allocation_failure_is_recognised() {
        // An allocation no machine can satisfy: libtorch's CPU allocator refuses it (or the CPU
        // tensor cache, when another test of this process installed it).
        let err: Error = tch::Tensor::f_empty([1i64 << 40], (tch::Kind::Float, tch::Device::Cpu))
            .map(|_| ())
            .map_err(Error::from)
            .unwrap_err();
        assert!(is_out_of_memory(&err), "{err}");
    }
}
