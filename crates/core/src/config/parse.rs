use super::LearnerConfig;
use crate::{Error, Result};

/// Reads a Learner configuration document, naming the config path of the first problem.
///
/// # Errors
/// [`Error::Config`] when the JSON is malformed, has unknown fields, wrong types, or breaks a rule
/// that only the whole configuration can check.
pub fn parse_learner(json: &str) -> Result<LearnerConfig> {
    let de = &mut serde_json::Deserializer::from_str(json);
    let config: LearnerConfig = serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." {
            "learner".to_string()
        } else {
            format!("learner.{path}")
        };
        Error::config(path, err.inner().to_string())
    })?;
    config.validate()?;
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
