//! Generates the Rust types of the configuration classes from the JSON Schema the TypeScript
//! classes emit (`src/config/schema.json`): a struct per concrete class, a tagged enum per
//! position that several classes fit, `AnyConfig`, an enum per string enumeration, an enum of the
//! kinds a stand-in may declare in a position that lists them, and the conversions between two
//! positions when one accepts some of the classes of the other.
//!
//! Naming: a class is the last segment of its type id in UpperCamelCase plus `Config`, prefixed
//! by the previous segment when two classes would share a name; a position is `Any` plus its
//! base class's name (or its union's name, see `configUnion`); a variant is its class's name without
//! `Config`; a string enumeration is named after its field (prefixed by the class when two
//! enumerations would share a name); the kinds of a stand-in are `Js` plus its position's base
//! class's name plus `Kind`. Integers are `u64` when the schema bounds them below by 0
//! or more, `i64` otherwise; a field neither required nor defaulted is an `Option`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

const TYPE_KEY: &str = "__xpmtype__";

/// The definition of the stand-in of an object written in TypeScript, in every position that
/// accepts one.
const JS_OBJECT: &str = "xpm_torch.js.JsObject";

/// What a `$defs` entry becomes.
enum Def<'a> {
    /// A concrete class: its type id and definition.
    Class(&'a str, &'a Map<String, Value>),
    /// A position: the definitions it accepts.
    Position(Vec<String>),
    /// A plain record the wire carries inside a class (no type key): a struct named by its key.
    Record(&'a Map<String, Value>),
}

/// The generator's view of the schema: definitions and the Rust names given to them.
struct Model<'a> {
    defs: BTreeMap<&'a str, Def<'a>>,
    names: BTreeMap<&'a str, String>,
    /// String enumerations: sorted values to (name, values in schema order).
    enums: BTreeMap<Vec<String>, (String, Vec<String>)>,
    /// Fields (`class key`, `field`) whose type is boxed to break a recursion.
    boxed: BTreeSet<(String, String)>,
    /// The kinds a stand-in may declare, by the key of the position that lists them.
    stand_in_kinds: BTreeMap<&'a str, Vec<String>>,
}

/// `ApproxNDCGLoss` → `ApproxNdcgLoss`, `log-probability` → `LogProbability`.
pub fn upper_camel(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut words: Vec<String> = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            words.push(String::new());
            continue;
        }
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let starts = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase() || p.is_ascii_digit() || next.is_some_and(|n| n.is_lowercase())
            });
        if words.is_empty() || starts {
            words.push(String::new());
        }
        words.last_mut().into_iter().for_each(|w| w.push(c));
    }
    words
        .iter()
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut cs = w.chars();
            let first = cs.next().map(|c| c.to_ascii_uppercase());
            first
                .into_iter()
                .chain(cs.map(|c| c.to_ascii_lowercase()))
                .collect::<String>()
        })
        .collect()
}

fn segments(type_id: &str) -> Vec<&str> {
    type_id.split('.').collect()
}

/// Struct names of the classes, collisions prefixed by the previous segment.
fn class_names<'a>(ids: &[&'a str]) -> BTreeMap<&'a str, String> {
    let short = |id: &str| format!("{}Config", upper_camel(segments(id).last().unwrap_or(&"")));
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    ids.iter()
        .for_each(|id| *count.entry(short(id)).or_default() += 1);
    ids.iter()
        .map(|&id| {
            let name = short(id);
            if count[&name] == 1 {
                return (id, name);
            }
            let s = segments(id);
            let prev = s.len().checked_sub(2).map_or("", |i| s[i]);
            (id, format!("{}{name}", upper_camel(prev)))
        })
        .collect()
}

/// `Any` and the names of a position's base classes.
fn position_name(key: &str) -> String {
    let bases: Vec<String> = key
        .split('|')
        .map(|id| upper_camel(segments(id.trim_end_matches('*')).last().unwrap_or(&"")))
        .collect();
    format!("Any{}", bases.join("Or"))
}

