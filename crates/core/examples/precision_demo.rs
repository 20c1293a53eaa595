//! The demo task (an MLP 16→64→32→1 learning a planted ranking from preference pairs, hinge
//! loss, Adam, batches of 128, as `ts/demo-config.ts`) under one precision and accelerator;
//! prints one JSON line: training steps per second (median over the epochs after the first)
//! and the final held-out pairwise accuracy.
//!
//! `precision_demo <precision> [accelerator] [num_threads] [epochs]`, e.g.
//! `precision_demo bf16-mixed cuda`. `scripts/gpu/precision.sh` runs it on a GPU machine.
// An example may stop at the first failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};

fn learner_json(precision: &str, accelerator: &str, threads: &str, epochs: u64) -> String {
    let data = |seed: u64, queries: u64| {
        format!(
            r#"{{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":2026,"seed":{seed},"num_queries":{queries},"docs_per_query":20,"num_features":16,"noise":0.3}}"#
        )
    };
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":0}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{train}}},
            "batch_size":128,"num_workers":0}},
        "model":{{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":16,"hidden_dims":[64,32]}},
        "max_epochs":{epochs},"steps_per_epoch":100,
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.003,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[{{"__xpmtype__":"xpm_torch.listeners.RankingValidationListener","id":"heldout","dataset":{heldout},
            "metrics":{{"pairwise_accuracy":true}},"warmup":-1,"validation_interval":1,"early_stop":0}}],
        "checkpoint_interval":1,"hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"{precision}",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"{accelerator}"{threads}}}}}"#,
        train = data(1, 400),
        heldout = data(2, 100),
    )
}

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
