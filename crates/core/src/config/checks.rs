//! The cross-field rules the core checks on configurations that reach it without going through
//! the TypeScript classes (Rust tests, hand-written documents). The TypeScript classes declare the
//! same rules with the same messages; value rules of single fields come from the schema
//! (`rules.rs`).

use super::rules::shown;
use super::*;
use crate::{Error, Result};

impl AnyConfig {
    /// The cross-field rules the core checks on this class (see [`LearnerConfig::validate`]).
    pub(crate) fn validate(&self, path: &str) -> crate::Result<()> {
        let model = |m: AnyModule| m.validate(path);
        match self {
            AnyConfig::Learner(c) => c.validate(path),
            AnyConfig::Adafactor(c) => c.validate(path),
            AnyConfig::TransformerCrossEncoder(c) => {
                model(AnyModule::TransformerCrossEncoder(c.clone()))
            }
            AnyConfig::MultipleModel(c) => model(AnyModule::MultipleModel(c.clone())),
            AnyConfig::SigmoidOutput(c) => model(AnyModule::SigmoidOutput(c.clone())),
            AnyConfig::SyntheticTokenTriplets(c) => c.validate(path),
            _ => Ok(()),
        }
    }
}

impl LearnerConfig {
    /// The cross-field rules the core needs to run (declared in TypeScript too, with the same
    /// messages: the value rules of single fields come from the schema, see `rules.rs`).
    ///
    /// # Errors
    /// [`Error::Config`] naming the offending path.
    pub fn validate(&self, path: &str) -> Result<()> {
        if self.optimizers.is_empty() {
            return Err(Error::config(
                format!("{path}.optimizers"),
                "at least one optimizer is needed",
            ));
        }
        let mut seen = std::collections::HashMap::new();
        for (i, listener) in self.listeners.iter().enumerate() {
            if let Some(first) = seen.get(listener.id()) {
                return Err(Error::config(
                    format!("{path}.listeners[{i}].id"),
                    format!(
                        "{} is already the id of listeners[{first}]",
                        shown(listener.id())
                    ),
                ));
            }
            seen.insert(listener.id(), i);
        }
        self.model.validate(&format!("{path}.model"))?;
        for (i, opt) in self.optimizers.iter().enumerate() {
            opt.optimizer
                .validate(&format!("{path}.optimizers[{i}].optimizer"))?;
        }
        Ok(())
    }
}

impl AnyModule {
    /// The cross-field rules of the models (declared in TypeScript too, with the same messages;
    /// the value rules of single fields come from the schema, see `rules.rs`).
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match self {
            AnyModule::TransformerCrossEncoder(c) => {
                if c.heads > 0 && c.dim % c.heads != 0 {
                    return Err(Error::config(
                        format!("{path}.heads"),
                        format!("must divide dim ({})", c.dim),
                    ));
                }
                Ok(())
            }
            AnyModule::SigmoidOutput(c) => c.model.validate(&format!("{path}.model")),
            AnyModule::MultipleModel(c) => {
                c.check(path)?;
                c.models
                    .iter()
                    .try_for_each(|(name, m)| m.validate(&format!("{path}.models.{name}")))
            }
            _ => Ok(()),
        }
    }
}

impl MultipleModelConfig {
    /// Checks the names: at least one model, none empty or holding a `.`, `scorer` among them.
    pub(crate) fn check(&self, path: &str) -> Result<()> {
        if self.models.is_empty() {
            return Err(Error::config(
                format!("{path}.models"),
                "needs at least one model",
            ));
        }
        if let Some(bad) = self.models.keys().find(|n| n.is_empty() || n.contains('.')) {
            return Err(Error::config(
                format!("{path}.models"),
                format!("{} cannot name a model: names are non-empty and hold no \".\" (parameters are named <model>.<parameter>)", shown(bad)),
            ));
        }
        if !self.models.contains_key(&self.scorer) {
            // In order, as the TypeScript message sorts them: the map is ordered.
            let names: Vec<&String> = self.models.keys().collect();
            return Err(Error::config(
                format!("{path}.scorer"),
                format!(
                    "{} is not one of the models {}",
                    shown(&self.scorer),
                    shown(names)
                ),
            ));
        }
        Ok(())
    }
}

impl AnyOptimizer {
    /// The cross-field rules of the optimizers (declared in TypeScript too, with the same
    /// messages; the value rules of single fields come from the schema, see `rules.rs`).
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match self {
            AnyOptimizer::Adafactor(c) => c.validate(path),
            _ => Ok(()),
        }
    }
}

impl AdafactorConfig {
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match (self.lr, self.relative_step) {
            (Some(_), true) => {
                return Err(Error::config(
                    format!("{path}.lr"),
                    "cannot be combined with relative_step: true; set relative_step: false to use a fixed lr",
                ))
            }
            (None, false) => {
                return Err(Error::config(
                    format!("{path}.lr"),
                    "is needed when relative_step is false",
                ))
            }
            _ => {}
        }
        if self.warmup_init && !self.relative_step {
            return Err(Error::config(
                format!("{path}.warmup_init"),
                "needs relative_step: true",
            ));
        }
        Ok(())
    }
}

impl SyntheticTokenTripletsConfig {
    /// The cross-field rules of the sizes (declared in TypeScript too, with the same messages).
    pub(crate) fn validate(&self, path: &str) -> crate::Result<()> {
        let field = |name: &str, message: &str| {
            Err(crate::Error::config(format!("{path}.{name}"), message))
        };
        if self.query_length * 4 > self.vocab_size {
            return field("query_length", "must be at most vocab_size / 4");
        }
        if self.min_length < self.query_length {
            return field("min_length", "must be at least query_length");
        }
        if self.max_length < self.min_length {
            return field("max_length", "must be at least min_length");
        }
        Ok(())
    }
}
