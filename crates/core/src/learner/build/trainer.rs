//! The trainers of a run with their losses, and the trainers' hooks written in TypeScript.

use super::data::{sampler, DataSources};
use crate::batching::Batcher;
use crate::config::{
    AnyTrainer, AnyTrainingHook, JsTrainingHookKind, LearnerConfig, LossTrainerConfig,
};
use crate::data::{BatchSource, RecordKind, Shard, Staging};
use crate::learner::trainers::{memory_probe, LossTrainer, MultipleTrainer, RecordDims, Trainer};
use crate::losses::batchwise::{
    CrossEntropyLoss as BatchwiseCrossEntropyLoss, SoftmaxCrossEntropy,
};
use crate::losses::listwise::listwise_loss;
use crate::losses::{AnyLoss, LossSet};
use crate::losses::{CrossEntropyLoss, HingeLoss, PointwiseCrossEntropyLoss};
use crate::models::OutputType;
use crate::rng::Rng;
use crate::{Error, Result};

/// A configuration this core can read but not run yet.
fn unsupported(path: impl Into<String>, type_id: &str) -> Error {
    Error::config(
        path,
        format!("{type_id} is not supported by this version of the xpm-torch core"),
    )
}

/// The losses among `hooks`, for a model whose scores are `output` and records of `records`.
pub(super) fn loss_set(
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

/// What the trainers of a run are built with beside their configuration.
#[derive(Clone, Copy)]
pub(super) struct TrainerInputs<'a> {
    /// Where they train.
    pub device: tch::Device,
    /// Where their samplers' data comes from.
    pub sources: DataSources<'a>,
    /// The part of the data this process samples.
    pub shard: Shard,
    /// The seed their samplers derive their streams from.
    pub seed: u64,
    /// What the model's scores are, which the losses read accordingly.
    pub output: OutputType,
}

fn loss_trainer(
    config: &LossTrainerConfig,
    inputs: TrainerInputs,
    path: &str,
) -> Result<Box<dyn Trainer>> {
    let TrainerInputs {
        device,
        sources,
        shard,
        seed,
        output,
    } = inputs;
    if config.model.is_some() {
        return Err(Error::config(
            format!("{path}.model"),
            "a trainer-specific model is not supported yet",
        ));
    }
    let rng = Rng::derive(seed, &format!("{path}/sampler"));
    let sampler_path = format!("{path}.sampler");
    let sampler = sampler(&config.sampler, sources, rng, shard, &sampler_path)?;
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
        dims: RecordDims::new(&config.batcher, sources.js, &batcher_path)?,
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

/// The trainer `config` describes at `path`.
pub(super) fn trainer(
    config: &AnyTrainer,
    inputs: TrainerInputs,
    path: &str,
) -> Result<Box<dyn Trainer>> {
    match config {
        AnyTrainer::LossTrainer(t) => loss_trainer(t, inputs, path),
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
                        trainer(t, inputs, &format!("{path}.trainers.{name}"))?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Box::new(MultipleTrainer { trainers }))
        }
    }
}

/// A training hook written in TypeScript: the loop asks the JavaScript side to run it.
pub(crate) struct JsHook {
    /// How the JavaScript side finds it.
    pub key: String,
    /// When it runs.
    pub kind: JsTrainingHookKind,
}

