//! The demo task's Learner configuration (an MLP 16→64→32→1 learning a planted ranking from
//! preference pairs, hinge loss, Adam, batches of 128, 100 steps per epoch, as
//! `ts/demo-config.ts`), shared by the precision example and the GPU suite.
//! `extra` is spliced into the FabricConfiguration (e.g. `,"num_threads":2`).

pub fn learner_json(precision: &str, accelerator: &str, extra: &str, epochs: u64) -> String {
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
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"{accelerator}"{extra}}}}}"#,
        train = data(1, 400),
        heldout = data(2, 100),
    )
}
