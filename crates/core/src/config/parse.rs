//! Reading a configuration document: its value rules against the schema first, then its
//! generated types, naming the config path of the first problem.

use serde::de::DeserializeOwned;

use super::rules::check_value_rules;
use super::{AnyConfig, AnyModule, LearnerConfig, Typed};
use crate::{Error, Result};

fn parse<T: DeserializeOwned>(json: &str, root: &str) -> Result<T> {
    // The value rules first, so that a value out of range is refused with the message
    // TypeScript gives it, not as a misfit of the Rust type; malformed JSON is serde's to name.
    if let Ok(document) = serde_json::from_str::<serde_json::Value>(json) {
        check_value_rules(&document, root)?;
    }
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
    config.validate("learner")?;
    Ok(config)
}

/// Reads a model configuration (a trained model's), naming the config path of the first problem
/// from `model`.
///
/// # Errors
/// As [`parse_learner`].
pub fn parse_model(json: &str) -> Result<AnyModule> {
    let config: AnyModule = parse(json, "model")?;
    config.validate("model")?;
    Ok(config)
}

/// Reads any configuration object the core knows (the contract test's entry point).
///
/// # Errors
/// [`Error::Config`] naming the path of the first problem.
pub fn parse_any(json: &str) -> Result<AnyConfig> {
    let config: AnyConfig = parse(json, "config")?;
    config.validate("config")?;
    Ok(config)
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
    fn values_out_of_range_get_the_message_of_their_rule() {
        let refused = |from: &str, to: &str| {
            let json = demo_config_json().replace(from, to);
            assert_ne!(json, demo_config_json(), "{from}");
            parse_learner(&json).unwrap_err().to_string()
        };
        assert_eq!(
            refused("\"max_epochs\":3", "\"max_epochs\":-1"),
            "learner.max_epochs: must be ≥ 1, got -1"
        );
        assert_eq!(
            refused("\"batch_size\":32", "\"batch_size\":0"),
            "learner.trainer.batch_size: must be ≥ 1, got 0"
        );
        assert_eq!(
            refused("\"hidden_dims\":[16]", "\"hidden_dims\":[0]"),
            "learner.model.hidden_dims[0]: must be ≥ 1, got 0"
        );
    }

    #[test]
    fn a_model_configuration_gets_the_same_rules() {
        let err = parse_model(r#"{"__xpmtype__":"xpm_torch.models.Linear","input_dim":0}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "model.input_dim: must be ≥ 1, got 0");
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
