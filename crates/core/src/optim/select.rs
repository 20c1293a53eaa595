//! Which parameters an optimizer takes: [`ParameterFilter`] and [`ParameterSelector`], the
//! counterparts of Python's filters and parameter iterators, by name relative to their model.

use regex::Regex;

use crate::config::{AnyModule, AnyParameterFilter, AnyParametersIterator};
use crate::{Error, Result};

fn compile(pattern: &str, path: &str) -> Result<Regex> {
    Regex::new(pattern)
        .map_err(|e| Error::config(path, format!("invalid regular expression {pattern:?}: {e}")))
}

/// Decides which parameters an optimizer claims (`ParameterFilter`, `RegexParameterFilter`).
#[derive(Debug)]
pub enum ParameterFilter {
    /// Every parameter.
    All,
    /// Regular expressions searched in the name.
    Regex {
        /// Accept a name matching any of these.
        includes: Option<Vec<Regex>>,
        /// Reject a name matching any of these.
        excludes: Option<Vec<Regex>>,
    },
}

impl ParameterFilter {
    /// Builds a filter; `path` names the configuration in errors.
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid regular expression.
    pub fn new(config: &AnyParameterFilter, path: &str) -> Result<Self> {
        let compile_all =
            |patterns: &Option<Vec<String>>, field: &str| -> Result<Option<Vec<Regex>>> {
                patterns
                    .as_ref()
                    .map(|ps| {
                        ps.iter()
                            .enumerate()
                            .map(|(i, p)| compile(p, &format!("{path}.{field}[{i}]")))
                            .collect()
                    })
                    .transpose()
            };
        Ok(match config {
            AnyParameterFilter::ParameterFilter(_) => ParameterFilter::All,
            AnyParameterFilter::RegexParameterFilter(c) => ParameterFilter::Regex {
                includes: compile_all(&c.includes, "includes")?,
                excludes: compile_all(&c.excludes, "excludes")?,
            },
        })
    }

    /// Whether the parameter named `name` is accepted: an include match accepts; otherwise a
    /// name is rejected when only includes are set or when an exclude matches.
    pub fn accepts(&self, name: &str) -> bool {
        match self {
            ParameterFilter::All => true,
            ParameterFilter::Regex { includes, excludes } => {
                if includes
                    .as_ref()
                    .is_some_and(|rs| rs.iter().any(|r| r.is_match(name)))
                {
                    return true;
                }
                match excludes {
                    None => includes.is_none(),
                    Some(rs) => !rs.iter().any(|r| r.is_match(name)),
                }
            }
        }
    }
}

/// The prefix of the learner's parameter names that `model` owns: `""` for the learner's model,
/// `"<name>."` for an entry of its MultipleModel.
fn scope_of(model: &AnyModule, learner_model: &AnyModule, path: &str) -> Result<String> {
    learner_model.prefix_of(model).ok_or_else(|| {
        Error::config(
            format!("{path}.model"),
            "is neither the learner's model nor one of the entries of its MultipleModel: \
             give the selector the model being trained",
        )
    })
}

/// Selects parameters of the learner's model by name (`RegexParametersIterator`,
/// `InverseParametersIterator`, `SubParametersIterator`). Each selector covers the parameters of
/// its `model`, whose names it sees relative to that model, as Python does.
#[derive(Debug)]
pub enum ParameterSelector {
    /// Selected when `regex` is found in the relative name and `negative` is not
    /// (Python's `re.search`; an empty pattern is no condition).
    Regex {
        /// The prefix of the names of the selector's model.
        scope: String,
        /// What selects.
        regex: Option<Regex>,
        /// What deselects.
        negative: Option<Regex>,
    },
    /// The complement of another selector, over the parameters it covers.
    Inverse(Box<ParameterSelector>),
    /// Another selector's choice over a part of `scope`, `default` elsewhere in it.
    Sub {
        /// The prefix of the names of the selector's model.
        scope: String,
        /// The selector over a part of the model.
        inner: Box<ParameterSelector>,
        /// The choice for parameters outside the part.
        default: bool,
    },
}

