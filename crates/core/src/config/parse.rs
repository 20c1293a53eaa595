use serde::de::DeserializeOwned;

use super::{AnyConfig, LearnerConfig, Typed};
use crate::{Error, Result};

fn parse<T: DeserializeOwned>(json: &str, root: &str) -> Result<T> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." {
            root.to_string()
        } else {
            format!("{root}.{path}")
        };
        Error::config(path, err.inner().to_string())
    })
}

/// Reads a Learner configuration document, naming the config path of the first problem.
///
/// # Errors
/// [`Error::Config`] when the JSON is malformed, has unknown fields, wrong types, or breaks a rule
/// that only the whole configuration can check.
pub fn parse_learner(json: &str) -> Result<LearnerConfig> {
    let Typed(config) = parse::<Typed<LearnerConfig>>(json, "learner")?;
    config.validate()?;
    Ok(config)
}

/// Reads any configuration object the core knows (the contract test's entry point).
///
/// # Errors
/// [`Error::Config`] naming the path of the first problem.
pub fn parse_any(json: &str) -> Result<AnyConfig> {
    parse(json, "config")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests_support::demo_config_json;

    #[test]
    fn reads_the_demo_config() {
        let config = parse_learner(&demo_config_json()).unwrap();
        assert_eq!(config.max_epochs, 3);
        assert_eq!(config.optimizers.len(), 1);
    }

    #[test]
    fn unknown_field_is_named_with_its_path() {
        let json = demo_config_json().replace("\"margin\"", "\"margn\"");
        let err = parse_learner(&json).unwrap_err();
        assert_eq!(err.code(), "ERR_CONFIG");
        let text = err.to_string();
        assert!(text.contains("learner.trainer.hooks[0]"), "{text}");
        assert!(text.contains("margn"), "{text}");
    }

    #[test]
    fn negative_epochs_are_rejected_at_their_path() {
        let json = demo_config_json().replace("\"max_epochs\":3", "\"max_epochs\":-1");
        let err = parse_learner(&json).unwrap_err().to_string();
        assert!(err.starts_with("learner.max_epochs:"), "{err}");
    }

    #[test]
    fn model_input_must_be_positive() {
        let json = demo_config_json().replace("\"hidden_dims\":[16]", "\"hidden_dims\":[0]");
        let err = parse_learner(&json).unwrap_err().to_string();
        assert!(err.starts_with("learner.model.hidden_dims[0]:"), "{err}");
    }
}

#[cfg(test)]
mod tagged_tests {
    use super::*;
    use crate::config::tests_support::demo_config_json;

    #[test]
    fn unknown_type_id_lists_the_accepted_ones() {
        let json = demo_config_json().replace(
            "xpm_torch.losses.pairwise.HingeLoss",
            "xpm_torch.losses.Nope",
        );
        let err = parse_learner(&json).unwrap_err().to_string();
        assert!(
            err.starts_with("learner.trainer.hooks[0]: unknown variant"),
            "{err}"
        );
        assert!(err.contains("xpm_torch.losses.pairwise.HingeLoss"), "{err}");
    }

    #[test]
    fn type_key_must_come_first() {
        let json = demo_config_json().replace(
            r#"{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"#,
            r#"{"weight":1.0,"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","#,
        );
        let err = parse_learner(&json).unwrap_err().to_string();
        assert!(err.starts_with("learner.trainer.hooks[0]"), "{err}");
        assert!(err.contains("first key"), "{err}");
    }
}

#[cfg(test)]
mod round_trip_tests {
    use super::*;
    use crate::config::tests_support::demo_config_json;

    #[test]
    fn a_learner_reads_back_as_written() {
        let input: serde_json::Value = serde_json::from_str(&demo_config_json()).unwrap();
        let read = parse_any(&demo_config_json()).unwrap();
        assert_eq!(read.type_id(), "xpm_torch.learner.Learner");
        assert_eq!(serde_json::to_value(&read).unwrap(), input);
        let text = serde_json::to_string(&read).unwrap();
        assert!(
            text.starts_with(r#"{"__xpmtype__":"xpm_torch.learner.Learner","#),
            "{text}"
        );
    }

    #[test]
    fn a_single_class_position_checks_its_type_id() {
        let json = demo_config_json().replace(
            r#""__xpmtype__":"xpm_torch.base.Random""#,
            r#""__xpmtype__":"xpm_torch.base.Other""#,
        );
        let err = parse_learner(&json).unwrap_err().to_string();
        assert!(err.starts_with("learner.random"), "{err}");
        assert!(err.contains("xpm_torch.base.Random"), "{err}");
    }
}
