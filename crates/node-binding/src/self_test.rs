use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;

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
