//! Process-wide libtorch settings of the runtime (threads, determinism, matmul precision), in
//! their own test process so that they cannot disturb the library's tests.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};
use xpm_torch_core::runtime::{
    current_matmul_precision, deterministic_algorithms, MatmulPrecision,
};

fn scratch() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "xpm-runtime-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn learner_json(dir: &std::path::Path, fabric_extra: &str) -> String {
    let data = r#"{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":3,"seed":1,"num_queries":100,"docs_per_query":20,"num_features":16,"noise":0.3}"#;
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":7}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{data}}},
            "batch_size":128,"num_workers":0}},
        "model":{{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":16,"hidden_dims":[64,32]}},
        "max_epochs":2,"steps_per_epoch":15,
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.003,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[],"checkpoint_interval":1,"hooks":[],
        "checkpointspath":{dir:?},
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"cpu"{fabric_extra}}}}}"#,
        dir = dir.join("checkpoints").display().to_string(),
    )
}

fn trained_weights(fabric_extra: &str) -> Vec<u8> {
    let dir = scratch();
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
