//! Turns a validated configuration into the objects of a run, in a fixed order.

use crate::config::ModelConfig;
use crate::config::{
    DatasetConfig, LearnerConfig, ListenerConfig, OptimizerConfig, SamplerConfig, TrainerConfig,
};
use crate::data::{synthetic_ltr, LtrDataset, PairwiseSampler};
use crate::learner::PairwiseEvaluation;
use crate::losses::{pairwise_loss, PairwiseLoss};
use crate::models::MlpScorer;
use crate::optim::Adam;
use crate::rng::Rng;
use crate::Result;

pub(crate) struct Listener {
    pub id: String,
    pub evaluation: PairwiseEvaluation,
}

pub(crate) struct Run {
    pub model: MlpScorer,
    pub sampler: PairwiseSampler,
    pub batch_size: usize,
    pub losses: Vec<Box<dyn PairwiseLoss>>,
    pub optimizers: Vec<Adam>,
    pub listeners: Vec<Listener>,
}

fn dataset(config: &DatasetConfig, path: &str) -> Result<LtrDataset> {
    match config {
        DatasetConfig::Synthetic(c) => synthetic_ltr(c, path),
    }
}

pub(crate) fn build(config: &LearnerConfig) -> Result<Run> {
    let seed = config.random.seed;
    let ModelConfig::Mlp(mlp) = &config.model;
    let model = MlpScorer::new(mlp, &mut Rng::derive(seed, "model/init"))?;

    let TrainerConfig::Loss(trainer) = &config.trainer;
    let SamplerConfig::Pairwise(sampler) = &trainer.sampler;
    let data = dataset(&sampler.dataset, "learner.trainer.sampler.dataset")?;
    let sampler = PairwiseSampler::new(
        &data,
        Rng::derive(seed, "trainer/sampler"),
        "learner.trainer.sampler",
    )?;
    let losses = trainer.hooks.iter().map(pairwise_loss).collect();

    let mut optimizers = Vec::with_capacity(config.optimizers.len());
    let mut unclaimed = model.parameters();
    for opt in &config.optimizers {
        // Every optimizer selects all parameters for now, so the first claims them all.
        let params = std::mem::take(&mut unclaimed);
        let OptimizerConfig::Adam(adam) = &opt.optimizer;
        optimizers.push(Adam::new(adam.clone(), params)?);
    }

    let listeners = config
        .listeners
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let ListenerConfig::PairwiseAccuracy(c) = l;
            let data = dataset(&c.dataset, &format!("learner.listeners[{i}].dataset"))?;
            Ok(Listener {
                id: c.id.clone(),
                evaluation: PairwiseEvaluation::new(&data)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;

    Ok(Run {
        model,
        sampler,
        batch_size: trainer.batch_size as usize,
        losses,
        optimizers,
        listeners,
    })
}
