//! The outcome JSON every asynchronous export resolves to, errors as data.

use serde_json::{json, Value};
use xpm_torch_core::Error;

/// What every asynchronous export resolves to: `{ok: true, output}` or `{ok: false, error}`.
/// Errors travel as data (their code and every field, see [`Error::payload`]) so that
/// TypeScript raises its typed error classes.
pub fn to_json(result: Result<Value, Error>) -> String {
    match result {
        Ok(output) => json!({ "ok": true, "output": output }),
        Err(err) => json!({ "ok": false, "error": err.payload() }),
    }
    .to_string()
}
