use serde_json::{json, Value};
use xpm_torch_core::Error;

/// What every asynchronous export resolves to: `{ok: true, output}` or `{ok: false, error}`.
/// Errors travel as data so that TypeScript can raise its typed error classes with their code.
pub fn to_json(result: Result<Value, Error>) -> String {
    match result {
        Ok(output) => json!({ "ok": true, "output": output }),
        Err(err) => {
            let mut error = json!({ "code": err.code(), "message": err.to_string() });
            match &err {
                Error::Config { path, message } => {
                    error["path"] = json!(path);
                    error["detail"] = json!(message);
                }
                Error::Interrupted { checkpoint, .. } => error["checkpoint"] = json!(checkpoint),
                _ => {}
            }
            json!({ "ok": false, "error": error })
        }
    }
    .to_string()
}
