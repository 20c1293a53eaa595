//! Diagnostics for the binding's own tests: a panic in a training thread, one error per kind.

use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;
use xpm_torch_core::distributed::DistributedError;
use xpm_torch_core::Error;

use crate::outcome;
use crate::thread::spawn_job;

/// Diagnostic: panics inside the training thread machinery, to check that a panic becomes an
/// `ERR_PANIC` outcome and never takes the Node process down.
#[napi(ts_return_type = "Promise<string>")]
pub fn panic_in_training_thread<'env>(
    env: &'env Env,
    message: String,
) -> napi::Result<Object<'env>> {
    spawn_job(
        env,
        "xpm-torch-self-test",
        move || -> Result<serde_json::Value, xpm_torch_core::Error> {
            std::panic::panic_any(message)
        },
    )
}

/// Diagnostic: one failed outcome JSON per kind of core error, each with every field set, to
/// check that each crosses the binding as its TypeScript class with its fields.
#[napi]
pub fn error_samples() -> Vec<String> {
    let oom = tch::TchError::Torch(
        "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)".into(),
    );
    [
        Error::config("trainer.batch_size", "must be at least 1"),
        tch::TchError::Torch("mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)".into())
            .into(),
        oom.into(),
        Error::Panic("a sample panic".into()),
        Error::Cancelled,
        Error::Interrupted {
            step: 42,
            checkpoint: "checkpoints/epoch-2".into(),
        },
        Error::Io {
            path: "runs/events".into(),
            message: "permission denied".into(),
        },
        Error::NonFinite {
            step: 7,
            what: "the training loss of epoch 1 is NaN".into(),
        },
        Error::checkpoint("checkpoints/epoch-1", "trainer.json is missing"),
        Error::Data {
            file: "train.txt".into(),
            line: 12,
            column: 3,
            message: "expected qid:<id>".into(),
        },
        Error::Callback("listener \"x\" answered badly".into()),
        Error::model_directory("models/bert/config.json", "no model_type"),
        Error::Unsupported("autocast in Int8".into()),
        Error::Distributed(DistributedError::Env {
            variable: "WORLD_SIZE".into(),
            message: "is not a number".into(),
        }),
        Error::Distributed(DistributedError::Rendezvous {
            rank: 1,
            world: 2,
            master: "127.0.0.1:29500".into(),
            message: "timed out".into(),
        }),
        Error::Distributed(DistributedError::Collective {
            rank: 0,
            world: 3,
            operation: "all_reduce",
            dead_ranks: vec![2],
            message: "rank 2 exited".into(),
        }),
    ]
    .into_iter()
    .map(|e| outcome::to_json(Err(e)))
    .collect()
}
