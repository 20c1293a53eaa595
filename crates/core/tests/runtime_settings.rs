//! Process-wide libtorch settings of the runtime (threads, determinism, matmul precision), in
//! their own test process so that they cannot disturb the library's tests.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};
use xpm_torch_core::runtime::{
    current_matmul_precision, deterministic_algorithms, MatmulPrecision,
};

#[path = "support/demo_config.rs"]
mod demo_config;
#[path = "support/scratch.rs"]
mod scratch;

/// The demo Learner on the CPU for 2 epochs of 15 steps, checkpointed in `dir`, without
/// validation, with `fabric_extra` spliced into its FabricConfiguration.
fn learner_json(dir: &std::path::Path, fabric_extra: &str) -> String {
    let mut learner = demo_config::demo();
    learner["random"]["seed"] = 7.into();
    learner["max_epochs"] = 2.into();
    learner["steps_per_epoch"] = 15.into();
    learner["listeners"] = serde_json::json!([]);
    learner["checkpointspath"] = dir.join("checkpoints").display().to_string().into();
    let fabric = &mut learner["fabric_config"];
    fabric["accelerator"] = "cpu".into();
    demo_config::splice(fabric, fabric_extra);
    learner.to_string()
}

fn trained_weights(fabric_extra: &str) -> Vec<u8> {
    let dir = scratch::scratch_dir();
    let config = parse_learner(&learner_json(&dir, fabric_extra)).unwrap();
    let out = learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap();
    std::fs::read(out.learned_model.unwrap()).unwrap()
}

#[test]
fn two_cpu_runs_with_a_fixed_thread_count_give_bit_identical_weights() {
    let extra = r#","num_threads":2,"deterministic":true,"torch_fp32_precision":"highest""#;
    let a = trained_weights(extra);
    assert_eq!(tch::get_num_threads(), 2);
    assert!(deterministic_algorithms().unwrap());
    assert_eq!(
        current_matmul_precision().unwrap(),
        MatmulPrecision::Highest
    );
    let b = trained_weights(extra);
    assert_eq!(a, b);
    // A single thread is applied too, and is reproducible as well.
    let one = r#","num_threads":1,"deterministic":true,"torch_fp32_precision":"highest""#;
    let c = trained_weights(one);
    assert_eq!(tch::get_num_threads(), 1);
    assert_eq!(c, trained_weights(one));
    // Defaults: matmul precision "high" for 32-true, no deterministic algorithms.
    let _ = trained_weights("");
    assert_eq!(current_matmul_precision().unwrap(), MatmulPrecision::High);
    assert!(!deterministic_algorithms().unwrap());
}
