use std::fmt;

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
    Distributed(#[from] crate::distributed::DistributedError),
}

impl Error {
    /// Stable machine-readable code, mirrored by the TypeScript error classes.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Config { .. } => "ERR_CONFIG",
            Error::Torch(_) => "ERR_TORCH",
            Error::Panic(_) => "ERR_PANIC",
            Error::Cancelled => "ERR_CANCELLED",
            Error::Interrupted { .. } => "ERR_INTERRUPTED",
            Error::Io { .. } => "ERR_IO",
            Error::NonFinite { .. } => "ERR_NON_FINITE",
            Error::Callback(_) => "ERR_CALLBACK",
            Error::Data { .. } => "ERR_DATA",
            Error::Checkpoint { .. } => "ERR_CHECKPOINT",
            Error::Distributed(_) => "ERR_DISTRIBUTED",
        }
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
}
