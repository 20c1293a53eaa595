//! [`MultipleModel`]: several named models trained together, the `scorer` entry scoring, every
//! parameter named `<entry>.<parameter>` so that optimizers, freezing and saving select by prefix.

use tch::Tensor;

use super::{build, Model, NamedParameter, OutputType};
use crate::config::MultipleModelConfig;
use crate::data::ScoreInput;
use crate::rng::Rng;
use crate::{Error, Result};

/// Several named models trained together (`xpm_torch.module.MultipleModel`): the entry named
/// `scorer` scores; every entry's parameters are the model's, named `<entry>.<parameter>`, so
/// optimizers, freezing and saving select them by prefix (e.g. the regex `^teacher\.`).
///
/// The learner's loop scores with one model, so the other entries receive gradients only where
/// their parameters are shared with the scorer; they are saved, loaded and frozen with it (a
/// frozen teacher, an encoder trained in an earlier stage, a head kept for a later one).
pub struct MultipleModel {
    entries: Vec<(String, Box<dyn Model>)>,
    scorer: usize,
}

impl std::fmt::Debug for MultipleModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("MultipleModel")
            .field("models", &names)
            .field("scorer", &names[self.scorer])
            .finish()
    }
}

impl MultipleModel {
    /// Builds each entry in name order, each from its own stream of `rng` (so adding an entry
    /// leaves the others' initialisation unchanged); `path` names the config in errors.
    ///
    /// # Errors
    /// [`Error::Config`] when there is no entry, a name is empty or holds a `.`, or `scorer`
    /// names no entry; any error building an entry.
    pub fn new(config: &MultipleModelConfig, rng: &mut Rng, path: &str) -> Result<Self> {
        config.check(path)?;
        let seed = rng.next_u64();
        let mut entries = Vec::new();
        for (name, model) in &config.models {
            let built = build(
                model,
                &mut Rng::derive(seed, name),
                &format!("{path}.models.{name}"),
            )?;
            entries.push((name.clone(), built));
        }
        let scorer = entries
            .iter()
            .position(|(name, _)| *name == config.scorer)
            .unwrap_or_default();
        Ok(MultipleModel { entries, scorer })
    }

    /// The entry and the parameter name within it, for `<entry>.<parameter>`.
    fn locate(&self, name: &str) -> Result<(usize, String)> {
        let found = name.split_once('.').and_then(|(entry, rest)| {
            self.entries
                .iter()
                .position(|(n, _)| n == entry)
                .map(|i| (i, rest.to_string()))
        });
        found.ok_or_else(|| {
            let names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
            Error::config(
                name,
                format!("MultipleModel has no parameter {name:?}: its names start with one of {names:?} and a \".\""),
            )
        })
    }
}

impl Model for MultipleModel {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        self.entries[self.scorer].1.forward(input)
    }

    fn output_type(&self) -> OutputType {
        self.entries[self.scorer].1.output_type()
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.entries
            .iter()
            .flat_map(|(entry, model)| {
                model
                    .named_parameters()
                    .into_iter()
                    .map(move |p| NamedParameter {
                        name: format!("{entry}.{}", p.name),
                        tensor: p.tensor,
                    })
            })
            .collect()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        let (to, target_name) = self.locate(target)?;
        let (from, source_name) = self.locate(source)?;
        if to != from {
            return Err(Error::config(
                target,
                format!(
                    "cannot share {source} with {target}: MultipleModel shares parameters within one of its models only"
                ),
            ));
        }
        self.entries[to].1.share(&target_name, &source_name)
    }

    fn set_training(&mut self, training: bool) {
        for (_, model) in &mut self.entries {
            model.set_training(training);
        }
    }

    fn inference_mode_safe(&self) -> bool {
        self.entries.iter().all(|(_, m)| m.inference_mode_safe())
    }

    fn new_weights(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|(entry, model)| {
                model
                    .new_weights()
                    .into_iter()
                    .map(move |name| format!("{entry}.{name}"))
            })
            .collect()
    }
}
