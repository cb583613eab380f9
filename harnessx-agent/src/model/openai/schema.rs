//! Strict mode's schema dialect: a canonical JSON Schema with every object closed and
//! every property required (the optional ones nullable).

use serde_json::{Value, json};

/// The strict-mode form of a canonical schema: every object gets
/// `"additionalProperties": false` and lists all its properties in `required`; a property
/// that was optional becomes nullable (`"type": ["string", "null"]`, or
/// `anyOf [.., {"type": "null"}]` when it has no plain `type`). Applied to nested objects,
/// array items, `anyOf`/`oneOf`/`allOf` branches and `$defs`.
pub fn strict_schema(schema: &Value) -> Value {
    let mut schema = schema.clone();
    make_strict(&mut schema);
    schema
}

fn make_strict(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    for key in ["items", "additionalItems", "not"] {
        if let Some(sub) = map.get_mut(key) {
            make_strict(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            subs.iter_mut().for_each(make_strict);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get_mut(key) {
            defs.values_mut().for_each(make_strict);
        }
    }
    let is_object = map
        .get("type")
        .is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.iter().any(|t| t == "object")))
        || map.contains_key("properties");
    if !is_object {
        return;
    }
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    };
    let mut all = Vec::new();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            make_strict(prop);
            if !required.contains(name) {
                make_nullable(prop);
            }
            all.push(Value::String(name.clone()));
        }
    }
    map.insert("required".into(), Value::Array(all));
    map.insert("additionalProperties".into(), Value::Bool(false));
}

fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let null = Value::String("null".into());
    match map.get_mut("type") {
        Some(Value::String(t)) if t == "null" => return,
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null.clone());
            }
        }
        _ => {
            let inner = std::mem::take(map);
            *schema = json!({"anyOf": [Value::Object(inner), {"type": "null"}]});
            return;
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_schema_requires_everything_and_nulls_the_optional() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "opts": {"type": "object", "properties": {"x": {"type": ["number"]}}},
                "any": {"$ref": "#/$defs/T"}
            },
            "required": ["path"],
            "$defs": {"T": {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"]}}
        });
        assert_eq!(
            strict_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": ["integer", "null"]},
                    "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                    "opts": {
                        "type": ["object", "null"],
                        "properties": {"x": {"type": ["number", "null"]}},
                        "required": ["x"],
                        "additionalProperties": false
                    },
                    "any": {"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]}
                },
                "required": ["path", "limit", "mode", "opts", "any"],
                "$defs": {"T": {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"], "additionalProperties": false}},
                "additionalProperties": false
            })
        );
    }
}
