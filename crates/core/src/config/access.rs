//! What the core reads from configurations beyond their fields: a listener's id, the part of a
//! model's parameters a sub-model owns, a dims provider's probe points, formula terms.

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
