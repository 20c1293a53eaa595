//! The optimizers of a run, each over the parameters its filter claims.

use crate::config::{AnyOptimizer, LearnerConfig, ParameterOptimizerConfig};
use crate::models::Model;
use crate::optim::{
    schedule, Adafactor, Adam, Optimizer, Optimizers, ParameterFilter, ScheduledOptimizer, Sgd,
};
use crate::{Error, Result};

/// The parameters of `model` the optimizers may claim, by name: a shared parameter once, under
/// its first name, and the `frozen` ones not at all.
fn trainable_parameters(model: &dyn Model, frozen: &[String]) -> Vec<(String, tch::Tensor)> {
    let mut trainable: Vec<(String, tch::Tensor)> = Vec::new();
    for p in model.named_parameters() {
        let shared = trainable
            .iter()
            .any(|(_, t)| t.data_ptr() == p.tensor.data_ptr());
        if !frozen.contains(&p.name) && !shared {
            trainable.push((p.name, p.tensor));
        }
    }
    trainable
}

/// The optimizer `config` describes at `path`, over `params`, scheduled over `total_steps`.
fn optimizer(
    config: &ParameterOptimizerConfig,
    params: Vec<tch::Tensor>,
    total_steps: u64,
    path: &str,
) -> Result<ScheduledOptimizer> {
    let optimizer: Box<dyn Optimizer> = match &config.optimizer {
        AnyOptimizer::Sgd(c) => Box::new(Sgd::new(c.clone(), params)),
        AnyOptimizer::Adam(c) => Box::new(Adam::new(c.clone(), false, params)?),
        AnyOptimizer::AdamW(c) => Box::new(Adam::new(c.clone().into(), true, params)?),
        AnyOptimizer::Adafactor(c) => {
            if c.relative_step && config.scheduler.is_some() {
                return Err(Error::config(
                    format!("{path}.scheduler"),
                    "Adafactor with relative_step computes its own step sizes: remove the \
                     scheduler, or give Adafactor an lr and relative_step: false",
                ));
            }
            Box::new(Adafactor::new(c.clone(), params)?)
        }
    };
    Ok(ScheduledOptimizer {
        optimizer,
        schedule: config.scheduler.as_ref().map(|s| schedule(s, total_steps)),
    })
}

/// The optimizers of `config` over the parameters of `model` but the `frozen` ones, each over
/// the parameters its filter selects among those the optimizers before it left.
///
/// # Errors
/// [`Error::Config`] at an optimizer of another module, or whose filter selects nothing, or
/// whose settings contradict each other.
pub(super) fn optimizers(
    config: &LearnerConfig,
    model: &dyn Model,
    frozen: &[String],
) -> Result<Optimizers> {
    let total_steps = config.max_epochs * config.steps_per_epoch;
    let mut unclaimed = trainable_parameters(model, frozen);
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
        let params = claimed.into_iter().map(|(_, t)| t).collect();
        entries.push(optimizer(opt, params, total_steps, &path)?);
    }
    Ok(Optimizers::new(entries))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::parse_learner;
    use crate::config::tests_support::demo_config_json;
    use crate::models;
    use crate::rng::Rng;

    /// The demo learner with `optimizers` (JSON), and an MLP with two 8 × 8 layers to share.
    fn learner(optimizers: serde_json::Value) -> (LearnerConfig, Box<dyn Model>) {
        let mut config = parse_learner(&demo_config_json()).unwrap();
        config.model = serde_json::from_value(json!({
            "__xpmtype__": "xpm_torch.models.MlpScorer", "input_dim": 8, "hidden_dims": [8, 8]
        }))
        .unwrap();
        config.optimizers = serde_json::from_value(optimizers).unwrap();
        let model = models::build(&config.model, &mut Rng::derive(0, "test"), "m").unwrap();
        (config, model)
    }

    fn optimizer_of(filter: serde_json::Value, optimizer: serde_json::Value) -> serde_json::Value {
        json!({
            "__xpmtype__": "xpm_torch.optim.ParameterOptimizer",
            "optimizer": optimizer,
            "filter": filter,
        })
    }

    fn sgd() -> serde_json::Value {
        json!({ "__xpmtype__": "xpm_torch.optim.SGD", "lr": 0.1 })
    }

    fn all() -> serde_json::Value {
        json!({ "__xpmtype__": "xpm_torch.optim.ParameterFilter" })
    }

    fn trainable_names(model: &dyn Model, frozen: &[String]) -> Vec<String> {
        trainable_parameters(model, frozen)
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// Why the optimizers `optimizers` (JSON) of the demo learner are refused.
    fn refusal(optimizers_json: serde_json::Value) -> String {
        let (config, model) = learner(optimizers_json);
        match optimizers(&config, model.as_ref(), &[]) {
            Ok(_) => panic!("the optimizers were built"),
            Err(e) => e.to_string(),
        }
    }

    /// Two parameters of `model` of one shape: a target and the source it may share.
    fn shareable(model: &dyn Model) -> (String, String) {
        let params = model.named_parameters();
        params
            .iter()
            .enumerate()
            .find_map(|(i, a)| {
                let b = params[i + 1..]
                    .iter()
                    .find(|b| b.tensor.size() == a.tensor.size())?;
                Some((b.name.clone(), a.name.clone()))
            })
            .unwrap()
    }

    #[test]
    fn a_shared_parameter_is_trainable_once_and_a_frozen_one_not_at_all() {
        let (_, mut model) = learner(json!([]));
        let all = trainable_names(model.as_ref(), &[]);
        assert_eq!(all.len(), model.named_parameters().len());
        let (target, source) = shareable(model.as_ref());
        model.share(&target, &source).unwrap();
        let frozen = vec![all[all.len() - 1].clone()];
        let trainable = trainable_names(model.as_ref(), &frozen);
        let expected: Vec<String> = all
            .iter()
            .filter(|name| **name != target && !frozen.contains(name))
            .cloned()
            .collect();
        assert_eq!(trainable, expected);
    }

    #[test]
    fn each_optimizer_claims_what_its_filter_selects_among_what_is_left() {
        let (config, model) = learner(json!([optimizer_of(all(), sgd())]));
        let built = optimizers(&config, model.as_ref(), &[]).unwrap();
        assert_eq!(built.learning_rates(), [0.1]);
        let err = refusal(json!([
            optimizer_of(all(), sgd()),
            optimizer_of(all(), sgd())
        ]));
        assert!(
            err.starts_with("learner.optimizers[1].filter: selects no parameter"),
            "{err}"
        );
    }

    #[test]
    fn contradicting_settings_are_refused_at_their_path() {
        let adafactor = json!({
            "__xpmtype__": "xpm_torch.optim.Adafactor", "relative_step": true, "eps": [1e-30, 1e-3]
        });
        let mut scheduled = optimizer_of(all(), adafactor);
        scheduled["scheduler"] = json!({
            "__xpmtype__": "xpm_torch.schedulers.LinearWithWarmup", "num_warmup_steps": 2
        });
        let err = refusal(json!([scheduled]));
        assert!(
            err.starts_with("learner.optimizers[0].scheduler: Adafactor with relative_step"),
            "{err}"
        );
    }
}
