//! Jobs on threads of their own whose outcome is a Promise, a panic included.

use std::panic::{catch_unwind, AssertUnwindSafe};

use napi::bindgen_prelude::{Env, Object};
use napi::JsDeferred;
use serde_json::Value;
use xpm_torch_core::Error;

use crate::outcome;

pub type Deferred = JsDeferred<String, Box<dyn FnOnce(Env) -> napi::Result<String>>>;

/// Runs `job` on a thread of its own (never the JS thread nor the libuv pool) and returns a
/// Promise of its outcome JSON. A panic in `job` rejects nothing and crashes nothing: it
/// resolves to an `ERR_PANIC` outcome.
pub fn spawn_job<'env, F>(env: &'env Env, name: &str, job: F) -> napi::Result<Object<'env>>
where
    F: FnOnce() -> Result<Value, Error> + Send + 'static,
{
    let (deferred, promise): (Deferred, Object<'env>) = env.create_deferred()?;
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let result = catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic payload".to_string());
                Err(Error::Panic(message))
            });
            let text = outcome::to_json(result);
            deferred.resolve(Box::new(move |_env| Ok(text)));
        })
        .map_err(|e| napi::Error::from_reason(format!("cannot start the training thread: {e}")))?;
    Ok(promise)
}
