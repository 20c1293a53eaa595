//! The value rules of the configuration classes — bounds, enumerations, patterns, non-empty
//! strings — read from the JSON Schema the TypeScript classes emit (`xpm-torch schema`, kept
//! beside this file as `schema.json` and rewritten by `npm run build`). The rules are declared
//! once, on the classes' zod types; this module only applies them to JSON that reaches the core
//! without going through the classes (Rust tests, hand-written documents), and words a broken
//! rule exactly as `ruleMessage` in `ts/config/rules.ts` does.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::TYPE_KEY;
use crate::{Error, Result};

/// The schema `xpm-torch schema` prints, as of the last build.
const SCHEMA: &str = include_str!("schema.json");

/// The schema's class definitions by type id (empty if the file is not a schema, which the
/// tests below rule out).
fn definitions() -> &'static Map<String, Value> {
    static DEFS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFS.get_or_init(|| match serde_json::from_str::<Value>(SCHEMA) {
        Ok(Value::Object(mut schema)) => match schema.remove("$defs") {
            Some(Value::Object(defs)) => defs,
            _ => Map::new(),
        },
        _ => Map::new(),
    })
}

/// Checks every configuration object in `document` against the value rules of its class.
/// Values of the wrong type are left to the generated types, which name the expected type.
///
/// # Errors
/// [`Error::Config`] at the path (from `root`) of the first value that breaks a rule.
pub(crate) fn check_value_rules(document: &Value, root: &str) -> Result<()> {
    nested(document, root)
}

/// Looks for configuration objects inside a value no schema describes.
fn nested(value: &Value, path: &str) -> Result<()> {
    match value {
        Value::Object(fields) if fields.contains_key(TYPE_KEY) => config(fields, path),
        Value::Object(entries) => entries
            .iter()
            .try_for_each(|(key, v)| nested(v, &format!("{path}.{key}"))),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| nested(v, &format!("{path}[{i}]"))),
        _ => Ok(()),
    }
}

fn config(fields: &Map<String, Value>, path: &str) -> Result<()> {
    let properties = fields
        .get(TYPE_KEY)
        .and_then(Value::as_str)
        .and_then(|type_id| definitions().get(type_id))
        .and_then(|def| def.get("properties"))
        .and_then(Value::as_object);
    for (name, value) in fields {
        if name == TYPE_KEY {
            continue;
        }
        let path = format!("{path}.{name}");
        match properties.and_then(|p| p.get(name)) {
            Some(schema) => field(value, schema, &path)?,
            None => nested(value, &path)?,
        }
    }
    Ok(())
}

fn field(value: &Value, schema: &Value, path: &str) -> Result<()> {
    if schema.get("$ref").is_some() || schema.get("anyOf").is_some() {
        return nested(value, path);
    }
    if let Some(message) = broken_rule(value, schema) {
        return Err(Error::config(path, message));
    }
    match value {
        Value::Array(items) => match schema.get("items") {
            Some(item) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| field(v, item, &format!("{path}[{i}]"))),
            None => nested(value, path),
        },
        Value::Object(entries) if !entries.contains_key(TYPE_KEY) => {
            match schema.get("additionalProperties").filter(|s| s.is_object()) {
                Some(item) => entries
                    .iter()
                    .try_for_each(|(key, v)| field(v, item, &format!("{path}.{key}"))),
                None => nested(value, path),
            }
        }
        _ => nested(value, path),
    }
}

/// A bound's keyword, its word in messages, and whether a value within it holds.
type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);

const BOUNDS: [Bound; 4] = [
    ("minimum", "≥", |x, l| x >= l),
    ("exclusiveMinimum", ">", |x, l| x > l),
    ("maximum", "≤", |x, l| x <= l),
    ("exclusiveMaximum", "<", |x, l| x < l),
];

