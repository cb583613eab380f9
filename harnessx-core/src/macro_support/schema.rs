//! Building the canonical input schema of a `#[tool]` function, once per tool.
//!
//! The macro recognises the common types by their spelling and composes their schemas
//! from the functions here; any other type goes through [`ParamSchema`], implemented for
//! every `schemars::JsonSchema` type, and is inlined into canonical form (no `$ref`,
//! `$defs`, `$schema` or `title`).

use serde_json::{Map, Value, json};

/// A parameter type whose JSON Schema comes from `schemars`.
///
/// Generated code reaches it through a trait of each parameter's own (see
/// `harnessx-macros`' `expand::schema_traits`), whose "no JSON Schema" error names the
/// parameter; the message lives there.
pub trait ParamSchema {
    /// The canonical schema of the type.
    fn param_schema() -> Value;
}

impl<T: schemars::JsonSchema + ?Sized> ParamSchema for T {
    fn param_schema() -> Value {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .into_generator();
        let mut schema = match Value::from(generator.subschema_for::<T>()) {
            // The boolean schemas: `true` accepts anything, `false` nothing.
            Value::Bool(true) => json!({}),
            Value::Bool(false) => json!({"not": {}}),
            other => other,
        };
        canonicalize(&mut schema);
        schema
    }
}

/// The schema of `T` (see [`ParamSchema`]).
pub fn of<T: ParamSchema + ?Sized>() -> Value {
    T::param_schema()
}

/// A schema the macro wrote out as JSON text at compile time.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("harnessx: generated schema is not JSON ({e}): {text}"))
}

/// `bool`.
pub fn boolean() -> Value {
    json!({"type": "boolean"})
}

/// An unbounded integer (`i64`, `isize`, `i128`).
pub fn integer() -> Value {
    json!({"type": "integer"})
}

/// An integer within `min..=max` (the narrower integer types).
pub fn integer_range(min: i64, max: i64) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}

/// A non-negative integer (`u64`, `usize`, `u128`).
pub fn unsigned() -> Value {
    json!({"type": "integer", "minimum": 0})
}

/// A float.
pub fn number() -> Value {
    json!({"type": "number"})
}

/// A string.
pub fn string() -> Value {
    json!({"type": "string"})
}

/// One character.
pub fn character() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 1})
}

/// A list of `items`.
pub fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// An object with string keys and `values`.
pub fn map(values: Value) -> Value {
    json!({"type": "object", "additionalProperties": values})
}

/// `inner` or `null` (`Option<T>`).
pub fn nullable(inner: Value) -> Value {
    let Value::Object(mut obj) = inner else { return inner };
    let simple_type = match obj.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        _ => None,
    };
    match simple_type {
        Some(t) if t == "null" => Value::Object(obj),
        Some(t) if !obj.contains_key("const") => {
            obj.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(choices)) = obj.get_mut("enum")
                && !choices.contains(&Value::Null)
            {
                choices.push(Value::Null);
            }
            Value::Object(obj)
        }
        _ => json!({"anyOf": [Value::Object(obj), {"type": "null"}]}),
    }
}

/// Restricts `schema` to fixed `choices` (`#[arg(one_of = [..])]`); a nullable schema
/// (an `Option` parameter) keeps admitting `null`.
pub fn one_of(schema: Value, mut choices: Vec<Value>) -> Value {
    let Value::Object(mut obj) = schema else { return schema };
    let nullable = matches!(obj.get("type"), Some(Value::Array(types)) if types.iter().any(|t| t == "null"));
    if nullable && !choices.contains(&Value::Null) {
        choices.push(Value::Null);
    }
    obj.insert("enum".into(), Value::Array(choices));
    Value::Object(obj)
}

/// A property: its schema with the parameter's description and default, if any.
pub fn property(schema: Value, description: Option<&str>, default: Option<Value>) -> Value {
    let mut obj = match schema {
        Value::Object(obj) => obj,
        other => return other,
    };
    if let Some(d) = description {
        obj.insert("description".into(), Value::String(d.to_owned()));
    }
    if let Some(d) = default {
        obj.insert("default".into(), d);
    }
    Value::Object(obj)
}

/// The arguments object: properties in declaration order, then the required names.
pub fn object(properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let mut obj = Map::new();
    obj.insert("type".into(), Value::String("object".into()));
    let props: Map<String, Value> = properties.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    obj.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        obj.insert("required".into(), required.iter().map(|r| Value::String((*r).to_owned())).collect());
    }
    Value::Object(obj)
}

/// Keywords whose value is one schema.
const SCHEMA_KEYWORDS: [&str; 10] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LIST_KEYWORDS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];

/// Puts a generated schema in canonical form, in place: drops `$schema`, `$id`, `title`,
/// `$defs`/`definitions` and `$comment` at every schema position (never inside `enum`,
/// `const`, `default` or `examples`, nor a property that happens to be called `title`),
/// and replaces a `$ref` that is left (a recursive type) by `{}` (any value).
pub fn canonicalize(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    if obj.contains_key("$ref") {
        *schema = json!({});
        return;
    }
    for key in ["$schema", "$id", "title", "$defs", "definitions", "$comment"] {
        obj.shift_remove(key);
    }
    for key in SCHEMA_KEYWORDS {
        if let Some(sub) = obj.get_mut(key) {
            canonicalize(sub);
        }
    }
    for key in SCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            list.iter_mut().for_each(canonicalize);
        }
    }
    for key in SCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(map)) = obj.get_mut(key) {
            map.values_mut().for_each(canonicalize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_forms() {
        assert_eq!(nullable(integer()), json!({"type": ["integer", "null"]}));
        assert_eq!(
            nullable(one_of(string(), vec![json!("a")])),
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        assert_eq!(nullable(json!({})), json!({"anyOf": [{}, {"type": "null"}]}));
    }

    #[test]
    fn canonical_form_strips_only_keywords() {
        let mut s = json!({
            "$schema": "x", "title": "T", "type": "object",
            "properties": {"title": {"type": "string", "title": "Title"}, "next": {"$ref": "#/$defs/T"}},
            "$defs": {"T": {}}, "default": {"title": "kept"}
        });
        canonicalize(&mut s);
        assert_eq!(
            s,
            json!({"type": "object", "properties": {"title": {"type": "string"}, "next": {}},
                   "default": {"title": "kept"}})
        );
    }

    #[test]
    fn objects_list_properties_in_order() {
        let s = object(vec![("b", integer()), ("a", string())], &["b"]);
        assert_eq!(
            s.to_string(),
            r#"{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}},"required":["b"]}"#
        );
        assert_eq!(object(vec![], &[]), json!({"type": "object", "properties": {}}));
    }
}
