//! The schema of a typed run: what the model is shown, and the check of an answer.
//!
//! The model sees the schema in the canonical form of tool schemas
//! ([`canonical_subschema`]: references inlined, no `$defs`, no `title`). Tool
//! parameters, OpenAI's and Anthropic's answer formats all take an object, so a schema of
//! another type (a list, a string, an enum of several shapes) is shown as the one
//! required property `response` of an object, and the answer's `response` is the value.
//!
//! An answer is validated against the schema as it was given (with its `$defs`, so a
//! recursive type is checked to its depth, where the canonical form accepts anything at
//! the recursion point), then decoded into the Rust type when there is one. Both errors
//! are one line naming the field, worded as argument errors are.

use serde_json::{Map, Value, json};

use harnessx_core::schema::{ValueSchema, canonical_subschema, error_line_for};
use harnessx_core::{MAX_JSON_DEPTH, depth};

/// A Rust type's decoding check (see `Output::of`).
pub(crate) type DecodeCheck = dyn Fn(&Value) -> Result<(), String> + Send + Sync;

/// The property a schema that is not an object is wrapped in.
pub(crate) const WRAPPED: &str = "response";

pub(crate) struct OutputSchema {
    /// As given.
    given: Value,
    /// As the model sees it.
    shown: Value,
    /// Whether `shown` wraps `given` in `{"response": ..}`.
    wrapped: bool,
    validator: ValueSchema,
}

impl OutputSchema {
    /// Checks and compiles `schema`. The error is one line.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        let Some(object) = schema.as_object() else {
            return Err(format!("a schema must be a JSON object, got {}", kind_of(schema)));
        };
        // Every walk below recurses: bounded first (serde_json bounds parsed text, not a
        // value built in memory).
        if depth::value_too_deep(schema, MAX_JSON_DEPTH) {
            return Err(format!("the schema nests more than {MAX_JSON_DEPTH} levels deep"));
        }
        let canonical = canonical_subschema(schema);
        let is_object = match canonical.get("type") {
            Some(Value::String(t)) => t == "object",
            None => canonical.get("properties").is_some_and(Value::is_object),
            Some(_) => false,
        };
        let (shown, wrapped, checked) = if is_object {
            let mut shown = Map::new();
            shown.insert("type".into(), json!("object"));
            if let Value::Object(body) = canonical {
                shown.extend(body);
            }
            shown.entry("properties").or_insert_with(|| json!({}));
            (Value::Object(shown), false, schema.clone())
        } else {
            let shown = json!({
                "type": "object",
                "properties": {WRAPPED: canonical},
                "required": [WRAPPED],
                "additionalProperties": false
            });
            // Checked as given: its definitions move to the root of the wrapper, where
            // its references (`#/$defs/..`) point.
            let mut inner = object.clone();
            let mut checked = Map::new();
            checked.insert("type".into(), json!("object"));
            for key in ["$schema", "$defs", "definitions"] {
                if let Some(v) = inner.remove(key) {
                    checked.insert(key.into(), v);
                }
            }
            checked.insert("properties".into(), json!({WRAPPED: Value::Object(inner)}));
            checked.insert("required".into(), json!([WRAPPED]));
            checked.insert("additionalProperties".into(), json!(false));
            (shown, true, Value::Object(checked))
        };
        let validator = ValueSchema::compile(&checked)?;
        Ok(Self { given: schema.clone(), shown, wrapped, validator })
    }

    pub(crate) fn given(&self) -> &Value {
        &self.given
    }

    pub(crate) fn shown(&self) -> &Value {
        &self.shown
    }

    /// The value of an answer (`answer` itself, or its `response`), or one line naming
    /// what is wrong, starting with `subject`.
    pub(crate) fn check(
        &self,
        answer: Value,
        subject: &str,
        decode: Option<&DecodeCheck>,
    ) -> Result<Value, String> {
        if let Some(line) = self.validator.check(subject, &answer) {
            return Err(line);
        }
        let value = match answer {
            Value::Object(mut map) if self.wrapped => map.remove(WRAPPED).unwrap_or_default(),
            other => other,
        };
        if let Some(decode) = decode
            && let Err(e) = decode(&value)
        {
            let path = if self.wrapped { WRAPPED } else { "" };
            return Err(error_line_for(subject, path, &e));
        }
        Ok(value)
    }

    /// `answer` with the `null`s OpenAI's strict mode makes the model send for optional
    /// properties left out: a property that is not required and whose schema does not
    /// take `null` loses its `null`, at every level the schema describes. (Strict mode
    /// makes every property required and the optional ones nullable; the schema as given
    /// is what the answer is checked against.)
    pub(crate) fn drop_strict_nulls(&self, answer: &mut Value) {
        drop_nulls(&self.shown, answer, 0);
    }
}

