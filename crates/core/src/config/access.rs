//! What the core reads from configurations beyond their fields: a listener's id, the loss
//! trainers of a tree of trainers and their hooks, the part of a model's parameters a sub-model
//! owns, a dims provider's probe points, formula terms.

use super::*;
use crate::Result;

impl AnyLearnerListener {
    /// The listener's unique id.
    pub fn id(&self) -> &str {
        match self {
            AnyLearnerListener::RankingValidationListener(c) => &c.id,
            AnyLearnerListener::JsObject(c) => c
                .params
                .get("id")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(&c.key),
            AnyLearnerListener::TrainerValidationLoss(c) => &c.id,
        }
    }
}

impl AnyTrainer {
    /// The loss trainers of this tree of trainers, each with its configuration path (this
    /// trainer's is `path`), in the order they train: the one walk of the tree for what the core
    /// reads of every trainer (hooks, batchers).
    pub fn loss_trainers(&self, path: &str) -> Vec<(String, &LossTrainerConfig)> {
        match self {
            AnyTrainer::LossTrainer(t) => vec![(path.to_string(), t)],
            AnyTrainer::MultipleTrainer(m) => m
                .trainers
                .iter()
                .flat_map(|(name, t)| t.loss_trainers(&format!("{path}.trainers.{name}")))
                .collect(),
        }
    }

    /// The training hooks of this tree's loss trainers, each with its configuration path, in
    /// declaration order.
    pub fn training_hooks(&self, path: &str) -> Vec<(String, &AnyTrainingHook)> {
        self.loss_trainers(path)
            .into_iter()
            .flat_map(|(path, t)| {
                t.hooks
                    .iter()
                    .enumerate()
                    .map(move |(i, hook)| (format!("{path}.hooks[{i}]"), hook))
            })
            .collect()
    }
}

impl AnyModule {
    /// The prefix of this model's parameter names that `part` owns when `part` is this model
    /// (`""`), the model a SigmoidOutput wraps (`""`: it keeps the names) or an entry of a
    /// MultipleModel (`"<name>."`); `None` when `part` is none of them.
    pub fn prefix_of(&self, part: &AnyModule) -> Option<String> {
        if self == part {
            return Some(String::new());
        }
        match self {
            AnyModule::SigmoidOutput(c) => c.model.prefix_of(part),
            AnyModule::MultipleModel(c) => c.models.iter().find_map(|(name, entry)| {
                entry.prefix_of(part).map(|inner| format!("{name}.{inner}"))
            }),
            _ => None,
        }
    }
}

impl AnyBatchDimsProvider {
    /// The points at which memory is probed; `path` is where the provider sits.
    ///
    /// # Errors
    /// [`Error::Config`] when a provider written in TypeScript has malformed `probe_dims`.
    pub fn probe_dims(&self, path: &str) -> Result<Vec<Typed<ProbePointConfig>>> {
        match self {
            AnyBatchDimsProvider::BatchDimsProvider(c) => Ok(c.probe_dims.clone()),
            AnyBatchDimsProvider::JsObject(c) => c.param("probe_dims", path),
        }
    }
}

impl FormulaTerm {
    /// `coefficient × Π variable^power`, e.g. `of("a", &[("bs", 1), ("l", 2)])` for `a*bs*l**2`.
    pub fn of(coefficient: &str, powers: &[(&str, u32)]) -> Self {
        FormulaTerm {
            coefficient: Some(coefficient.to_string()),
            ..FormulaTerm::known(1.0, powers)
        }
    }

    /// The coefficient-free `factor × Π variable^power`.
    pub fn known(factor: f64, powers: &[(&str, u32)]) -> Self {
        FormulaTerm {
            coefficient: None,
            factor,
            powers: powers
                .iter()
                .map(|(v, p)| (v.to_string(), u64::from(*p)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests_support::demo_config_json;

    /// A MultipleTrainer of `names`, each the demo's LossTrainer, inside one named `outer`.
    fn nested() -> AnyTrainer {
        let config = parse_learner(&demo_config_json()).unwrap();
        let multiple = |trainers: Vec<(&str, AnyTrainer)>| {
            AnyTrainer::MultipleTrainer(MultipleTrainerConfig {
                hooks: Vec::new(),
                model: None,
                trainers: trainers
                    .into_iter()
                    .map(|(name, t)| (name.to_string(), t))
                    .collect(),
            })
        };
        let inner = multiple(vec![
            ("b", config.trainer.clone()),
            ("a", config.trainer.clone()),
        ]);
        multiple(vec![("outer", inner), ("first", config.trainer)])
    }

    #[test]
    fn the_loss_trainers_of_a_tree_are_found_with_their_paths() {
        let paths: Vec<String> = nested()
            .loss_trainers("learner.trainer")
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert_eq!(
            paths,
            [
                "learner.trainer.trainers.first",
                "learner.trainer.trainers.outer.trainers.a",
                "learner.trainer.trainers.outer.trainers.b",
            ]
        );
    }

    #[test]
    fn the_training_hooks_of_a_tree_are_found_with_their_paths() {
        let trainer = nested();
        let hooks = trainer.training_hooks("t");
        let paths: Vec<&str> = hooks.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "t.trainers.first.hooks[0]",
                "t.trainers.outer.trainers.a.hooks[0]",
                "t.trainers.outer.trainers.b.hooks[0]"
            ]
        );
        assert!(hooks
            .iter()
            .all(|(_, hook)| matches!(hook, AnyTrainingHook::HingeLoss(_))));
    }
}
