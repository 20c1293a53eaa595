//! Reproducibility with dropout on one accelerator: for an MLP and a Transformer cross-encoder,
//! both with dropout, two runs with one seed, and a run interrupted in its second epoch then
//! resumed, must end with the bytes of the first run. Prints one JSON line per model.
//!
//! `dropout_repro [accelerator]`, e.g. `dropout_repro cuda`. `scripts/gpu/suite.sh`
//! runs it on a GPU machine (with `deterministic: true`: some CUDA kernels add in a varying
//! order otherwise).
// An example may stop at the first failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use xpm_torch_core::config::{parse_learner, LearnerConfig};
use xpm_torch_core::learner::{learn, LearnOutput, NoObserver};

#[path = "../tests/support/cancel.rs"]
mod cancel;

use cancel::learn_cancelled_at;

const MLP: &str = r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":16,"hidden_dims":[64,32],"activation":"relu","dropout":0.2,"layer_norm":false}"#;
const CROSS: &str = r#"{"__xpmtype__":"xpm_torch.models.TransformerCrossEncoder","vocab_size":200,"dim":32,"heads":2,"layers":1,"ffn_dim":64,"max_length":32,"dropout":0.2}"#;

fn learner_json(model: &str, accelerator: &str, dir: &str) -> String {
    let features = model == MLP;
    let data = |seed: u64, n: u64| {
        if features {
            format!(
                r#"{{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":2026,"seed":{seed},"num_queries":{n},"docs_per_query":20,"num_features":16,"noise":0.3}}"#
            )
        } else {
            format!(
                r#"{{"__xpmtype__":"xpm_torch.data.SyntheticTokenTriplets","seed":{seed},"num_triplets":{},"vocab_size":200,"query_length":3,"min_length":4,"max_length":12}}"#,
                n * 10
            )
        }
    };
    let sampler = if features {
        format!(
            r#"{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{}}}"#,
            data(1, 200)
        )
    } else {
        format!(
            r#"{{"__xpmtype__":"xpm_torch.samplers.TokenTripletSampler","triplets":{}}}"#,
            data(1, 200)
        )
    };
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":0}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{sampler},"batch_size":64,"num_workers":2}},
        "model":{model},
        "max_epochs":3,"steps_per_epoch":20,
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.AdamW","lr":0.001,"weight_decay":0.01,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[],
        "checkpoint_interval":1,"checkpointspath":"{dir}/checkpoints","hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"{accelerator}","deterministic":true}}}}"#,
    )
}

fn fresh_dir(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("xpm-dropout-repro-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn weights(out: &LearnOutput) -> Vec<u8> {
    std::fs::read(out.learned_model.as_ref().unwrap()).unwrap()
}

fn check(name: &str, model: &str, accelerator: &str) -> serde_json::Value {
    let config = |label: &str| {
        let dir = fresh_dir(&format!("{name}-{label}"));
        parse_learner(&learner_json(
            model,
            accelerator,
            &dir.display().to_string(),
        ))
        .unwrap()
    };
    let run = |c: &LearnerConfig| learn(c, &mut NoObserver, &AtomicBool::new(false));
    let result = (|| -> xpm_torch_core::Result<serde_json::Value> {
        let first = run(&config("a"))?;
        let second = run(&config("b"))?;
        let interrupted = config("c");
        let stopped = learn_cancelled_at(&interrupted, 27);
        let resumed = run(&interrupted)?;
        Ok(serde_json::json!({
            "model": name,
            "accelerator": accelerator,
            "interrupted": stopped.err().map(|e| e.code()),
            "same_seed_same_bytes": weights(&first) == weights(&second),
            "resumed_same_bytes": weights(&first) == weights(&resumed),
        }))
    })();
    result.unwrap_or_else(|err| {
        serde_json::json!({ "model": name, "accelerator": accelerator, "error": err.to_string() })
    })
}

fn main() {
    let accelerator = std::env::args().nth(1).unwrap_or_else(|| "auto".into());
    let mut ok = true;
    for (name, model) in [("MLP", MLP), ("TransformerCrossEncoder", CROSS)] {
        let line = check(name, model, &accelerator);
        ok &= line["same_seed_same_bytes"] == true && line["resumed_same_bytes"] == true;
        println!("{line}");
    }
    if !ok {
        std::process::exit(1);
    }
}
