use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;
use xpm_torch_core::{config, learner};

use crate::events::{EventCallback, JsObserver};
use crate::thread::spawn_job;

/// Cancellation flags of the runs in progress, by the id JavaScript gave them.
static RUNS: LazyLock<Mutex<HashMap<u32, Arc<AtomicBool>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Trains the Learner described by `configJson` on a dedicated thread. Resolves to the outcome
/// JSON (`{ok, output | error}`); `onEvent` receives step, epoch, warning and listener events
/// as JSON. `runId` names the run for [`cancel_learn`].
#[napi(ts_return_type = "Promise<string>")]
pub fn learn<'env>(
    env: &'env Env,
    config_json: String,
    #[napi(ts_arg_type = "((event: string) => void) | undefined | null")] on_event: Option<
        EventCallback,
    >,
    run_id: Option<u32>,
) -> napi::Result<Object<'env>> {
    let cancel = Arc::new(AtomicBool::new(false));
    if let (Some(id), Ok(mut runs)) = (run_id, RUNS.lock()) {
        runs.insert(id, cancel.clone());
    }
    spawn_job(env, "xpm-torch-learn", move || {
        let result = config::parse_learner(&config_json).and_then(|config| {
            let mut observer = JsObserver::new(on_event);
            learner::learn(&config, &mut observer, &cancel)
        });
        if let (Some(id), Ok(mut runs)) = (run_id, RUNS.lock()) {
            runs.remove(&id);
        }
        serde_json::to_value(result?).map_err(|e| xpm_torch_core::Error::Panic(e.to_string()))
    })
}

/// Asks run `runId` to stop after its current step; it writes a checkpoint first. Returns
/// whether such a run was in progress.
#[napi]
pub fn cancel_learn(run_id: u32) -> bool {
    RUNS.lock()
        .ok()
        .and_then(|runs| runs.get(&run_id).cloned())
        .map(|flag| flag.store(true, Ordering::Relaxed))
        .is_some()
}
