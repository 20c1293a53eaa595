//! Turns a validated configuration into the objects of a run, in a fixed order: model,
//! structural hooks, trainer, optimizers, listeners.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use super::hooks::{apply_structural_hooks, GradientHook};
use super::listeners::best::ValidationSchedule;
use super::listeners::{
    ranking_bests, JsListener, Listener, RankMetric, RankingInput, RankingValidation,
    ValidationListener, ValidationLoss,
};
use super::trainers::{
    memory_probe, EvaluationBatching, EvaluationPairs, LossTrainer, MultipleTrainer, RecordDims,
    Trainer,
};
use crate::batching::Batcher;
use crate::config::{
    AnyLearnerListener, AnyLtrDataset, AnyOptimizer, AnyRankedDataset, AnySampleIterator,
    AnySampler, AnyTokenTriplets, AnyTrainer, AnyTrainingHook, JsHookKind, LearnerConfig,
    LossTrainerConfig, RankingValidationListenerConfig, SlateSamplerConfig,
    TrainerValidationLossConfig,
};
use crate::data::{
    js_dataset, load_triplets, read_letor, read_text_pairs, read_text_triplets, synthetic_ltr,
    BatchSource, BatchwiseSampler, IdTriplets, JsData, JsSampler, LtrDataset, PairwiseSampler,
    PointwiseSampler, RecordKind, Reranking, Sampler, Shard, SlateSampler, Staging, TextEncoding,
    TextPairSampler, TextTripletSampler, TokenTripletSampler,
};
use crate::losses::batchwise::{
    CrossEntropyLoss as BatchwiseCrossEntropyLoss, SoftmaxCrossEntropy,
};
use crate::losses::listwise::listwise_loss;
use crate::losses::{AnyLoss, LossSet};
use crate::losses::{CrossEntropyLoss, HingeLoss, PointwiseCrossEntropyLoss};
use crate::models::{self, Model, OutputType, PlacedModel};
use crate::optim::{
    schedule, Adafactor, Adam, Optimizer, Optimizers, ParameterFilter, ScheduledOptimizer, Sgd,
};
use crate::rng::Rng;
use crate::runtime::{LossScaler, RunGenerators, Runtime};
use crate::{Error, Result};

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

/// A configuration this core can read but not run yet.
fn unsupported(path: impl Into<String>, type_id: &str) -> Error {
    Error::config(
        path,
        format!("{type_id} is not supported by this version of the xpm-torch core"),
    )
}

/// The way to the JavaScript side of the run, when there is one.
pub(crate) type Js = Option<Arc<dyn JsData>>;

fn no_js(path: &str, what: &str) -> Error {
    Error::config(
        path,
        format!("{what} is written in TypeScript, but this run has no JavaScript side"),
    )
}

fn dataset(config: &AnyLtrDataset, js: &Js, path: &str) -> Result<LtrDataset> {
    match config {
        AnyLtrDataset::JsObject(c) => match js {
            Some(js) => js_dataset(js.as_ref(), &c.key, path),
            None => Err(no_js(path, "this dataset")),
        },
        AnyLtrDataset::SyntheticLtrDataset(c) => Ok(synthetic_ltr(c)),
        AnyLtrDataset::LetorDataset(c) => Ok(read_letor(
            std::path::Path::new(&c.path),
            c.num_features.map(|n| n as usize),
        )?
        .dataset),
        AnyLtrDataset::InMemoryLtrDataset(_) => Err(Error::config(
            path,
            "an InMemoryLtrDataset holds arrays that only TypeScript has: build it with \
             inMemoryLtrDataset({...}) and train with learn()",
        )),
    }
}

/// The dataset of features a ranked-dataset position holds, or `None` for a text run.
fn features_of(config: &AnyRankedDataset) -> Option<AnyLtrDataset> {
    Some(match config {
        AnyRankedDataset::SyntheticLtrDataset(c) => AnyLtrDataset::SyntheticLtrDataset(c.clone()),
        AnyRankedDataset::LetorDataset(c) => AnyLtrDataset::LetorDataset(c.clone()),
        AnyRankedDataset::InMemoryLtrDataset(c) => AnyLtrDataset::InMemoryLtrDataset(c.clone()),
        AnyRankedDataset::JsObject(c) => AnyLtrDataset::JsObject(c.clone()),
        AnyRankedDataset::TextRerankingDataset(_) => return None,
    })
}