impl ParameterSelector {
    /// Builds a selector over the parameters of `learner_model`; `path` names the configuration
    /// in errors.
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid regular expression, or a `model` that is not the
    /// learner's model (or a part of it).
    pub fn new(
        config: &AnyParametersIterator,
        learner_model: &AnyModule,
        path: &str,
    ) -> Result<Self> {
        let optional = |pattern: &str, field: &str| {
            (!pattern.is_empty())
                .then(|| compile(pattern, &format!("{path}.{field}")))
                .transpose()
        };
        Ok(match config {
            AnyParametersIterator::RegexParametersIterator(c) => ParameterSelector::Regex {
                scope: scope_of(&c.model, learner_model, path)?,
                regex: optional(&c.regex, "regex")?,
                negative: optional(&c.negative_regex, "negative_regex")?,
            },
            AnyParametersIterator::InverseParametersIterator(c) => {
                ParameterSelector::Inverse(Box::new(ParameterSelector::new(
                    &c.iterator,
                    learner_model,
                    &format!("{path}.iterator"),
                )?))
            }
            AnyParametersIterator::SubParametersIterator(c) => {
                let scope = scope_of(&c.model, learner_model, path)?;
                let inner_path = format!("{path}.iterator");
                let inner = ParameterSelector::new(&c.iterator, learner_model, &inner_path)?;
                if !inner.scope().starts_with(&scope) {
                    return Err(Error::config(
                        format!("{inner_path}.model"),
                        format!("is not a part of {path}.model"),
                    ));
                }
                ParameterSelector::Sub {
                    scope,
                    inner: Box::new(inner),
                    default: c.default,
                }
            }
        })
    }

    fn scope(&self) -> &str {
        match self {
            ParameterSelector::Regex { scope, .. } | ParameterSelector::Sub { scope, .. } => scope,
            ParameterSelector::Inverse(inner) => inner.scope(),
        }
    }

    /// Whether the parameter named `name` belongs to the selector's model.
    fn covers(&self, name: &str) -> bool {
        name.starts_with(self.scope())
    }

