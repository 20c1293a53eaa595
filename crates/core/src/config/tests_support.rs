//! A small but complete configuration, in the wire format the TypeScript side writes.

pub(crate) fn demo_config_json() -> String {
    let dataset = |seed: u64, queries: u64| {
        format!(
            r#"{{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":11,"seed":{seed},"num_queries":{queries},"docs_per_query":12,"num_features":8,"noise":0.2}}"#
        )
    };
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":5}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{train}}},
            "batch_size":32,"num_workers":2}},
        "model":{{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":8,"hidden_dims":[16]}},
        "max_epochs":3,"steps_per_epoch":20,
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.01,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[{{"__xpmtype__":"xpm_torch.listeners.RankingValidationListener","id":"heldout","dataset":{heldout},
            "metrics":{{"pairwise_accuracy":true,"ndcg@5":false}},"warmup":-1,"validation_interval":1,"early_stop":0}}],
        "checkpoint_interval":1,"checkpoint_keep":1,"keep_training_state":false,"validate_at_start":false,"step_losses":false,"logpath":"/tmp/job/runs","checkpointspath":"/tmp/job/checkpoints","hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"auto"}}}}"#,
        train = dataset(1, 60),
        heldout = dataset(2, 20),
    )
}

#[path = "../../tests/support/scratch.rs"]
mod scratch;

pub(crate) use scratch::scratch_dir;

/// A CPU run's fabric configuration in `precision`, everything else by default.
pub(crate) fn cpu_fabric(precision: &str) -> super::FabricConfigurationConfig {
    super::FabricConfigurationConfig {
        precision: precision.parse().unwrap(),
        torch_fp32_precision: None,
        num_nodes: 1,
        devices: "auto".into(),
        strategy: super::Strategy::Auto,
        accelerator: super::Accelerator::Cpu,
        num_threads: None,
        deterministic: None,
    }
}