/// How a text model wants texts encoded, or an error at `path` saying `what` needs one.
fn text_encoding(text: Option<&TextEncoding>, what: &str, path: &str) -> Result<TextEncoding> {
    text.cloned().ok_or_else(|| {
        Error::config(
            path,
            format!(
                "{what} feeds texts to a pretrained text model: set the learner's model to a \
                 CrossEncoder or a BiEncoder"
            ),
        )
    })
}

/// The losses among `hooks`, for a model whose scores are `output` and records of `records`.
fn loss_set(
    hooks: &[AnyTrainingHook],
    output: OutputType,
    records: RecordKind,
    path: &str,
) -> Result<LossSet> {
    let mut losses = Vec::new();
    for (i, hook) in hooks.iter().enumerate() {
        let loss = match hook {
            AnyTrainingHook::HingeLoss(c) => AnyLoss::Pairwise(Box::new(HingeLoss {
                weight: c.weight,
                margin: c.margin,
            })),
            AnyTrainingHook::PairwiseCrossEntropyLoss(c) => {
                AnyLoss::Pairwise(Box::new(CrossEntropyLoss { weight: c.weight }))
            }
            AnyTrainingHook::PointwiseCrossEntropyLoss(c) => {
                AnyLoss::Pointwise(PointwiseCrossEntropyLoss {
                    weight: c.weight,
                    output,
                })
            }
            AnyTrainingHook::BatchwiseCrossEntropyLoss(c) => {
                if output != OutputType::Probability {
                    return Err(Error::config(
                        format!("{path}.hooks[{i}]"),
                        "the batchwise CrossEntropyLoss needs a model whose scores are \
                         probabilities: wrap the model in SigmoidOutput({ output: \"probability\" }), \
                         or use SoftmaxCrossEntropy for real-valued scores",
                    ));
                }
                AnyLoss::Batchwise(Box::new(BatchwiseCrossEntropyLoss { weight: c.weight }))
            }
            AnyTrainingHook::SoftmaxCrossEntropy(c) => {
                AnyLoss::Batchwise(Box::new(SoftmaxCrossEntropy {
                    weight: c.weight,
                    output,
                }))
            }
            AnyTrainingHook::ListNetLoss(_)
            | AnyTrainingHook::ListMleLoss(_)
            | AnyTrainingHook::RankNetLoss(_)
            | AnyTrainingHook::LambdaLoss(_)
            | AnyTrainingHook::ApproxNdcgLoss(_)
            | AnyTrainingHook::NeuralNdcgLoss(_) => match listwise_loss(hook) {
                Some(loss) => AnyLoss::Listwise(loss),
                None => continue,
            },
            AnyTrainingHook::LayerFreezer(_)
            | AnyTrainingHook::LayerSharer(_)
            | AnyTrainingHook::JsObject(_) => continue,
        };
        losses.push(loss);
    }
    LossSet::new(losses, records, path)
}

