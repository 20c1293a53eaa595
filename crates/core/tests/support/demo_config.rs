//! The demo task's Learner configuration (an MLP 16→64→32→1 learning a planted ranking from
//! preference pairs, hinge loss, Adam, batches of 128, 100 steps per epoch): `demoLearner()` of
//! `ts/demo-config.ts` as the core reads it, `tests/fixtures/demo.json`, which `npm run build`
//! writes and test/demo-fixture.test.ts keeps current. Shared by the GPU suite, the examples and
//! the benches, each changing the fields it needs in code.
// Each includer uses part of this module; test support stops at the first failure.
#![allow(dead_code, clippy::expect_used)]

use serde_json::{Map, Value};

/// The demo Learner, without the paths generated for a job directory (`runs`, `checkpoints`,
/// the listeners' outputs): a run of it writes no TensorBoard log and no listener file.
pub fn demo() -> Value {
    let mut demo: Value = serde_json::from_str(include_str!("../fixtures/demo.json"))
        .expect("tests/fixtures/demo.json is JSON");
    let learner = demo.as_object_mut().expect("the Learner is an object");
    learner.remove("logpath");
    learner.remove("checkpointspath");
    for listener in learner["listeners"].as_array_mut().expect("listeners") {
        let listener = listener.as_object_mut().expect("a listener is an object");
        listener.remove("bestpath");
        listener.remove("info");
    }
    demo
}

/// Sets the fields of `fields` (a JSON object's members, e.g. `,"num_threads":2`) in `object`.
pub fn splice(object: &mut Value, fields: &str) {
    let fields: Map<String, Value> =
        serde_json::from_str(&format!("{{{}}}", fields.trim_start_matches(',')))
            .expect("fields of a JSON object");
    object.as_object_mut().expect("an object").extend(fields);
}

/// The demo for `epochs` epochs at `precision` on `accelerator`, with `extra` spliced into its
/// FabricConfiguration (e.g. `,"num_threads":2`).
pub fn learner_json(precision: &str, accelerator: &str, extra: &str, epochs: u64) -> String {
    let mut learner = demo();
    learner["max_epochs"] = epochs.into();
    let fabric = &mut learner["fabric_config"];
    fabric["precision"] = precision.into();
    fabric["accelerator"] = accelerator.into();
    splice(fabric, extra);
    learner.to_string()
}
