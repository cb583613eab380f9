//! Building schemas: the pieces `#[tool]` composes a tool's input schema from, one
//! function per rule. The macro writes the schema of the types it recognises by spelling
//! as JSON text at compile time (it cannot call these); its twin of these rules lives in
//! `harnessx-macros/src/json.rs`, and `tests/macro_schema_rules.rs` checks the two give
//! the same text for every type the macro recognises.
//!
//! ```
//! use harnessx_core::schema::build::{integer, nullable, object, one_of, property, string};
//! use serde_json::json;
//!
//! let unit = property(one_of(nullable(string()), vec![json!("c"), json!("f")]), Some("Scale."), None);
//! let schema = object(vec![("n", integer()), ("unit", unit)], &["n", "unit"]);
//! assert_eq!(
//!     schema.to_string(),
//!     r#"{"type":"object","properties":{"n":{"type":"integer"},"unit":{"type":["string","null"],"enum":["c","f",null],"description":"Scale."}},"required":["n","unit"]}"#
//! );
//! ```

use serde_json::{Map, Value, json};

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

/// `inner` or `null` (`Option<T>`):
///
/// - a schema that already admits `null` (`{}`, or `"type": "null"`) stays as it is;
/// - a `type` (one name or a list of names) gains `"null"`, and an `enum` beside it gains
///   `null`: `{"type": ["integer", "null"]}`;
/// - anything else (a `const`, no `type`, ..) becomes `{"anyOf": [inner, {"type": "null"}]}`.
pub fn nullable(inner: Value) -> Value {
    let Value::Object(mut obj) = inner else { return inner };
    if obj.is_empty() || obj.contains_key("const") {
        return if obj.is_empty() { Value::Object(obj) } else { any_of_null(obj) };
    }
    match obj.get_mut("type") {
        Some(Value::String(t)) if t == "null" => return Value::Object(obj),
        Some(ty @ Value::String(_)) => *ty = json!([ty.take(), "null"]),
        Some(Value::Array(types)) if types.iter().all(Value::is_string) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
        }
        _ => return any_of_null(obj),
    }
    if let Some(Value::Array(choices)) = obj.get_mut("enum")
        && !choices.contains(&Value::Null)
    {
        choices.push(Value::Null);
    }
    Value::Object(obj)
}

fn any_of_null(obj: Map<String, Value>) -> Value {
    json!({"anyOf": [Value::Object(obj), {"type": "null"}]})
}

/// Restricts `schema` to fixed `choices` (`#[arg(one_of = [..])]`), as its `enum`; a
/// nullable schema (an `Option` parameter) keeps admitting `null`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_forms() {
        assert_eq!(nullable(integer()), json!({"type": ["integer", "null"]}));
        assert_eq!(nullable(nullable(integer())), json!({"type": ["integer", "null"]}));
        assert_eq!(
            nullable(one_of(string(), vec![json!("a")])),
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        assert_eq!(nullable(json!({})), json!({}));
        assert_eq!(nullable(json!({"type": "null"})), json!({"type": "null"}));
        assert_eq!(
            nullable(json!({"type": ["string", "integer"]})),
            json!({"type": ["string", "integer", "null"]})
        );
        assert_eq!(
            nullable(json!({"const": 1, "type": "integer"})),
            json!({"anyOf": [{"const": 1, "type": "integer"}, {"type": "null"}]})
        );
        assert_eq!(nullable(json!({"enum": [1]})), json!({"anyOf": [{"enum": [1]}, {"type": "null"}]}));
        // Key order is kept: `type` stays where it was.
        assert_eq!(
            nullable(character()).to_string(),
            r#"{"type":["string","null"],"minLength":1,"maxLength":1}"#
        );
    }

    #[test]
    fn one_of_keeps_null_for_nullable_schemas() {
        assert_eq!(one_of(integer(), vec![json!(1)]), json!({"type": "integer", "enum": [1]}));
        assert_eq!(
            one_of(nullable(integer()), vec![json!(1)]),
            json!({"type": ["integer", "null"], "enum": [1, null]})
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
