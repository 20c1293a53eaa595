//! Turns a validated configuration into the objects of a run, in a fixed order.

use crate::config::{
    DatasetConfig, LearnerConfig, ListenerConfig, LossConfig, ModelConfig, OptimizerConfig,
    SamplerConfig, TrainerConfig,
};
use crate::data::{synthetic_ltr, LtrDataset, PairwiseSampler};
use crate::learner::PairwiseEvaluation;
use crate::losses::{HingeLoss, PairwiseLoss};
use crate::models::MlpScorer;
use crate::optim::Adam;
use crate::rng::Rng;
use crate::{Error, Result};

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

/// A configuration this core can read but not run yet.
fn unsupported(path: impl Into<String>, type_id: &str) -> Error {
    Error::config(
        path,
        format!("{type_id} is not supported by this version of the xpm-torch core"),
    )
}

fn dataset(config: &DatasetConfig, path: &str) -> Result<LtrDataset> {
    match config {
        DatasetConfig::Synthetic(c) => synthetic_ltr(c, path),
    }
}

fn pairwise_loss(config: &LossConfig, path: String) -> Result<Box<dyn PairwiseLoss>> {
    match config {
        LossConfig::PairwiseHinge(c) => Ok(Box::new(HingeLoss {
            weight: c.weight,
            margin: c.margin,
        })),
        other => Err(unsupported(path, other.type_id())),
    }
}

pub(crate) fn build(config: &LearnerConfig) -> Result<Run> {
    let seed = config.random.seed;
    if let Some(hook) = config.hooks.first() {
        return Err(unsupported("learner.hooks[0]", hook.type_id()));
    }
    let ModelConfig::Mlp(mlp) = &config.model;
    let model = MlpScorer::new(mlp, &mut Rng::derive(seed, "model/init"))?;

    let trainer = match &config.trainer {
        TrainerConfig::Loss(t) => t,
        other => return Err(unsupported("learner.trainer", other.type_id())),
    };
    if trainer.model.is_some() {
        return Err(Error::config(
            "learner.trainer.model",
            "a trainer-specific model is not supported yet",
        ));
    }
    let SamplerConfig::Pairwise(sampler) = &trainer.sampler;
    let data = dataset(&sampler.dataset, "learner.trainer.sampler.dataset")?;
    let sampler = PairwiseSampler::new(
        &data,
        Rng::derive(seed, "trainer/sampler"),
        "learner.trainer.sampler",
    )?;
    let losses = trainer
        .hooks
        .iter()
        .enumerate()
        .map(|(i, h)| pairwise_loss(h, format!("learner.trainer.hooks[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    if losses.is_empty() {
        return Err(Error::config(
            "learner.trainer.hooks",
            "a LossTrainer needs at least one loss",
        ));
    }
    if trainer.batch_size == 0 {
        return Err(Error::config(
            "learner.trainer.batch_size",
            "must be at least 1",
        ));
    }

    let mut optimizers = Vec::with_capacity(config.optimizers.len());
    let mut unclaimed = model.parameters();
    for (i, opt) in config.optimizers.iter().enumerate() {
        let path = format!("learner.optimizers[{i}]");
        if let Some(s) = &opt.scheduler {
            return Err(unsupported(format!("{path}.scheduler"), s.type_id()));
        }
        if opt.filter.type_id() != "xpm_torch.optim.ParameterFilter" {
            return Err(unsupported(format!("{path}.filter"), opt.filter.type_id()));
        }
        // The accept-all filter: the first optimizer claims every parameter.
        let params = std::mem::take(&mut unclaimed);
        match &opt.optimizer {
            OptimizerConfig::Adam(adam) => optimizers.push(Adam::new(adam.clone(), params)?),
            other => return Err(unsupported(format!("{path}.optimizer"), other.type_id())),
        }
    }

    let listeners = config
        .listeners
        .iter()
        .enumerate()
        .map(|(i, l)| match l {
            ListenerConfig::PairwiseAccuracy(c) => {
                let data = dataset(&c.dataset, &format!("learner.listeners[{i}].dataset"))?;
                Ok(Listener {
                    id: c.id.clone(),
                    evaluation: PairwiseEvaluation::new(&data)?,
                })
            }
            other => Err(unsupported(
                format!("learner.listeners[{i}]"),
                other.type_id(),
            )),
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