fn ref_key(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

/// The kinds the stand-in among a position's `anyOf` may declare, when the position lists them.
fn declared_kinds(any: &[Value]) -> Option<Vec<String>> {
    let stand_in = any.iter().find(|s| ref_key(s) == Some(JS_OBJECT))?;
    string_enum(stand_in.pointer("/properties/kind")?)
}

impl<'a> Model<'a> {
    fn read(schema: &'a Value) -> Self {
        let mut defs = BTreeMap::new();
        let mut stand_in_kinds = BTreeMap::new();
        for (key, def) in schema
            .get("$defs")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let type_id = def.pointer(&format!("/properties/{TYPE_KEY}/const"));
            if let (Some(id), Some(obj)) = (type_id.and_then(Value::as_str), def.as_object()) {
                defs.insert(key.as_str(), Def::Class(id, obj));
            } else if let Some(any) = def.get("anyOf").and_then(Value::as_array) {
                let keys = any.iter().filter_map(ref_key).map(String::from).collect();
                defs.insert(key.as_str(), Def::Position(keys));
                if let Some(kinds) = declared_kinds(any) {
                    stand_in_kinds.insert(key.as_str(), kinds);
                }
            } else if let (Some(obj), true) = (def.as_object(), def.get("properties").is_some()) {
                defs.insert(key.as_str(), Def::Record(obj));
            }
        }
        let ids: Vec<&str> = defs
            .keys()
            .copied()
            .filter(|k| matches!(defs[k], Def::Class(..)))
            .collect();
        let mut names = class_names(&ids);
        for (key, def) in &defs {
            match def {
                Def::Position(_) => names.insert(key, position_name(key)),
                Def::Record(_) => names.insert(key, upper_camel(key)),
                Def::Class(..) => None,
            };
        }
        let mut model = Model {
            defs,
            names,
            enums: BTreeMap::new(),
            boxed: BTreeSet::new(),
            stand_in_kinds,
        };
        model.name_enums();
        model.find_recursions();
        model
    }

    fn classes(&self) -> impl Iterator<Item = (&'a str, &'a str, &'a Map<String, Value>)> + '_ {
        self.defs.iter().filter_map(|(k, d)| match d {
            Def::Class(id, def) => Some((*k, *id, *def)),
            Def::Position(_) | Def::Record(_) => None,
        })
    }

    fn fields(def: &'a Map<String, Value>) -> impl Iterator<Item = (&'a str, &'a Value)> {
        def.get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(name, _)| name.as_str() != TYPE_KEY)
            .map(|(n, v)| (n.as_str(), v))
    }
}

/// The values of a string enumeration, in schema order.
fn string_enum(schema: &Value) -> Option<Vec<String>> {
    let values = schema.get("enum")?.as_array()?;
    values
        .iter()
        .map(|v| v.as_str().map(String::from))
        .collect()
}

impl<'a> Model<'a> {
    /// Names every string enumeration after its field, once per set of values.
    fn name_enums(&mut self) {
        let mut found: Vec<(String, String, Vec<String>)> = Vec::new();
        for (_, id, def) in self.classes() {
            for (field, schema) in Self::fields(def) {
                let items = schema.get("items").unwrap_or(schema);
                if let Some(values) = string_enum(items) {
                    found.push((
                        self.names[id].trim_end_matches("Config").into(),
                        field.into(),
                        values,
                    ));
                }
            }
        }
        let mut by_field: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
        for (_, field, values) in &found {
            let mut sorted = values.clone();
            sorted.sort();
            by_field.entry(field.clone()).or_default().insert(sorted);
        }
        for (class, field, values) in found {
            let mut sorted = values.clone();
            sorted.sort();
            let name = if by_field[&field].len() == 1 {
                upper_camel(&field)
            } else {
                format!("{class}{}", upper_camel(&field))
            };
            self.enums.entry(sorted).or_insert((name, values));
        }
    }

    /// The definitions a field's type holds directly (not through a list or a map).
    fn direct_refs(schema: &Value) -> Vec<&str> {
        match schema.get("type").and_then(Value::as_str) {
            Some("array" | "object") => Vec::new(),
            _ => ref_key(schema).into_iter().collect(),
        }
    }

    fn reaches(&self, from: &str, target: &str, seen: &mut BTreeSet<String>) -> bool {
        if from == target {
            return true;
        }
        if !seen.insert(from.to_string()) {
            return false;
        }
        let next: Vec<&str> = match self.defs.get(from) {
            Some(Def::Class(_, def)) => Self::fields(def)
                .flat_map(|(_, s)| Self::direct_refs(s))
                .collect(),
            Some(Def::Position(keys)) => keys.iter().map(String::as_str).collect(),
            Some(Def::Record(_)) | None => Vec::new(),
        };
        next.into_iter().any(|n| self.reaches(n, target, seen))
    }

