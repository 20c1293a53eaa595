use std::sync::atomic::AtomicBool;

use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;
use xpm_torch_core::{config, learner};

use crate::events::{EventCallback, JsObserver};
use crate::thread::spawn_job;

/// Trains the Learner described by `configJson` on a dedicated thread. Resolves to the outcome
/// JSON (`{ok, output | error}`); `onEvent` receives step and epoch events as JSON.
#[napi(ts_return_type = "Promise<string>")]
pub fn learn<'env>(
    env: &'env Env,
    config_json: String,
    #[napi(ts_arg_type = "(event: string) => void")] on_event: Option<EventCallback>,
) -> napi::Result<Object<'env>> {
    spawn_job(env, "xpm-torch-learn", move || {
        let config = config::parse_learner(&config_json)?;
        let mut observer = JsObserver::new(on_event);
        let output = learner::learn(&config, &mut observer, &AtomicBool::new(false))?;
        serde_json::to_value(output).map_err(|e| xpm_torch_core::Error::Panic(e.to_string()))
    })
}