    /// Whether the parameter named `name` (in the learner's model) is selected.
    pub fn selects(&self, name: &str) -> bool {
        match self {
            ParameterSelector::Regex {
                scope,
                regex,
                negative,
            } => name.strip_prefix(scope.as_str()).is_some_and(|relative| {
                regex.as_ref().is_none_or(|r| r.is_match(relative))
                    && !negative.as_ref().is_some_and(|n| n.is_match(relative))
            }),
            ParameterSelector::Inverse(inner) => inner.covers(name) && !inner.selects(name),
            ParameterSelector::Sub { inner, default, .. } => {
                self.covers(name)
                    && if inner.covers(name) {
                        inner.selects(name)
                    } else {
                        *default
                    }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        InverseParametersIteratorConfig, LinearConfig, MultipleModelConfig,
        RegexParameterFilterConfig, RegexParametersIteratorConfig, SubParametersIteratorConfig,
    };

    fn filter(includes: Option<&[&str]>, excludes: Option<&[&str]>) -> ParameterFilter {
        let own = |v: Option<&[&str]>| v.map(|v| v.iter().map(|s| s.to_string()).collect());
        ParameterFilter::new(
            &AnyParameterFilter::RegexParameterFilter(RegexParameterFilterConfig {
                includes: own(includes),
                excludes: own(excludes),
            }),
            "f",
        )
        .unwrap()
    }

    #[test]
    fn regex_filter_follows_the_reference_rules() {
        let only_bias = filter(Some(&[r"\.bias$"]), None);
        assert!(only_bias.accepts("layers.0.bias"));
        assert!(!only_bias.accepts("layers.0.weight"));
        let no_bias = filter(None, Some(&[r"\.bias$"]));
        assert!(!no_bias.accepts("layers.0.bias"));
        assert!(no_bias.accepts("layers.0.weight"));
        let both = filter(Some(&["layers\\.1"]), Some(&["layers"]));
        assert!(both.accepts("layers.1.weight"));
        assert!(!both.accepts("layers.0.weight"));
    }

    fn linear(input_dim: u64) -> AnyModule {
        AnyModule::Linear(LinearConfig { input_dim })
    }

    fn regex(pattern: &str, negative: &str, model: AnyModule) -> AnyParametersIterator {
        AnyParametersIterator::RegexParametersIterator(RegexParametersIteratorConfig {
            regex: pattern.into(),
            negative_regex: negative.into(),
            model,
        })
    }

    #[test]
    fn selectors_search_names_as_python_re_search_and_invert() {
        let model = linear(3);
        let build = |c: &AnyParametersIterator| ParameterSelector::new(c, &model, "s").unwrap();
        // Found anywhere in the name, as `re.search`: "bias" selects every bias.
        let bias = build(&regex("bias", "", model.clone()));
        assert!(bias.selects("layers.0.bias"));
        assert!(bias.selects("bias"));
        assert!(!bias.selects("layers.0.weight"));
        let first = build(&regex(r"layers\.0\.", "bias", model.clone()));
        assert!(first.selects("layers.0.weight"));
        assert!(!first.selects("layers.0.bias"));
        assert!(!first.selects("layers.10.weight"));
        // Anchors still match whole names; an empty pattern selects everything.
        let anchored = build(&regex("^weight$", "", model.clone()));
        assert!(anchored.selects("weight") && !anchored.selects("layers.0.weight"));
        assert!(build(&regex("", "", model.clone())).selects("anything"));
        let inverse =
            AnyParametersIterator::InverseParametersIterator(InverseParametersIteratorConfig {
                iterator: Box::new(regex(r"layers\.0\.", "bias", model.clone())),
            });
        let i = build(&inverse);
        assert!(!i.selects("layers.0.weight"));
        assert!(i.selects("layers.1.weight"));
        assert!(i.selects("layers.0.bias"));
    }

    #[test]
    fn a_selector_sees_the_names_of_its_own_model() {
        let student = linear(3);
        let teacher = linear(5);
        let learner = AnyModule::MultipleModel(MultipleModelConfig {
            models: [
                ("scorer".to_string(), student.clone()),
                ("teacher".to_string(), teacher.clone()),
            ]
            .into_iter()
            .collect(),
            scorer: "scorer".into(),
        });
        // "^weight" is relative to the teacher: it selects teacher.weight only.
        let s =
            ParameterSelector::new(&regex("^weight", "", teacher.clone()), &learner, "s").unwrap();
        assert!(s.selects("teacher.weight"));
        assert!(!s.selects("scorer.weight") && !s.selects("teacher.bias"));
        // Inverting stays within the teacher.
        let inverse =
            AnyParametersIterator::InverseParametersIterator(InverseParametersIteratorConfig {
                iterator: Box::new(regex("^weight", "", teacher.clone())),
            });
        let i = ParameterSelector::new(&inverse, &learner, "s").unwrap();
        assert!(
            i.selects("teacher.bias") && !i.selects("teacher.weight") && !i.selects("scorer.bias")
        );
        // SubParametersIterator: the teacher's choice, `default` for the rest of the learner's model.
        let sub = AnyParametersIterator::SubParametersIterator(SubParametersIteratorConfig {
            model: learner.clone(),
            iterator: Box::new(regex("^weight", "", teacher.clone())),
            default: true,
        });
        let sub = ParameterSelector::new(&sub, &learner, "s").unwrap();
        assert!(sub.selects("teacher.weight") && !sub.selects("teacher.bias"));
        assert!(sub.selects("scorer.weight") && sub.selects("scorer.bias"));
        // A model that is not trained here is refused, naming the place.
        let err = ParameterSelector::new(
            &regex("w", "", linear(7)),
            &learner,
            "learner.trainer.hooks[0].selector",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with(
            "learner.trainer.hooks[0].selector.model: is neither the learner's model"
        ));
    }

    #[test]
    fn bad_patterns_name_their_place() {
        let bad = regex("(", "", linear(2));
        let err = ParameterSelector::new(&bad, &linear(2), "learner.trainer.hooks[1].selector")
            .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("learner.trainer.hooks[1].selector.regex: invalid regular expression"));
    }
}