fn drop_nulls(schema: &Value, value: &mut Value, level: usize) {
    if level > MAX_JSON_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|name, v| {
                !(v.is_null()
                    && !required.contains(&name.as_str())
                    && properties.get(name).is_some_and(|p| !takes_null(p)))
            });
            for (name, v) in map.iter_mut() {
                if let Some(sub) = properties.get(name) {
                    drop_nulls(sub, v, level + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    drop_nulls(sub, item, level + 1);
                }
            }
        }
        _ => {}
    }
}

/// Whether a (canonical) schema may admit `null`: a `null` type, a `null` in its enum, or
/// a branch that does. Unsure means yes: the `null` is then left for validation.
fn takes_null(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else { return true };
    match map.get("type") {
        Some(Value::String(t)) => return t == "null",
        Some(Value::Array(types)) => return types.iter().any(|t| t == "null"),
        _ => {}
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.contains(&Value::Null);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            return branches.iter().any(takes_null);
        }
    }
    true
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_shown_canonical_and_other_schemas_wrapped() {
        let s = OutputSchema::new(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "City",
            "type": "object",
            "properties": {"at": {"$ref": "#/$defs/Point"}},
            "required": ["at"],
            "$defs": {"Point": {"title": "Point", "type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}
        }))
        .unwrap();
        assert_eq!(
            s.shown(),
            &json!({"type": "object", "properties": {"at": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}, "required": ["at"]})
        );
        assert_eq!(s.check(json!({"at": {"x": 1}}), "invalid output", None), Ok(json!({"at": {"x": 1}})));
        assert_eq!(
            s.check(json!({"at": {"x": "1"}}), "invalid output", None).unwrap_err(),
            r#"invalid output: at.x: "1" is not of type "integer""#
        );

        let list = OutputSchema::new(
            &json!({"type": "array", "items": {"$ref": "#/$defs/N"}, "$defs": {"N": {"type": "integer"}}}),
        )
        .unwrap();
        assert_eq!(
            list.shown(),
            &json!({"type": "object", "properties": {"response": {"type": "array", "items": {"type": "integer"}}}, "required": ["response"], "additionalProperties": false})
        );
        assert_eq!(list.check(json!({"response": [1, 2]}), "invalid output", None), Ok(json!([1, 2])));
        assert_eq!(
            list.check(json!({"response": [1, "x"]}), "invalid output", None).unwrap_err(),
            r#"invalid output: response[1]: "x" is not of type "integer""#
        );
        assert_eq!(
            list.check(json!([1]), "invalid output", None).unwrap_err(),
            r#"invalid output: [1] is not of type "object""#
        );
    }

    #[test]
    fn unusable_schemas_are_one_line_errors() {
        for (schema, wanted) in [
            (json!([1]), "a schema must be a JSON object, got an array"),
            (json!(true), "a schema must be a JSON object, got a boolean"),
            (json!("x"), "a schema must be a JSON object, got a string"),
        ] {
            assert_eq!(OutputSchema::new(&schema).err().as_deref(), Some(wanted));
        }
        let bad = OutputSchema::new(&json!({"type": 5})).err().unwrap();
        assert!(!bad.contains('\n') && !bad.is_empty(), "{bad}");
        let mut deep = json!({"type": "object"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert_eq!(
            OutputSchema::new(&deep).err().as_deref(),
            Some("the schema nests more than 100 levels deep")
        );
    }

    #[test]
    fn strict_nulls_of_optional_properties_are_dropped() {
        let s = OutputSchema::new(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "nick": {"type": "string"},
                "note": {"type": ["string", "null"]},
                "inner": {"type": "object", "properties": {"k": {"type": "integer"}}}
            },
            "required": ["name"]
        }))
        .unwrap();
        let mut answer = json!({"name": "a", "nick": null, "note": null, "inner": {"k": null}});
        s.drop_strict_nulls(&mut answer);
        assert_eq!(answer, json!({"name": "a", "note": null, "inner": {}}));
        // A required property keeps its null, for validation to refuse.
        let mut answer = json!({"name": null});
        s.drop_strict_nulls(&mut answer);
        assert_eq!(answer, json!({"name": null}));
    }
}