/// The trainers' hooks written in TypeScript, in declaration order.
///
/// # Errors
/// [`Error::Config`] at a hook whose kind is neither `step` nor `initialization`.
pub(crate) fn js_hooks(config: &LearnerConfig) -> Result<Vec<JsHook>> {
    config
        .trainer
        .training_hooks("learner.trainer")
        .into_iter()
        .filter_map(|(path, hook)| match hook {
            AnyTrainingHook::JsObject(js) => Some((path, js)),
            _ => None,
        })
        .map(|(path, js)| {
            Ok(JsHook {
                key: js.key.clone(),
                kind: js.declared_kind(&path)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::config::tests_support::demo_config_json;
    use crate::config::{parse_learner, JsObjectConfig, MultipleTrainerConfig};

    fn js_hook(name: &str, kind: &str) -> AnyTrainingHook {
        AnyTrainingHook::JsObject(JsObjectConfig {
            key: format!("0:{name}"),
            class: name.into(),
            kind: kind.into(),
            params: serde_json::Map::new(),
        })
    }

    fn hinge() -> AnyTrainingHook {
        serde_json::from_value(json!({
            "__xpmtype__": "xpm_torch.losses.pairwise.HingeLoss", "weight": 1.0, "margin": 1.0
        }))
        .unwrap()
    }

    /// The demo learner, its trainer a MultipleTrainer of two copies of the demo's trainer, the
    /// hooks of each extended by `extra`.
    fn two_trainers(extra: impl Fn(&str) -> Vec<AnyTrainingHook>) -> LearnerConfig {
        let mut config = parse_learner(&demo_config_json()).unwrap();
        let AnyTrainer::LossTrainer(loss) = &config.trainer else {
            panic!("the demo trains with a LossTrainer");
        };
        let trainers = ["a", "b"].map(|name| {
            let mut t = loss.clone();
            t.hooks.extend(extra(name));
            (name.to_string(), AnyTrainer::LossTrainer(t))
        });
        config.trainer = AnyTrainer::MultipleTrainer(MultipleTrainerConfig {
            hooks: Vec::new(),
            model: None,
            trainers: BTreeMap::from(trainers),
        });
        config
    }

    fn demo_trainer(config: &AnyTrainer) -> Result<Box<dyn Trainer>> {
        let inputs = TrainerInputs {
            device: tch::Device::Cpu,
            sources: DataSources {
                js: &None,
                text: None,
            },
            shard: Shard::WHOLE,
            seed: 5,
            output: OutputType::Real,
        };
        trainer(config, inputs, "t")
    }

    #[test]
    fn the_hooks_written_in_typescript_are_read_in_order_with_their_kind() {
        let config = two_trainers(|name| {
            let kind = if name == "a" {
                "initialization"
            } else {
                "step"
            };
            vec![js_hook(&format!("t.{name}"), kind)]
        });
        let hooks = js_hooks(&config).unwrap();
        let read: Vec<(&str, JsTrainingHookKind)> =
            hooks.iter().map(|h| (h.key.as_str(), h.kind)).collect();
        assert_eq!(
            read,
            [
                ("0:t.a", JsTrainingHookKind::Initialization),
                ("0:t.b", JsTrainingHookKind::Step)
            ]
        );
        let config = two_trainers(|name| vec![js_hook(name, "listener")]);
        let err = js_hooks(&config).err().unwrap().to_string();
        assert!(
            err.starts_with("learner.trainer.trainers.a.hooks[1].kind: the kind of a:"),
            "{err}"
        );
    }

    /// The losses among `hooks` of a trainer at `t` of pairs scored by real numbers.
    fn losses(hooks: &[AnyTrainingHook]) -> Result<LossSet> {
        loss_set(hooks, OutputType::Real, RecordKind::Pairwise, "t")
    }

    #[test]
    fn only_losses_enter_the_loss_set() {
        let set = losses(&[js_hook("t.Step", "step"), hinge()]).unwrap();
        assert_eq!(set.total_name, "pair-hinge");
        let err = losses(&[js_hook("t.Step", "step")])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("t.hooks: a LossTrainer needs at least one loss"),
            "{err}"
        );
        let batchwise: AnyTrainingHook = serde_json::from_value(json!({
            "__xpmtype__": "xpm_torch.losses.batchwise.CrossEntropyLoss", "weight": 1.0
        }))
        .unwrap();
        let err = losses(&[hinge(), batchwise]).err().unwrap().to_string();
        assert!(
            err.starts_with("t.hooks[1]: the batchwise CrossEntropyLoss"),
            "{err}"
        );
    }

    #[test]
    fn a_tree_of_trainers_is_built_or_refused_where_it_is_not_supported() {
        let config = two_trainers(|_| Vec::new());
        assert!(demo_trainer(&config.trainer).is_ok());
        let AnyTrainer::MultipleTrainer(mut multiple) = config.trainer else {
            panic!("two_trainers makes a MultipleTrainer");
        };
        multiple.hooks.push(hinge());
        let err = demo_trainer(&AnyTrainer::MultipleTrainer(multiple.clone()))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("t.hooks[0]: xpm_torch.losses.pairwise.HingeLoss is not supported"),
            "{err}"
        );
        let AnyTrainer::LossTrainer(mut loss) = multiple.trainers["a"].clone() else {
            panic!("two_trainers holds LossTrainers");
        };
        loss.model = Some(parse_learner(&demo_config_json()).unwrap().model);
        let err = demo_trainer(&AnyTrainer::LossTrainer(loss))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("t.model: a trainer-specific model"),
            "{err}"
        );
    }
}