/// The sampler `config` describes, at `path`, drawing with `rng` from its `shard`.
fn sampler(
    config: &AnySampler,
    js: &Js,
    text: Option<&TextEncoding>,
    rng: Rng,
    shard: Shard,
    path: &str,
) -> Result<Box<dyn Sampler>> {
    let data = |d: &AnyLtrDataset| dataset(d, js, &format!("{path}.dataset"));
    Ok(match config {
        AnySampler::PairwiseSampler(c) => {
            Box::new(PairwiseSampler::new(&data(&c.dataset)?, rng, shard, path)?)
        }
        AnySampler::PointwiseSampler(c) => {
            Box::new(PointwiseSampler::new(&data(&c.dataset)?, rng, shard, path)?)
        }
        AnySampler::BatchwiseSampler(c) => Box::new(BatchwiseSampler::new(
            &data(&c.dataset)?,
            c.group_size as usize,
            rng,
            shard,
            path,
        )?),
        AnySampler::SlateSampler(c) => slate_sampler(c, js, text, rng, shard, path)?,
        AnySampler::TokenTripletSampler(c) => {
            let triplets = load_triplets(&c.triplets, &format!("{path}.triplets"))?;
            Box::new(TokenTripletSampler::new(triplets, rng, shard, path)?)
        }
        AnySampler::TextTripletSampler(c) => {
            let encoding = text_encoding(text, "TextTripletSampler", path)?;
            let triplets = read_text_triplets(&c.triplets, &format!("{path}.triplets"))?;
            Box::new(TextTripletSampler::new(
                Arc::new(triplets),
                encoding,
                rng,
                shard,
                path,
            )?)
        }
        AnySampler::TextPairSampler(c) => {
            let encoding = text_encoding(text, "TextPairSampler", path)?;
            let pairs = read_text_pairs(&c.pairs, &format!("{path}.pairs"))?;
            Box::new(TextPairSampler::new(pairs, encoding, rng, shard, path)?)
        }
        AnySampler::IdTripletSampler(c) => {
            let encoding = text_encoding(text, "IdTripletSampler", path)?;
            let triplets = Arc::new(IdTriplets::open(c)?);
            Box::new(TextTripletSampler::new(
                triplets, encoding, rng, shard, path,
            )?)
        }
        AnySampler::JsObject(c) => {
            let kind = match c.kind.as_str() {
                "pairwise" | "triplets" => RecordKind::Pairwise,
                "pointwise" => RecordKind::Pointwise,
                other => {
                    return Err(Error::config(
                        format!("{path}.kind"),
                        format!("unknown record kind {other:?} (pairwise, pointwise, triplets)"),
                    ))
                }
            };
            let js = js.clone().ok_or_else(|| no_js(path, &c.class))?;
            Box::new(JsSampler::new(js, &c.key, kind, shard))
        }
    })
}

/// A [`SlateSampler`] over a run to re-rank (texts) or over a dataset of features.
fn slate_sampler(
    c: &SlateSamplerConfig,
    js: &Js,
    text: Option<&TextEncoding>,
    rng: Rng,
    shard: Shard,
    path: &str,
) -> Result<Box<dyn Sampler>> {
    let data_path = format!("{path}.dataset");
    let length = c.slate_length as usize;
    Ok(match (&c.dataset, features_of(&c.dataset)) {
        (AnyRankedDataset::TextRerankingDataset(t), _) => Box::new(SlateSampler::over_texts(
            Arc::new(Reranking::open(t, &data_path)?),
            text_encoding(text, "a SlateSampler over a TextRerankingDataset", path)?,
            length,
            rng,
            shard,
            path,
        )?),
        (_, features) => {
            let features =
                features.ok_or_else(|| Error::config(&data_path, "holds no features"))?;
            let data = dataset(&features, js, &data_path)?;
            Box::new(SlateSampler::new(&data, length, rng, shard, path)?)
        }
    })
}

/// Where samplers get what is not in their own configuration.
#[derive(Clone, Copy)]
struct SamplerSources<'a> {
    /// Datasets and samplers written in TypeScript.
    js: &'a Js,
    /// How the model wants texts encoded, for a text model.
    text: Option<&'a TextEncoding>,
}

fn loss_trainer(
    config: &LossTrainerConfig,
    device: tch::Device,
    sources: SamplerSources,
    shard: Shard,
    seed: u64,
    output: OutputType,
    path: &str,
) -> Result<Box<dyn Trainer>> {
    if config.model.is_some() {
        return Err(Error::config(
            format!("{path}.model"),
            "a trainer-specific model is not supported yet",
        ));
    }
    let rng = Rng::derive(seed, &format!("{path}/sampler"));
    let js = sources.js;
    let sampler = sampler(
        &config.sampler,
        js,
        sources.text,
        rng,
        shard,
        &format!("{path}.sampler"),
    )?;
    let losses = loss_set(&config.hooks, output, sampler.kind(), path)?;
    let batcher_path = format!("{path}.batcher");
    let batcher = Batcher::new(
        &config.batcher,
        config.batch_size as usize,
        memory_probe(device)?,
        &batcher_path,
    )?;
    Ok(Box::new(LossTrainer {
        batcher,
        dims: RecordDims::new(&config.batcher, js, &batcher_path)?,
        // `num_workers` batches are prepared ahead by one producer thread: the batches are the
        // same whatever their number.
        batches: BatchSource::new(
            sampler,
            config.batch_size as usize,
            config.num_workers as usize,
            Staging::for_device(device),
        ),
        losses,
    }))
}

