//! A small but complete configuration shared by the core's tests.

pub(crate) fn demo_config_json() -> String {
    let dataset = |seed: u64, queries: u64| {
        format!(
            r#"{{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":11,"seed":{seed},"num_queries":{queries},"docs_per_query":12,"num_features":8,"noise":0.2}}"#
        )
    };
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":5}},
        "model":{{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":8,"hidden_dims":[16]}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer","batch_size":32,
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{train}}},
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}]}},
        "max_epochs":3,"steps_per_epoch":20,
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.01}}}}],
        "listeners":[{{"__xpmtype__":"xpm_torch.listeners.PairwiseAccuracyListener","id":"heldout","dataset":{heldout}}}]}}"#,
        train = dataset(1, 60),
        heldout = dataset(2, 20),
    )
}
