//! The configuration contract, checked from TypeScript: any class read as the core reads it.

use napi_derive::napi;
use xpm_torch_core::config;

use crate::outcome;

/// Reads any configuration object as the core does and writes back what it read: the contract
/// between the TypeScript classes and the Rust types generated from their schema. Returns the
/// outcome JSON.
#[napi]
pub fn read_config(config_json: String) -> String {
    outcome::to_json(config::parse_any(&config_json).and_then(|c| {
        serde_json::to_value(c).map_err(|e| xpm_torch_core::Error::config("config", e.to_string()))
    }))
}