    /// Boxes every field through which its class contains itself.
    fn find_recursions(&mut self) {
        let mut boxed = BTreeSet::new();
        for (key, _, def) in self.classes() {
            for (field, schema) in Self::fields(def) {
                if Self::direct_refs(schema)
                    .iter()
                    .any(|r| self.reaches(r, key, &mut BTreeSet::new()))
                {
                    boxed.insert((key.to_string(), field.to_string()));
                }
            }
        }
        self.boxed = boxed;
    }
}

/// The variant of a string enumeration's value; one that opens with a digit (`16-mixed`) is no
/// identifier: `V16Mixed`.
fn enum_variant(value: &str) -> String {
    let variant = upper_camel(value);
    if variant.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V{variant}")
    } else {
        variant
    }
}

/// Rust identifiers for field names that are keywords.
fn field_ident(name: &str) -> String {
    match name {
        "type" | "match" | "move" | "ref" | "loop" | "in" | "fn" | "mod" | "use" => {
            format!("r#{name}")
        }
        _ => name.trim_matches('_').to_string(),
    }
}

fn doc(out: &mut String, indent: &str, text: &str) {
    let text = text.trim_end_matches('.');
    let _ = writeln!(out, "{indent}/// {text}.");
}

impl<'a> Model<'a> {
    /// The Rust type of a value described by `schema`, inside class `owner` field `field`.
    fn rust_type(&self, schema: &Value) -> String {
        if let Some(key) = ref_key(schema) {
            return match self.defs.get(key) {
                Some(Def::Class(..)) => format!("Typed<{}>", self.names[key]),
                _ => self
                    .names
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| "serde_json::Value".into()),
            };
        }
        if let Some(values) = string_enum(schema) {
            let mut sorted = values;
            sorted.sort();
            return self.enums[&sorted].0.clone();
        }
        if schema.get("const").is_some_and(Value::is_string) {
            return "String".into();
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("integer") => {
                let min = schema.get("minimum").and_then(Value::as_f64);
                (if min.is_some_and(|m| m >= 0.0) {
                    "u64"
                } else {
                    "i64"
                })
                .into()
            }
            Some("number") => "f64".into(),
            Some("boolean") => "bool".into(),
            Some("string") => "String".into(),
            Some("array") => self.array_type(schema),
            Some("object") => match schema.get("additionalProperties") {
                Some(values @ Value::Object(_)) => {
                    format!(
                        "std::collections::BTreeMap<String, {}>",
                        self.rust_type(values)
                    )
                }
                _ => "serde_json::Map<String, serde_json::Value>".into(),
            },
            _ => "serde_json::Value".into(),
        }
    }

    /// A list, or a tuple when the schema fixes its length.
    fn array_type(&self, schema: &Value) -> String {
        let item = schema
            .get("items")
            .map_or("serde_json::Value".into(), |i| self.rust_type(i));
        let min = schema.get("minItems").and_then(Value::as_u64);
        match (min, schema.get("maxItems").and_then(Value::as_u64)) {
            (Some(n), Some(m)) if n == m && (2..=4).contains(&n) => {
                format!("({})", vec![item; n as usize].join(", "))
            }
            _ => format!("Vec<{item}>"),
        }
    }

    /// A class's struct and its type id; a record's struct (`id` empty).
    fn emit_struct(&self, out: &mut String, key: &str, id: &str, def: &'a Map<String, Value>) {
        let name = &self.names[key];
        let required: BTreeSet<&str> = def
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match def.get("description").and_then(Value::as_str) {
            Some(text) if id.is_empty() => doc(out, "", text),
            _ => doc(out, "", &format!("`{id}`")),
        }
        out.push_str("#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]\n");
        out.push_str("#[serde(deny_unknown_fields)]\n");
        let _ = writeln!(out, "pub struct {name} {{");
        let mut defaults = Vec::new();
        for (field, schema) in Self::fields(def) {
            if let Some(text) = schema.get("description").and_then(Value::as_str) {
                doc(out, "    ", text);
            } else {
                doc(out, "    ", &format!("`{field}`"));
            }
            let mut ty = self.rust_type(schema);
            if self.boxed.contains(&(key.to_string(), field.to_string())) {
                ty = format!("Box<{ty}>");
            }
            let ident = field_ident(field);
            if ident.trim_start_matches("r#") != field {
                let _ = writeln!(out, "    #[serde(rename = {field:?})]");
            }
            let default = schema.get("default").filter(|_| !required.contains(field));
            if !required.contains(field) && default.is_none() {
                out.push_str("    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n");
                ty = format!("Option<{ty}>");
            } else if let Some(expr) = default.and_then(|d| self.default_expr(d, &ty)) {
                let function = format!("default_{}", ident.trim_start_matches("r#"));
                let _ = writeln!(out, "    #[serde(default = \"{name}::{function}\")]");
                defaults.push(format!(
                    "    fn {function}() -> {ty} {{\n        {expr}\n    }}\n"
                ));
            }
            let _ = writeln!(out, "    pub {ident}: {ty},");
        }
        out.push_str("}\n\n");
        if !defaults.is_empty() {
            let _ = writeln!(out, "impl {name} {{\n{}}}\n", defaults.join("\n"));
        }
        if !id.is_empty() {
            let _ = writeln!(
                out,
                "impl ConfigType for {name} {{\n    const TYPE_ID: &'static str = {id:?};\n}}\n"
            );
        }
    }

    /// The Rust expression of a schema default of a scalar or a string choice, so that a document
    /// written by hand may leave it out; `None` for other values, which stay required.
    fn default_expr(&self, value: &Value, ty: &str) -> Option<String> {
        let is_enum = self.enums.values().any(|(name, _)| name == ty);
        Some(match (value, ty) {
            (Value::Bool(b), "bool") => b.to_string(),
            (Value::Number(n), "u64" | "i64") if n.is_i64() || n.is_u64() => n.to_string(),
            (Value::Number(n), "f64") => format!("{:?}_f64", n.as_f64()?),
            (Value::String(s), "String") => format!("{s:?}.to_string()"),
            (Value::String(s), _) if is_enum => format!("{ty}::{}", enum_variant(s)),
            _ => return None,
        })
    }

    /// A tagged enum over `keys` (class definitions), through `config_enum!`.
    fn emit_tagged(&self, out: &mut String, name: &str, what: &str, keys: &[String]) {
        out.push_str("config_enum! {\n");
        doc(out, "    ", what);
        out.push_str(
            "    #[derive(Debug, Clone, PartialEq)]\n    #[allow(clippy::large_enum_variant)]\n",
        );
        let _ = writeln!(out, "    pub enum {name} {{");
        for key in keys {
            let Some(Def::Class(id, _)) = self.defs.get(key.as_str()) else {
                continue;
            };
            let class = &self.names[key.as_str()];
            let variant = class.trim_end_matches("Config");
            doc(out, "        ", &format!("`{id}`"));
            let _ = writeln!(out, "        {variant}({class}) = {id:?},");
        }
        out.push_str("    }\n}\n\n");
    }

    /// An enumeration of the strings `values`, which `what` describes.
    fn emit_string_enum(&self, out: &mut String, name: &str, what: &str, values: &[String]) {
        doc(out, "", what);
        out.push_str(
            "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]\n",
        );
        let _ = writeln!(out, "pub enum {name} {{");
        for value in values {
            doc(out, "    ", &format!("`{value}`"));
            let _ = writeln!(
                out,
                "    #[serde(rename = {value:?})]\n    {},",
                enum_variant(value)
            );
        }
        out.push_str("}\n\n");
        let _ = writeln!(out, "impl {name} {{");
        doc(out, "    ", "The value as configurations write it");
        out.push_str("    pub fn as_str(&self) -> &'static str {\n        match self {\n");
        for value in values {
            let variant = enum_variant(value);
            let _ = writeln!(out, "            {name}::{variant} => {value:?},");
        }
        out.push_str("        }\n    }\n}\n\n");
        let _ = writeln!(out, "impl std::str::FromStr for {name} {{");
        out.push_str("    type Err = String;\n\n");
        out.push_str(
            "    fn from_str(text: &str) -> Result<Self, String> {\n        match text {\n",
        );
        for value in values {
            let _ = writeln!(
                out,
                "            {value:?} => Ok({name}::{}),",
                enum_variant(value)
            );
        }
        let listed = values
            .iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "            other => Err(format!(\"must be one of {}, got {{other:?}}\")),",
            listed.replace('"', "\\\"")
        );
        out.push_str("        }\n    }\n}\n\n");
    }

    /// The conversions between every two positions one of which accepts some of the classes of
    /// the other: `From` the narrower into the wider, `TryFrom` back.
    fn emit_conversions(&self, out: &mut String) {
        let positions: Vec<(&str, BTreeSet<&str>)> = self
            .defs
            .iter()
            .filter_map(|(key, def)| match def {
                Def::Position(keys) => Some((*key, self.class_keys(keys))),
                Def::Class(..) | Def::Record(_) => None,
            })
            .collect();
        for (wide, wide_classes) in &positions {
            for (narrow, narrow_classes) in &positions {
                if narrow_classes.len() < wide_classes.len()
                    && narrow_classes.is_subset(wide_classes)
                {
                    self.emit_conversion(out, wide, narrow, narrow_classes);
                }
            }
        }
    }

    /// The keys among `keys` that are classes.
    fn class_keys<'k>(&self, keys: &'k [String]) -> BTreeSet<&'k str> {
        keys.iter()
            .map(String::as_str)
            .filter(|key| matches!(self.defs.get(key), Some(Def::Class(..))))
            .collect()
    }

    /// `From` the `narrow` position into the `wide` one, which accepts all its `classes`, and
    /// `TryFrom` back, which gives a configuration of another class back as it is.
    fn emit_conversion(
        &self,
        out: &mut String,
        wide: &str,
        narrow: &str,
        classes: &BTreeSet<&str>,
    ) {
        let (w, n) = (&self.names[wide], &self.names[narrow]);
        let arms = |arm: &dyn Fn(&str) -> String| -> String {
            classes
                .iter()
                .map(|key| {
                    format!(
                        "            {}\n",
                        arm(self.names[key].trim_end_matches("Config"))
                    )
                })
                .collect()
        };
        let into_wide = arms(&|v| format!("{n}::{v}(c) => {w}::{v}(c),"));
        let into_narrow = arms(&|v| format!("{w}::{v}(c) => Ok({n}::{v}(c)),"));
        doc(
            out,
            "",
            &format!("What fits a `{narrow}` position fits a `{wide}` position"),
        );
        let _ = write!(
            out,
            "impl From<{n}> for {w} {{\n    fn from(config: {n}) -> Self {{\n        match config \
             {{\n{into_wide}        }}\n    }}\n}}\n\n"
        );
        let what = format!(
            "A `{wide}` configuration that fits a `{narrow}` position; the configuration itself \
             when it does not"
        );
        doc(out, "", &what);
        let _ = write!(
            out,
            "impl TryFrom<{w}> for {n} {{\n    type Error = {w};\n\n    fn try_from(config: {w}) \
             -> Result<Self, {w}> {{\n        match config {{\n{into_narrow}            other => \
             Err(other),\n        }}\n    }}\n}}\n\n"
        );
    }

    /// The enumerations of the kinds a stand-in may declare, one per position that lists them.
    fn emit_stand_in_kinds(&self, out: &mut String) {
        for (key, kinds) in &self.stand_in_kinds {
            let base = self.names[key].trim_start_matches("Any");
            let what = format!("The `kind` of a stand-in (`JsObjectConfig`) in a `{key}` position");
            self.emit_string_enum(out, &format!("Js{base}Kind"), &what, kinds);
        }
    }

    /// The whole generated module.
    fn emit(&self) -> String {
        let mut out =
            String::from("// Generated by build/config_types.rs from src/config/schema.json.\n\n");
        out.push_str("use serde::{Deserialize, Serialize};\n\n");
        out.push_str("use super::tagged::{config_enum, ConfigType, Typed};\n\n");
        for (key, id, def) in self.classes() {
            self.emit_struct(&mut out, key, id, def);
        }
        for (key, def) in &self.defs {
            if let Def::Record(def) = def {
                self.emit_struct(&mut out, key, "", def);
            }
        }
        for (key, def) in &self.defs {
            if let Def::Position(keys) = def {
                self.emit_tagged(
                    &mut out,
                    &self.names[key],
                    &format!("What fits a `{key}` position"),
                    keys,
                );
            }
        }
        let all: Vec<String> = self.classes().map(|(k, _, _)| k.to_string()).collect();
        self.emit_tagged(
            &mut out,
            "AnyConfig",
            "Any configuration class the core reads",
            &all,
        );
        self.emit_conversions(&mut out);
        for (name, values) in self.enums.values() {
            let listed: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            let what = format!("One of {}", listed.join(", "));
            self.emit_string_enum(&mut out, name, &what, values);
        }
        self.emit_stand_in_kinds(&mut out);
        out
    }
}

/// The Rust source of the configuration types described by `schema` (the text of schema.json).
///
/// # Panics
/// When `schema` is not JSON: the build cannot go on without its types.
pub fn generate(schema: &str) -> String {
    let schema: Value = match serde_json::from_str(schema) {
        Ok(schema) => schema,
        Err(e) => panic!("src/config/schema.json is not JSON: {e}"),
    };
    Model::read(&schema).emit()
}