/// The message of the first rule of `schema` that `value` breaks, worded as `ruleMessage`.
fn broken_rule(value: &Value, schema: &Value) -> Option<String> {
    let limit = |keyword: &str| schema.get(keyword).filter(|l| l.is_number());
    match value {
        Value::Number(number) => {
            let x = number.as_f64()?;
            BOUNDS.into_iter().find_map(|(keyword, word, holds)| {
                let bound = limit(keyword)?;
                (!holds(x, bound.as_f64()?)).then(|| format!("must be {word} {bound}, got {value}"))
            })
        }
        Value::String(text) => {
            if let Some(min) = limit("minLength").and_then(Value::as_u64) {
                if (text.encode_utf16().count() as u64) < min {
                    return Some(if min == 1 {
                        "must not be empty".to_string()
                    } else {
                        format!("must be at least {min} characters long, got {value}")
                    });
                }
            }
            let pattern = schema.get("pattern").and_then(Value::as_str);
            if let Some(pattern) = pattern {
                if Regex::new(pattern).is_ok_and(|re| !re.is_match(text)) {
                    return Some(format!("must match /{pattern}/, got {value}"));
                }
            }
            outside_enum(value, schema)
        }
        Value::Array(items) => {
            let count = limit("minItems").and_then(Value::as_u64);
            let fixed = count.filter(|&n| limit("maxItems").and_then(Value::as_u64) == Some(n));
            fixed
                .filter(|&n| items.len() as u64 != n)
                .map(|n| format!("must hold exactly {n} values, got {value}"))
        }
        _ => outside_enum(value, schema),
    }
}

/// A value as `JSON.stringify` writes it, as the TypeScript messages show values.
pub(crate) fn shown(value: impl serde::Serialize) -> String {
    serde_json::to_string(&value).unwrap_or_default()
}

fn outside_enum(value: &Value, schema: &Value) -> Option<String> {
    let values = schema.get("enum")?.as_array()?;
    if values.contains(value) {
        return None;
    }
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    Some(format!("must be one of {}, got {value}", listed.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(document: Value) -> String {
        check_value_rules(&document, "config")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_schema_describes_the_classes_and_its_patterns_compile() {
        let defs = definitions();
        assert!(
            defs.contains_key("xpm_torch.learner.Learner"),
            "{SCHEMA:.200}"
        );
        let mut patterns = Vec::new();
        let mut stack: Vec<&Value> = defs.values().collect();
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(o) => {
                    patterns.extend(o.get("pattern").and_then(Value::as_str));
                    stack.extend(o.values());
                }
                Value::Array(a) => stack.extend(a),
                _ => {}
            }
        }
        assert!(!patterns.is_empty());
        for pattern in patterns {
            assert!(Regex::new(pattern).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn each_kind_of_rule_has_its_message_and_path() {
        let mlp = |dims: Value, dropout: Value| {
            json!({TYPE_KEY: "xpm_torch.models.MLP", "input_dim": 3, "hidden_dims": dims,
                   "activation": "relu", "dropout": dropout, "layer_norm": false})
        };
        assert_eq!(
            refused(mlp(json!([4, 0]), json!(0))),
            "config.hidden_dims[1]: must be ≥ 1, got 0"
        );
        assert_eq!(
            refused(mlp(json!([4]), json!(1))),
            "config.dropout: must be < 1, got 1"
        );
        let mut bad = mlp(json!([]), json!(0));
        bad["activation"] = json!("swish");
        assert_eq!(
            refused(bad),
            r#"config.activation: must be one of "relu", "gelu", "tanh", got "swish""#
        );
        let file = |format: &str| json!({TYPE_KEY: "xpm_torch.data.TextPairFile", "id": "x", "path": "p", "format": format});
        assert_eq!(
            refused(file("csv")),
            r#"config.format: must match /^(tsv|jsonl)$/, got "csv""#
        );
        let mut unnamed = file("tsv");
        unnamed["id"] = json!("");
        assert_eq!(refused(unnamed), "config.id: must not be empty");
    }

    #[test]
    fn rules_apply_inside_nested_configurations_lists_and_dicts() {
        let probe = json!({TYPE_KEY: "xpm_torch.batchers.ProbePoint", "values": {"bs": 0}});
        let provider =
            json!({TYPE_KEY: "xpm_torch.batchers.BatchDimsProvider", "probe_dims": [probe]});
        assert_eq!(
            refused(json!({"nested": [provider]})),
            "config.nested[0].probe_dims[0].values.bs: must be ≥ 1, got 0"
        );
    }

    #[test]
    fn values_of_another_type_and_unknown_classes_are_left_to_serde() {
        let wrong_type = json!({TYPE_KEY: "xpm_torch.base.Random", "seed": "one"});
        assert!(check_value_rules(&wrong_type, "config").is_ok());
        let unknown = json!({TYPE_KEY: "xpm_torch.listeners.JsListener", "seed": -1});
        assert!(check_value_rules(&unknown, "config").is_ok());
    }
}
