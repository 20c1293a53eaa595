use regex::Regex;

use crate::config::{FilterConfig, ParametersIteratorConfig};
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
    pub fn new(config: &FilterConfig, path: &str) -> Result<Self> {
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
            FilterConfig::All(_) => ParameterFilter::All,
            FilterConfig::Regex(c) => ParameterFilter::Regex {
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

/// Selects parameters by name (`RegexParametersIterator`, `InverseParametersIterator`).
#[derive(Debug)]
pub enum ParameterSelector {
    /// Selected when `regex` matches (fully) and `negative` does not.
    Regex {
        /// What selects.
        regex: Regex,
        /// What deselects.
        negative: Option<Regex>,
    },
    /// The complement of another selector.
    Inverse(Box<ParameterSelector>),
}

impl ParameterSelector {
    /// Builds a selector; `path` names the configuration in errors.
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid regular expression.
    pub fn new(config: &ParametersIteratorConfig, path: &str) -> Result<Self> {
        Ok(match config {
            ParametersIteratorConfig::Regex(c) => ParameterSelector::Regex {
                regex: compile(&format!("^(?:{})$", c.regex), &format!("{path}.regex"))?,
                negative: c
                    .negative_regex
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .map(|r| compile(&format!("^(?:{r})$"), &format!("{path}.negative_regex")))
                    .transpose()?,
            },
            ParametersIteratorConfig::Inverse(c) => ParameterSelector::Inverse(Box::new(
                ParameterSelector::new(&c.iterator, &format!("{path}.iterator"))?,
            )),
        })
    }

    /// Whether the parameter named `name` is selected.
    pub fn selects(&self, name: &str) -> bool {
        match self {
            ParameterSelector::Regex { regex, negative } => {
                regex.is_match(name) && !negative.as_ref().is_some_and(|n| n.is_match(name))
            }
            ParameterSelector::Inverse(inner) => !inner.selects(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{InverseIteratorConfig, RegexFilterConfig, RegexIteratorConfig};

    fn filter(includes: Option<&[&str]>, excludes: Option<&[&str]>) -> ParameterFilter {
        let own = |v: Option<&[&str]>| v.map(|v| v.iter().map(|s| s.to_string()).collect());
        ParameterFilter::new(
            &FilterConfig::Regex(RegexFilterConfig {
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

    #[test]
    fn selectors_match_whole_names_and_invert() {
        let regex = ParametersIteratorConfig::Regex(RegexIteratorConfig {
            regex: r"layers\.0\..*".into(),
            negative_regex: Some(r".*bias".into()),
        });
        let s = ParameterSelector::new(&regex, "s").unwrap();
        assert!(s.selects("layers.0.weight"));
        assert!(!s.selects("layers.0.bias"));
        assert!(!s.selects("layers.10.weight"));
        let inverse =
            ParametersIteratorConfig::Inverse(Box::new(InverseIteratorConfig { iterator: regex }));
        let i = ParameterSelector::new(&inverse, "s").unwrap();
        assert!(!i.selects("layers.0.weight"));
        assert!(i.selects("layers.1.weight"));
    }

    #[test]
    fn bad_patterns_name_their_place() {
        let bad = ParametersIteratorConfig::Regex(RegexIteratorConfig {
            regex: "(".into(),
            negative_regex: None,
        });
        let err = ParameterSelector::new(&bad, "learner.trainer.hooks[1].selector").unwrap_err();
        assert!(err
            .to_string()
            .starts_with("learner.trainer.hooks[1].selector.regex: invalid regular expression"));
    }
}
