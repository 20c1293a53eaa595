//! The demo task (an MLP 16→64→32→1 learning a planted ranking from preference pairs, hinge
//! loss, Adam, batches of 128, as `ts/demo-config.ts`) under one precision and accelerator;
//! prints one JSON line: training steps per second (median over the epochs after the first)
//! and the final held-out pairwise accuracy.
//!
//! `precision_demo <precision> [accelerator] [num_threads] [epochs]`, e.g.
//! `precision_demo bf16-mixed cuda`. `scripts/gpu/suite.sh` runs it on a GPU machine.
// An example may stop at the first failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};

#[path = "../tests/support/demo_config.rs"]
mod demo_config;
use demo_config::learner_json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let precision = args.first().map_or("32-true", String::as_str);
    let accelerator = args.get(1).map_or("auto", String::as_str);
    let threads = args
        .get(2)
        .filter(|t| *t != "default")
        .map_or(String::new(), |t| format!(r#","num_threads":{t}"#));
    let epochs = args.get(3).map_or(8, |e| e.parse().expect("epochs"));
    let json = learner_json(precision, accelerator, &threads, epochs);
    let config = parse_learner(&json).unwrap();
    let out = match learn(&config, &mut NoObserver, &AtomicBool::new(false)) {
        Ok(out) => out,
        Err(err) => {
            println!(
                r#"{{"precision":"{precision}","accelerator":"{accelerator}","error":{}}}"#,
                serde_json::Value::String(err.to_string())
            );
            std::process::exit(1);
        }
    };
    let mut rates: Vec<f64> = out
        .epochs
        .iter()
        .skip(1)
        .map(|e| e.steps_per_second)
        .collect();
    rates.sort_by(f64::total_cmp);
    let median = rates.get(rates.len() / 2).copied().unwrap_or(f64::NAN);
    let last = out.epochs.last().expect("at least one epoch");
    println!(
        "{}",
        serde_json::json!({
            "precision": precision,
            "accelerator": accelerator,
            "threads": tch::get_num_threads(),
            "steps_per_second": median,
            "pairwise_accuracy": last.metrics["heldout/pairwise_accuracy"],
            "loss": last.loss,
            "epochs": out.epochs.len(),
        })
    );
}