fn trainer(
    config: &AnyTrainer,
    device: tch::Device,
    sources: SamplerSources,
    shard: Shard,
    seed: u64,
    output: OutputType,
    path: &str,
) -> Result<Box<dyn Trainer>> {
    match config {
        AnyTrainer::LossTrainer(t) => loss_trainer(t, device, sources, shard, seed, output, path),
        AnyTrainer::MultipleTrainer(m) => {
            if !m.hooks.is_empty() {
                return Err(unsupported(
                    format!("{path}.hooks[0]"),
                    m.hooks[0].type_id(),
                ));
            }
            let trainers = m
                .trainers
                .iter()
                .map(|(name, t)| {
                    Ok((
                        name.clone(),
                        trainer(
                            t,
                            device,
                            sources,
                            shard,
                            seed,
                            output,
                            &format!("{path}.trainers.{name}"),
                        )?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Box::new(MultipleTrainer { trainers }))
        }
    }
}

/// The trainers' structural hooks (freezer, sharer) with their config paths.
fn structural_hooks<'a>(
    config: &'a AnyTrainer,
    path: &str,
    out: &mut Vec<(String, &'a AnyTrainingHook)>,
) {
    match config {
        AnyTrainer::LossTrainer(t) => {
            for (i, h) in t.hooks.iter().enumerate() {
                out.push((format!("{path}.hooks[{i}]"), h));
            }
        }
        AnyTrainer::MultipleTrainer(m) => {
            for (name, t) in &m.trainers {
                structural_hooks(t, &format!("{path}.trainers.{name}"), out);
            }
        }
    }
}

fn optimizers(config: &LearnerConfig, model: &dyn Model, frozen: &[String]) -> Result<Optimizers> {
    let total_steps = config.max_epochs * config.steps_per_epoch;
    let mut unclaimed: Vec<(String, tch::Tensor)> = Vec::new();
    let mut seen = Vec::new();
    for p in model.named_parameters() {
        // A shared parameter is optimized once, under its first name; frozen ones not at all.
        if frozen.contains(&p.name)
            || seen
                .iter()
                .any(|t: &tch::Tensor| t.data_ptr() == p.tensor.data_ptr())
        {
            continue;
        }
        seen.push(p.tensor.shallow_clone());
        unclaimed.push((p.name, p.tensor));
    }
    let mut entries = Vec::with_capacity(config.optimizers.len());
    for (i, opt) in config.optimizers.iter().enumerate() {
        let path = format!("learner.optimizers[{i}]");
        if opt.module.is_some() {
            return Err(Error::config(
                format!("{path}.module"),
                "optimizing another module than the learner's model is not supported yet",
            ));
        }
        let filter = ParameterFilter::new(&opt.filter, &format!("{path}.filter"))?;
        let (claimed, rest): (Vec<_>, Vec<_>) = unclaimed
            .into_iter()
            .partition(|(name, _)| filter.accepts(name));
        unclaimed = rest;
        if claimed.is_empty() {
            return Err(Error::config(
                format!("{path}.filter"),
                "selects no parameter (earlier optimizers claim first)",
            ));
        }
        let params: Vec<tch::Tensor> = claimed.into_iter().map(|(_, t)| t).collect();
        let optimizer: Box<dyn Optimizer> = match &opt.optimizer {
            AnyOptimizer::Sgd(c) => Box::new(Sgd::new(c.clone(), params)),
            AnyOptimizer::Adam(c) => Box::new(Adam::new(c.clone(), false, params)?),
            AnyOptimizer::AdamW(c) => Box::new(Adam::new(c.clone().into(), true, params)?),
            AnyOptimizer::Adafactor(c) => {
                if c.relative_step && opt.scheduler.is_some() {
                    return Err(Error::config(
                        format!("{path}.scheduler"),
                        "Adafactor with relative_step computes its own step sizes: remove the \
                         scheduler, or give Adafactor an lr and relative_step: false",
                    ));
                }
                Box::new(Adafactor::new(c.clone(), params)?)
            }
        };
        let schedule = opt.scheduler.as_ref().map(|s| schedule(s, total_steps));
        entries.push(ScheduledOptimizer {
            optimizer,
            schedule,
        });
    }
    Ok(Optimizers::new(entries))
}

fn listener(
    config: &AnyLearnerListener,
    i: usize,
    output: OutputType,
    device: tch::Device,
    sources: SamplerSources,
) -> Result<Box<dyn Listener>> {
    let path = format!("learner.listeners[{i}]");
    Ok(match config {
        AnyLearnerListener::RankingValidationListener(c) => {
            Box::new(ranking_listener(c, &path, sources)?)
        }
        AnyLearnerListener::TrainerValidationLoss(c) => {
            Box::new(loss_listener(c, &path, output, device, sources)?)
        }
        AnyLearnerListener::JsObject(c) => Box::new(JsListener {
            key: c.key.clone(),
            id: c.param("id", &path)?,
            last_output: serde_json::Value::Null,
        }),
    })
}

fn validation_schedule(
    warmup: i64,
    validation_interval: u64,
    early_stop: u64,
    info: &Option<String>,
) -> ValidationSchedule {
    ValidationSchedule {
        warmup,
        validation_interval,
        early_stop,
        info: info.as_ref().map(PathBuf::from),
    }
}

fn ranking_listener(
    c: &RankingValidationListenerConfig,
    path: &str,
    sources: SamplerSources,
) -> Result<ValidationListener<RankingValidation>> {
    let data_path = format!("{path}.dataset");
    let (data, input) = match (&c.dataset, features_of(&c.dataset)) {
        (AnyRankedDataset::TextRerankingDataset(t), _) => {
            let set = Arc::new(Reranking::open(t, &data_path)?);
            let encoding = text_encoding(sources.text, "TextRerankingDataset", &data_path)?;
            (set.data.clone(), RankingInput::texts(set, encoding))
        }
        (_, features) => {
            let features =
                features.ok_or_else(|| Error::config(&data_path, "holds no features"))?;
            let data = dataset(&features, sources.js, &data_path)?;
            let input = RankingInput::Features(data.features_tensor()?);
            (data, input)
        }
    };
    let metrics = c
        .metrics
        .keys()
        .map(|name| {
            let metric = RankMetric::parse(name, &format!("{path}.metrics"))?;
            Ok((name.clone(), metric))
        })
        .collect::<Result<Vec<_>>>()?;
    let bestpath = c.bestpath.as_ref().map(PathBuf::from);
    Ok(ValidationListener {
        id: c.id.clone(),
        validator: RankingValidation {
            input,
            data,
            metrics,
        },
        bests: ranking_bests(&c.metrics, bestpath.as_ref()),
        schedule: validation_schedule(c.warmup, c.validation_interval, c.early_stop, &c.info),
    })
}

fn loss_listener(
    c: &TrainerValidationLossConfig,
    path: &str,
    output: OutputType,
    device: tch::Device,
    sources: SamplerSources,
) -> Result<ValidationListener<ValidationLoss>> {
    let data_path = format!("{path}.data");
    let ltr = |d: AnyLtrDataset| -> Result<EvaluationPairs> {
        EvaluationPairs::new(&dataset(&d, sources.js, &data_path)?)
    };
    let data = match &c.data {
        AnySampleIterator::SyntheticLtrDataset(d) => {
            ltr(AnyLtrDataset::SyntheticLtrDataset(d.clone()))?
        }
        AnySampleIterator::LetorDataset(d) => ltr(AnyLtrDataset::LetorDataset(d.clone()))?,
        AnySampleIterator::JsObject(d) => ltr(AnyLtrDataset::JsObject(d.clone()))?,
        AnySampleIterator::InMemoryLtrDataset(d) => {
            ltr(AnyLtrDataset::InMemoryLtrDataset(d.clone()))?
        }
        AnySampleIterator::TextPairFile(_) | AnySampleIterator::TextRerankingDataset(_) => {
            return Err(Error::config(
                data_path,
                "a TrainerValidationLoss scores pairs of a positive and a negative: give it \
                 triplets (a TextTripletFile, a TokenTripletFile) or a dataset of features",
            ))
        }
        AnySampleIterator::TokenTripletFile(d) => EvaluationPairs::Triplets(load_triplets(
            &AnyTokenTriplets::TokenTripletFile(d.clone()),
            &data_path,
        )?),
        AnySampleIterator::SyntheticTokenTriplets(d) => EvaluationPairs::Triplets(load_triplets(
            &AnyTokenTriplets::SyntheticTokenTriplets(d.clone()),
            &data_path,
        )?),
        AnySampleIterator::TextTripletFile(d) => EvaluationPairs::texts(
            Arc::new(read_text_triplets(d, &data_path)?),
            text_encoding(sources.text, "a TextTripletFile", &data_path)?,
        ),
    };
    let trainer_path = format!("{path}.trainer");
    let validator = ValidationLoss {
        data,
        losses: loss_set(
            &c.trainer.hooks,
            output,
            RecordKind::Pairwise,
            &trainer_path,
        )?,
        batching: EvaluationBatching::new(
            &c.batcher,
            c.batch_size as usize,
            memory_probe(device)?,
            &format!("{path}.batcher"),
        )?,
    };
    let model = c
        .bestpath
        .as_ref()
        .map(|p| PathBuf::from(p).join("model.safetensors"));
    let schedule = validation_schedule(c.warmup, c.validation_interval, c.early_stop, &c.info);
    Ok(validator.listener(c.id.clone(), model, schedule))
}

/// A training hook written in TypeScript: the loop asks the JavaScript side to run it.
pub(crate) struct JsHook {
    /// How the JavaScript side finds it.
    pub key: String,
    /// When it runs.
    pub kind: JsHookKind,
}

/// The trainers' hooks written in TypeScript, in declaration order.
///
/// # Errors
/// [`Error::Config`] at a hook whose kind is neither `step` nor `initialization`.
pub(crate) fn js_hooks(config: &LearnerConfig) -> Result<Vec<JsHook>> {
    let mut hooks = Vec::new();
    structural_hooks(&config.trainer, "learner.trainer", &mut hooks);
    hooks
        .into_iter()
        .filter_map(|(path, h)| match h {
            AnyTrainingHook::JsObject(js) => Some((path, js)),
            _ => None,
        })
        .map(|(path, js)| {
            let kind = match js.kind.as_str() {
                "step" => JsHookKind::Step,
                "initialization" => JsHookKind::Initialization,
                other => {
                    return Err(Error::config(
                        format!("{path}.kind"),
                        format!(
                            "{} is a hook of kind {other:?}: step or initialization",
                            js.class
                        ),
                    ))
                }
            };
            Ok(JsHook {
                key: js.key.clone(),
                kind,
            })
        })
        .collect()
}

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

    let mut hooks = Vec::new();
    structural_hooks(&config.trainer, "learner.trainer", &mut hooks);
    let frozen = apply_structural_hooks(&hooks, &config.model, model.as_mut())?;
    for p in model.named_parameters() {
        if frozen.contains(&p.name) {
            let _ = p.tensor.set_requires_grad(false);
        }
    }
    let model: Box<dyn Model> = Box::new(PlacedModel::new(model, runtime.clone())?);

    let output = model.output_type();
    let text = models::hf::text_encoding(&config.model, "learner.model")?;
    let sources = SamplerSources {
        js,
        text: text.as_ref(),
    };
    let trainer = trainer(
        &config.trainer,
        runtime.device,
        sources,
        shard,
        seed,
        output,
        "learner.trainer",
    )?;
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
