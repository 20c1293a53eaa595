//! Objects written in TypeScript, as the core sees them: stand-ins (`JsObjectConfig`) whose
//! parameters it reads by name, and when a TypeScript hook runs.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ConfigType, JsObjectConfig};
use crate::{Error, Result};

/// The type id of every stand-in for an object written in TypeScript, in every position that
/// accepts one (samplers, datasets, listeners, hooks, dims providers).
pub const JS_OBJECT: &str = <JsObjectConfig as ConfigType>::TYPE_ID;

/// When a hook written in TypeScript runs (the `kind` of its stand-in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JsHookKind {
    /// Before and after each optimizer step.
    Step,
    /// Before and after the run is built (and restored).
    Initialization,
}

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
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::AnyBatchDimsProvider;

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
