use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Result};

/// The type id of every stand-in for an object written in TypeScript, in every position that
/// accepts one (samplers, datasets, listeners, hooks, dims providers).
pub const JS_OBJECT: &str = "xpm_torch.js.JsObject";

/// An object written in TypeScript (a sampler, listener, hook, dims provider, in-memory
/// dataset...), as the core receives it: one shape for every kind, so a new kind needs no new
/// mirror. The core asks the JavaScript side about it by `key`; what it asks depends on the
/// position the object sits in.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsObjectConfig {
    /// The key the JavaScript side knows it by.
    pub key: String,
    /// Its own type id (for messages).
    pub class: String,
    /// What the core must know of its behaviour to build it (a sampler's record kind, a
    /// hook's `step` or `initialization`, ...).
    pub kind: String,
    /// Its parameters, as any configuration's (for those the core reads itself, such as a
    /// listener's `id` or a dims provider's `probe_dims`).
    #[serde(default)]
    pub params: Map<String, Value>,
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
