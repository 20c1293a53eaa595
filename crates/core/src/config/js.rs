//! Objects written in TypeScript, as the core sees them: stand-ins (`JsObjectConfig`) whose
//! parameters it reads by name and whose kind it reads as its position declares it.

use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ConfigType, JsObjectConfig};
use crate::{Error, Result};

/// The type id of every stand-in for an object written in TypeScript, in every position that
/// accepts one (samplers, datasets, listeners, hooks, dims providers).
pub const JS_OBJECT: &str = <JsObjectConfig as ConfigType>::TYPE_ID;

impl JsObjectConfig {
    /// The parameter `name`, read as a `T`; `path` is where the object sits.
    ///
    /// # Errors
    /// [`Error::Config`] at `path.name` when it is absent or of another type.
    pub fn param<T: DeserializeOwned>(&self, name: &str, path: &str) -> Result<T> {
        let value = self.params.get(name).cloned().unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|e| {
            Error::config(
                format!("{path}.{name}"),
                format!("{} (a parameter of {}): {e}", name, self.class),
            )
        })
    }

    /// Its `kind`, read as one of the kinds `K` that its position declares
    /// ([`super::JsSamplerKind`], [`super::JsTrainingHookKind`]); `path` is where the object sits.
    ///
    /// # Errors
    /// [`Error::Config`] at `path.kind` when it is none of them.
    pub fn declared_kind<K: FromStr<Err = String>>(&self, path: &str) -> Result<K> {
        self.kind.parse().map_err(|e| {
            Error::config(
                format!("{path}.kind"),
                format!("the kind of {}: {e}", self.class),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::JsTrainingHookKind;
    use crate::config::{AnyBatchDimsProvider, JsSamplerKind};

    fn object() -> JsObjectConfig {
        serde_json::from_value(json!({
            "key": "0:t.Vote", "class": "t.Vote", "kind": "listener", "params": { "id": "vote" }
        }))
        .unwrap()
    }

    #[test]
    fn a_parameter_is_read_as_its_type_or_named_in_the_error() {
        assert_eq!(
            object()
                .param::<String>("id", "learner.listeners[1]")
                .unwrap(),
            "vote"
        );
        let err = object()
            .param::<u64>("id", "learner.listeners[1]")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("learner.listeners[1].id: id (a parameter of t.Vote)"),
            "{err}"
        );
        let missing = object()
            .param::<u64>("at", "learner.listeners[1]")
            .unwrap_err()
            .to_string();
        assert!(missing.starts_with("learner.listeners[1].at:"), "{missing}");
    }

    #[test]
    fn a_kind_is_read_as_its_position_declares_it_or_named_in_the_error() {
        let mut hook = object();
        hook.kind = "initialization".into();
        let kind: JsTrainingHookKind = hook.declared_kind("learner.trainer.hooks[1]").unwrap();
        assert_eq!(kind, JsTrainingHookKind::Initialization);
        let err = object()
            .declared_kind::<JsSamplerKind>("learner.trainer.sampler")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("learner.trainer.sampler.kind: the kind of t.Vote: must be one of"),
            "{err}"
        );
        assert!(err.ends_with(r#"got "listener""#), "{err}");
    }

    #[test]
    fn a_dims_provider_written_in_typescript_gives_its_probe_points() {
        let provider: AnyBatchDimsProvider = serde_json::from_value(json!({
            "__xpmtype__": JS_OBJECT, "key": "2:t.Dims", "class": "t.Dims", "kind": "pairwise",
            "params": { "probe_dims": [
                { "__xpmtype__": "xpm_torch.batchers.ProbePoint", "values": { "bs": 4 } }
            ] }
        }))
        .unwrap();
        let probes = provider.probe_dims("b.dims_provider").unwrap();
        assert_eq!(probes.len(), 1);
        assert_eq!(probes[0].values["bs"], 4);
        let AnyBatchDimsProvider::JsObject(mut js) = provider else {
            panic!("not read as a TypeScript object");
        };
        js.params
            .insert("probe_dims".into(), json!([{ "values": { "bs": 4 } }]));
        let err = AnyBatchDimsProvider::JsObject(js)
            .probe_dims("b.dims_provider")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("b.dims_provider.probe_dims:"), "{err}");
    }
}
