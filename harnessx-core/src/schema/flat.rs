//! Flat input schemas, checked straight from the argument text.
//!
//! Most tools take a handful of scalar arguments (`{"a": 2, "b": 3}`), and their schema
//! says no more than each argument's type, its integer bounds and which are required:
//! what `#[tool]` writes for `i64`, `u32`, `f64`, `bool`, `String` and their `Option`s. For
//! such a schema, [`FlatSchema::accepts`] checks the JSON text in one pass without building
//! a `serde_json::Value` (no map, no hashing, no allocation), and a handler that can decode
//! its arguments from text ([`AsyncToolHandler::call_json`]) takes them from there.
//!
//! It only ever says yes where the compiled schema says yes: anything it is not sure of
//! (an unknown or repeated key, a float for an integer, a nested value, text that is not
//! an object, a schema keyword it does not know) is a no, and the call takes the general
//! path, which parses the text, checks it with the compiled schema and gives the one-line
//! error. A no is never an error by itself.
//!
//! [`AsyncToolHandler::call_json`]: crate::AsyncToolHandler::call_json

use std::fmt;

use serde::de;
use serde_json::Value;

mod check;
mod decode;
mod text;

pub(crate) use decode::{decode_plain, decode_plain_value};
pub(crate) use text::locate_values;
use text::same_bytes;

/// A JSON type a flat property may take.
const INTEGER: u8 = 1;
const NUMBER: u8 = 1 << 1;
const STRING: u8 = 1 << 2;
const BOOLEAN: u8 = 1 << 3;
const NULL: u8 = 1 << 4;

/// Most properties a flat schema has (one bit each in a `u64`).
const MAX_PROPERTIES: usize = 64;

/// Keywords of the schema itself that change nothing about which objects it accepts
/// beyond what is read here.
const ROOT_KEYWORDS: &[&str] =
    &["type", "properties", "required", "additionalProperties", "description", "title", "$schema"];

/// Keywords of a property schema that are read here or only annotate.
const PROPERTY_KEYWORDS: &[&str] =
    &["type", "minimum", "maximum", "description", "title", "default", "examples", "deprecated"];

/// One property of a flat schema.
#[derive(Debug)]
struct Property {
    name: Box<str>,
    /// The JSON types it may take (a set of the flags above).
    kinds: u8,
    /// Integer bounds (`minimum`, `maximum`), when given as integers.
    min: Option<i128>,
    max: Option<i128>,
}

/// An input schema that is an object of scalar properties (see the module docs).
#[derive(Debug)]
pub(crate) struct FlatSchema {
    properties: Box<[Property]>,
    /// The required properties, one bit per index in `properties`.
    required: u64,
}

impl FlatSchema {
    /// The flat form of `schema`, or `None` when it says more than a flat schema can.
    pub(crate) fn of(schema: &Value) -> Option<Self> {
        let root = schema.as_object()?;
        if root.keys().any(|k| !ROOT_KEYWORDS.contains(&k.as_str())) {
            return None;
        }
        match root.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(_) => return None,
        }
        match root.get("additionalProperties") {
            None | Some(Value::Bool(_)) => {}
            Some(_) => return None,
        }
        if root.get("$schema").is_some_and(|s| !s.is_string()) {
            return None;
        }
        let properties: Vec<Property> = match root.get("properties") {
            None => Vec::new(),
            Some(Value::Object(p)) if p.len() <= MAX_PROPERTIES => {
                p.iter().map(|(name, schema)| property(name, schema)).collect::<Option<_>>()?
            }
            Some(_) => return None,
        };
        let mut required = 0u64;
        match root.get("required") {
            None => {}
            Some(Value::Array(names)) => {
                for name in names {
                    let name = name.as_str()?;
                    let index = properties.iter().position(|p| &*p.name == name)?;
                    required |= 1 << index;
                }
            }
            Some(_) => return None,
        }
        Some(Self { properties: properties.into_boxed_slice(), required })
    }

    fn index_of(&self, key: &str) -> Option<usize> {
        self.properties.iter().position(|p| same_bytes(p.name.as_bytes(), key.as_bytes()))
    }
}

/// A property schema's flat form.
fn property(name: &str, schema: &Value) -> Option<Property> {
    let schema = schema.as_object()?;
    if schema.keys().any(|k| !PROPERTY_KEYWORDS.contains(&k.as_str())) {
        return None;
    }
    let kinds = match schema.get("type")? {
        Value::String(t) => kind(t)?,
        Value::Array(types) if !types.is_empty() => {
            types.iter().try_fold(0, |kinds, t| Some(kinds | kind(t.as_str()?)?))?
        }
        _ => return None,
    };
    let bound = |key: &str| -> Option<Option<i128>> {
        match schema.get(key) {
            None => Some(None),
            // Bounds apply to numbers only: on other kinds they would say nothing, but
            // such a schema is not what this path is for.
            Some(Value::Number(n)) if kinds & (INTEGER | NUMBER) != 0 => {
                n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)).map(Some)
            }
            Some(_) => None,
        }
    };
    Some(Property { name: name.into(), kinds, min: bound("minimum")?, max: bound("maximum")? })
}

fn kind(name: &str) -> Option<u8> {
    Some(match name {
        "integer" => INTEGER,
        "number" => NUMBER,
        "string" => STRING,
        "boolean" => BOOLEAN,
        "null" => NULL,
        _ => return None,
    })
}

/// Why the text is not accepted here (never shown: the general path says why).
#[derive(Debug)]
struct No;

impl fmt::Display for No {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not checked here")
    }
}

impl std::error::Error for No {}

impl de::Error for No {
    fn custom<T: fmt::Display>(_: T) -> Self {
        No
    }
}

fn no<E: de::Error>() -> E {
    E::custom(No)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_schemas_that_say_no_more_are_flat() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "format": "date"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0.5}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "minimum": 1}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}),
            json!({"type": "object", "properties": {"a": {}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "minProperties": 1}),
            json!({"type": "object", "$defs": {}}),
            json!({"type": "array"}),
            json!(true),
        ] {
            assert!(FlatSchema::of(&schema).is_none(), "{schema}");
        }
        let many: serde_json::Map<String, Value> =
            (0..65).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
        assert!(FlatSchema::of(&json!({"type": "object", "properties": many})).is_none());
    }
}
