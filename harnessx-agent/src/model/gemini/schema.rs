//! Gemini's schema dialect: a canonical JSON Schema translated to the OpenAPI 3.0 subset
//! Gemini takes.

use serde_json::{Map, Value, json};

/// The keywords of Gemini's schema dialect (the OpenAPI 3.0 subset of its `Schema`
/// object) that [`gemini_schema`] keeps; every other keyword is left out.
pub const GEMINI_SCHEMA_KEYWORDS: [&str; 19] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
];

/// The JSON Schema types Gemini's dialect has (`null` is `nullable` there).
const GEMINI_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// Beyond this depth a schema is cut to `{}` (canonical schemas are far shallower).
const MAX_SCHEMA_DEPTH: usize = 64;

/// A canonical JSON Schema in Gemini's dialect: the OpenAPI 3.0 subset that
/// `functionDeclarations[].parameters` and `generationConfig.responseSchema` take.
///
/// Why that field and not `parametersJsonSchema` / `responseJsonSchema` (which take JSON
/// Schema as it is): the subset is accepted by every Gemini model and by Vertex AI,
/// the JSON Schema fields only by newer models. So the schema is translated:
///
/// - only [`GEMINI_SCHEMA_KEYWORDS`] are kept: `additionalProperties`, `$schema`,
///   `default`, `examples`, `exclusiveMinimum`, `multipleOf`, `not`, `patternProperties`,
///   `prefixItems`, `uniqueItems` and the rest are left out (the engine still checks the
///   arguments against the whole schema);
/// - a `type` list becomes one type plus `nullable: true` (several types: `anyOf`);
///   `{"type": "null"}` branches of `anyOf` / `oneOf` become `nullable` too, and `oneOf`
///   becomes `anyOf`; a single remaining branch is merged in;
/// - `const` becomes a one-value `enum`; an `enum` of other than strings (Gemini's enums
///   are strings) is left out and its values are named in the description;
/// - `required` keeps only names in `properties`; an object without properties is
///   `{"type": "object"}`; `format` only where Gemini knows it (`enum`, `date-time` for
///   strings, `int32`/`int64`, `float`/`double`).
///
/// ```
/// use harnessx_agent::model::gemini::gemini_schema;
/// use serde_json::json;
///
/// let canonical = json!({
///     "type": "object",
///     "properties": {"unit": {"const": "c"}, "note": {"type": ["string", "null"], "default": null}},
///     "required": ["unit", "note"],
///     "additionalProperties": false
/// });
/// assert_eq!(gemini_schema(&canonical), json!({
///     "type": "object",
///     "properties": {"unit": {"type": "string", "enum": ["c"]}, "note": {"type": "string", "nullable": true}},
///     "required": ["unit", "note"]
/// }));
/// ```
pub fn gemini_schema(schema: &Value) -> Value {
    walk_schema(schema, 0)
}

