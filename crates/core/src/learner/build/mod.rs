//! Turns a validated configuration into the objects of a run, in a fixed order: model,
//! structural hooks, trainer, optimizers, listeners. Each part has its module: the data of the
//! samplers and validations (`data`), the trainers with their losses and hooks (`trainer`), the
//! optimizers (`optimizers`) and the listeners (`listeners`).

mod data;
mod listeners;
mod optimizers;
mod trainer;

use std::rc::Rc;
use std::sync::Arc;

use self::data::DataSources;
use self::listeners::listener;
use self::optimizers::optimizers;
pub(crate) use self::trainer::{js_hooks, JsHook};
use self::trainer::{trainer, TrainerInputs};
use super::hooks::{apply_structural_hooks, GradientHook};
use super::listeners::Listener;
use super::trainers::Trainer;
use crate::config::LearnerConfig;
use crate::data::{JsData, Shard};
use crate::models::{self, Model, PlacedModel};
use crate::optim::Optimizers;
use crate::rng::Rng;
use crate::runtime::{LossScaler, RunGenerators, Runtime};
use crate::Result;

pub(crate) struct Run {
    pub model: Box<dyn Model>,
    pub trainer: Box<dyn Trainer>,
    pub optimizers: Optimizers,
    pub gradient_hooks: Vec<GradientHook>,
    pub listeners: Vec<Box<dyn Listener>>,
    /// The metric of each optimizer's learning rate, made once rather than every step.
    pub lr_metrics: Vec<String>,
    /// The dynamic loss scaler of `16-mixed`.
    pub scaler: Option<LossScaler>,
    /// The libtorch generators dropout draws from, seeded from `random` and this rank.
    pub random: Rc<RunGenerators>,
    /// The model's new weights (see [`Model::new_weights`]) that no initialisation task loaded.
    pub new_weights: Vec<String>,
}

/// The way to the JavaScript side of the run, when there is one.
pub(crate) type Js = Option<Arc<dyn JsData>>;

/// Loads the weights of the initialisation tasks into `model`; returns the model's new weights
/// (see [`Model::new_weights`]) that none of them loaded.
///
/// # Errors
/// As [`models::load_from_loader`].
fn run_init_tasks(config: &LearnerConfig, model: &dyn Model) -> Result<Vec<String>> {
    let mut loaded = Vec::new();
    for (i, loader) in config.init_tasks.iter().flatten().enumerate() {
        loaded.push(models::load_from_loader(
            model,
            &config.model,
            loader,
            &format!("learner.__init_tasks__[{i}]"),
        )?);
    }
    let new_weights = model.new_weights().into_iter();
    Ok(new_weights
        .filter(|name| {
            !loaded
                .iter()
                .any(|prefix| name.starts_with(prefix.as_str()))
        })
        .collect())
}

/// Builds the run of the process sampling `shard` of the training data (`Shard::WHOLE` alone).
pub(crate) fn build(
    config: &LearnerConfig,
    runtime: &Runtime,
    shard: Shard,
    js: &Js,
) -> Result<Run> {
    let seed = config.random.seed;
    // First: a model drawing from libtorch's default generators needs their lease, held by one
    // run of the process at a time (`learn()` takes it before building, to say when it waits).
    let random = Rc::new(RunGenerators::new(
        seed,
        shard.rank,
        runtime.device,
        models::draws_from_global_generator(&config.model),
    )?);
    let mut model = models::build(
        &config.model,
        &mut Rng::derive(seed, models::MODEL_INIT_STREAM),
        "learner.model",
    )?;
    // Before sharing and freezing, as Python runs init tasks before the Learner.
    let new_weights = run_init_tasks(config, model.as_ref())?;

    let hooks = config.trainer.training_hooks("learner.trainer");
    let frozen = apply_structural_hooks(&hooks, &config.model, model.as_mut())?;
    for p in model.named_parameters() {
        if frozen.contains(&p.name) {
            let _ = p.tensor.set_requires_grad(false);
        }
    }
    let model: Box<dyn Model> = Box::new(PlacedModel::new(model, runtime.clone())?);

    let output = model.output_type();
    let text = models::hf::text_encoding(&config.model, "learner.model")?;
    let sources = DataSources {
        js,
        text: text.as_ref(),
    };
    let inputs = TrainerInputs {
        device: runtime.device,
        sources,
        shard,
        seed,
        output,
    };
    let trainer = trainer(&config.trainer, inputs, "learner.trainer")?;
    let optimizers = optimizers(config, model.as_ref(), &frozen)?;
    let gradient_hooks = config.hooks.iter().map(GradientHook::new).collect();
    let listeners = config
        .listeners
        .iter()
        .enumerate()
        .map(|(i, l)| listener(l, i, output, runtime.device, sources))
        .collect::<Result<Vec<_>>>()?;
    let lr_metrics = (1..=config.optimizers.len())
        .map(|i| format!("gradient/scheduler/{i}/1"))
        .collect();
    Ok(Run {
        model,
        trainer,
        optimizers,
        gradient_hooks,
        listeners,
        lr_metrics,
        scaler: runtime.loss_scaler()?,
        random,
        new_weights,
    })
}