fn walk_schema(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else { return json!({}) };
    if depth > MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    let mut nullable = map.get("nullable").and_then(Value::as_bool).unwrap_or(false);
    let mut branches: Vec<Value> = Vec::new();
    match map.get("type") {
        Some(Value::String(t)) if GEMINI_TYPES.contains(&t.as_str()) => {
            out.insert("type".into(), json!(t));
        }
        Some(Value::String(t)) if t == "null" => nullable = true,
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            nullable |= named.contains(&"null");
            let kept: Vec<&str> = named.into_iter().filter(|t| GEMINI_TYPES.contains(t)).collect();
            match kept.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                many => branches.extend(many.iter().map(|t| json!({"type": t}))),
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get(key) {
            for branch in list {
                if branch.get("type").and_then(Value::as_str) == Some("null")
                    && branch.as_object().map(Map::len) == Some(1)
                {
                    nullable = true;
                } else {
                    branches.push(walk_schema(branch, depth + 1));
                }
            }
        }
    }
    if let Some(Value::Array(list)) = map.get("allOf") {
        // All must hold: merged into one (properties and requirements joined).
        for branch in list {
            if let Value::Object(merged) = walk_schema(branch, depth + 1) {
                merge_into(&mut out, merged);
            }
        }
    }
    match branches.len() {
        0 => {}
        1 => {
            if let Some(Value::Object(one)) = branches.pop() {
                merge_into(&mut out, one);
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(branches));
        }
    }
    for (key, value) in map {
        match (key.as_str(), value) {
            ("title" | "description" | "pattern", Value::String(_)) => {
                out.insert(key.clone(), value.clone());
            }
            (
                "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minLength" | "maxLength",
                Value::Number(n),
            ) if n.is_u64() => {
                out.insert(key.clone(), value.clone());
            }
            ("minimum" | "maximum", Value::Number(_)) => {
                out.insert(key.clone(), value.clone());
            }
            ("format", Value::String(f)) => {
                let known = match map.get("type").and_then(Value::as_str) {
                    Some("string") => matches!(f.as_str(), "enum" | "date-time"),
                    Some("integer") => matches!(f.as_str(), "int32" | "int64"),
                    Some("number") => matches!(f.as_str(), "float" | "double"),
                    _ => false,
                };
                if known {
                    out.insert(key.clone(), value.clone());
                }
            }
            ("items", Value::Object(_)) => {
                out.insert("items".into(), walk_schema(value, depth + 1));
            }
            ("properties", Value::Object(props)) if !props.is_empty() => {
                let props: Map<String, Value> =
                    props.iter().map(|(k, v)| (k.clone(), walk_schema(v, depth + 1))).collect();
                out.insert("properties".into(), Value::Object(props));
            }
            _ => {}
        }
    }
    let values = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(values) = values {
        let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        let nulls = values.iter().filter(|v| v.is_null()).count();
        nullable |= nulls > 0;
        if strings.len() + nulls == values.len() && !strings.is_empty() {
            out.insert("type".into(), json!("string"));
            out.insert("enum".into(), json!(strings));
        } else if strings.len() + nulls < values.len() {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let note = format!("One of: {}.", listed.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {note}"),
                _ => note,
            };
            out.insert("description".into(), json!(description));
        }
    }
    if let Some(Value::Array(required)) = map.get("required") {
        let names: Vec<&Value> = required
            .iter()
            .filter(|name| {
                name.as_str().is_some_and(|n| out.get("properties").and_then(|p| p.get(n)).is_some())
            })
            .collect();
        if !names.is_empty() {
            out.insert("required".into(), json!(names));
        }
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

/// Adds `from` to `into`: properties and `required` joined, other keys kept from `into`.
fn merge_into(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(props)), Value::Object(more)) if key == "properties" => props.extend(more),
            (Some(Value::Array(names)), Value::Array(more)) if key == "required" => {
                for name in more {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            (Some(_), _) => {}
            (None, value) => {
                into.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_keeps_only_what_gemini_takes() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "n": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2, "format": "uint32"},
                "k": {"enum": [1, 2, null], "description": "Kind."},
                "u": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                "o": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
                "v": {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}
            },
            "required": ["n", "missing"],
            "additionalProperties": false
        });
        assert_eq!(
            gemini_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "k": {"description": "Kind. One of: 1, 2, null.", "nullable": true},
                    "u": {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true},
                    "o": {"type": "object"},
                    "v": {"type": "string", "maxLength": 3, "nullable": true}
                },
                "required": ["n"]
            })
        );
    }

    #[test]
    fn schema_nested_past_the_bound_is_cut_not_overflowed() {
        let mut deep = json!({"type": "string"});
        for _ in 0..1_000 {
            deep = json!({"type": "array", "items": deep});
        }
        let out = gemini_schema(&deep);
        let mut depth = 0;
        let mut at = &out;
        while let Some(next) = at.get("items") {
            at = next;
            depth += 1;
        }
        assert!(depth <= MAX_SCHEMA_DEPTH + 1, "{depth}");
    }
}
