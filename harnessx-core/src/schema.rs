//! Input schemas: compiling them once, checking arguments against them, and the one-line
//! error that names the wrong field.

use serde_json::{Map, Value};

use crate::error::RegistryError;
use crate::tool::decode::error_line;

/// A compiled input schema (JSON Schema 2020-12 unless the schema says otherwise).
pub(crate) struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    /// Checks that the schema is usable as a tool's input schema and compiles it.
    pub(crate) fn compile(tool: &str, schema: &Value) -> Result<Self, RegistryError> {
        let invalid = |reason: String| RegistryError::InvalidSchema { name: tool.to_owned(), reason };
        let Some(obj) = schema.as_object() else {
            return Err(invalid(format!("expected a JSON object schema, got {}", kind_of(schema))));
        };
        match obj.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => {
                return Err(invalid(format!(
                    "the top-level \"type\" must be \"object\" (tool arguments are a JSON object), got {other}"
                )));
            }
        }
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| invalid(e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")))?;
        Ok(Self { validator })
    }

    /// `None` when `args` conform; otherwise one line naming the first wrong field.
    pub(crate) fn check(&self, tool: &str, args: &Value) -> Option<String> {
        let error = self.validator.validate(args).err()?;
        // The same line as a decoding error (see `tool::decode`).
        Some(error_line(tool, &display_path(error.instance_path().as_str()), &error.to_string()))
    }
}

/// Turns a JSON pointer (`/items/0/name`) into `items[0].name`.
fn display_path(pointer: &str) -> String {
    let mut out = String::new();
    for raw in pointer.split('/').skip(1) {
        let mut seg = raw.replace("~1", "/").replace("~0", "~");
        if seg.chars().any(char::is_control) {
            // Keep the error on one line: show control characters escaped.
            seg = seg.escape_debug().to_string();
        }
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) && !out.is_empty() {
            out.push('[');
            out.push_str(&seg);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg);
        }
    }
    out
}

/// A short name for a JSON value's type, for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The canonical, provider-neutral form of an input schema: an object schema with
/// `properties` present, no `$schema` or top-level `title`, and local references
/// (`#/$defs/..`, `#/definitions/..`) inlined, so providers that reject `$ref` accept it.
/// A recursive reference cannot be inlined: it stays, with the definitions it needs.
/// Everything else is kept.
pub fn canonical_schema(schema: &Value) -> Value {
    let empty = Map::new();
    let obj = schema.as_object().unwrap_or(&empty);
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(d)) = obj.get(key) {
            for (name, def) in d {
                defs.insert(format!("#/{key}/{}", name.replace('~', "~0").replace('/', "~1")), def.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::String("object".into()));
    let mut inliner = Inliner { defs: &defs, stack: Vec::new(), kept_ref: false };
    for (k, v) in obj {
        if matches!(k.as_str(), "$schema" | "title" | "$defs" | "definitions") {
            continue;
        }
        out.insert(k.clone(), inliner.inline(v));
    }
    if inliner.kept_ref {
        for key in ["$defs", "definitions"] {
            if let Some(d) = obj.get(key) {
                out.insert(key.into(), inliner.inline(d));
            }
        }
    }
    out.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    Value::Object(out)
}

struct Inliner<'a> {
    defs: &'a Map<String, Value>,
    stack: Vec<String>,
    kept_ref: bool,
}

impl Inliner<'_> {
    fn inline(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref")
                    && let Some(target) = self.defs.get(reference)
                {
                    if self.stack.contains(reference) {
                        self.kept_ref = true;
                        return value.clone();
                    }
                    self.stack.push(reference.clone());
                    let mut resolved = match self.inline(target) {
                        Value::Object(m) => m,
                        other => return other, // a boolean schema
                    };
                    self.stack.pop();
                    for (k, v) in map {
                        if k != "$ref" {
                            resolved.insert(k.clone(), self.inline(v));
                        }
                    }
                    resolved.remove("title");
                    return Value::Object(resolved);
                }
                Value::Object(map.iter().map(|(k, v)| (k.clone(), self.inline(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.inline(v)).collect()),
            other => other.clone(),
        }
    }
}

/// Serializes a value with object keys sorted at every level (for deduplication keys).
pub(crate) fn canonical_json(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calc() -> CompiledSchema {
        CompiledSchema::compile(
            "calculate",
            &json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}),
        )
        .unwrap()
    }

    #[test]
    fn type_error_names_the_field() {
        let line = calc().check("calculate", &json!({"a": 1, "b": "x"})).unwrap();
        assert_eq!(line, r#"invalid arguments for calculate: b: "x" is not of type "integer""#);
    }

    #[test]
    fn missing_field_is_named() {
        let line = calc().check("calculate", &json!({"a": 1})).unwrap();
        assert_eq!(line, r#"invalid arguments for calculate: "b" is a required property"#);
        assert!(calc().check("calculate", &json!({"a": 1, "b": 2})).is_none());
    }

    #[test]
    fn nested_paths_read_naturally() {
        assert_eq!(display_path("/items/0/name"), "items[0].name");
        assert_eq!(display_path("/a~1b"), "a/b");
        assert_eq!(display_path(""), "");
    }

    #[test]
    fn huge_values_keep_the_line_short() {
        let s = CompiledSchema::compile("t", &json!({"type":"object","properties":{"v":{"type":"integer"}}}))
            .unwrap();
        let line = s.check("t", &json!({"v": "x".repeat(10_000)})).unwrap();
        assert!(line.chars().count() <= crate::tool::decode::MAX_ERROR_LINE + 1, "{}", line.len());
        assert!(line.starts_with("invalid arguments for t: v: "));
        assert!(!line.contains('\n'));
    }

    #[test]
    fn non_object_schemas_are_rejected() {
        let err = CompiledSchema::compile("t", &json!({"type":"string"})).err().unwrap();
        assert!(err.to_string().contains("must be \"object\""), "{err}");
        assert!(CompiledSchema::compile("t", &json!([1])).is_err());
        assert!(
            CompiledSchema::compile("t", &json!({"type":"object","properties":{"a":{"type":"bogus"}}}))
                .is_err()
        );
    }

    #[test]
    fn local_references_are_inlined_and_recursive_ones_kept() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "point": {"$ref": "#/$defs/Point", "description": "Where."},
                "old": {"$ref": "#/definitions/Unit"},
                "tree": {"$ref": "#/$defs/Tree"}
            },
            "$defs": {
                "Point": {"title": "Point", "type": "object", "properties": {"x": {"type": "integer"}}},
                "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}
            },
            "definitions": {"Unit": {"enum": ["c", "f"]}}
        });
        let canon = canonical_schema(&schema);
        assert_eq!(
            canon["properties"]["point"],
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "description": "Where."})
        );
        assert_eq!(canon["properties"]["old"], json!({"enum": ["c", "f"]}));
        assert_eq!(
            canon["properties"]["tree"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Tree"})
        );
        assert!(canon.get("$defs").is_some(), "the recursive definition is kept");
        assert!(canon.get("$schema").is_none() && canon.get("title").is_none());
        // Without recursion, no definitions remain.
        let flat = canonical_schema(
            &json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "string"}}}),
        );
        assert_eq!(flat, json!({"type": "object", "properties": {"p": {"type": "string"}}}));
        // Instances valid against the original stay valid against the canonical form.
        let v = json!({"point": {"x": 1}, "old": "c", "tree": {"children": [{"children": []}]}});
        assert!(jsonschema::is_valid(&schema, &v) && jsonschema::is_valid(&canon, &v));
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(
            canonical_schema(&json!({"$schema":"x","title":"T"})),
            json!({"type":"object","properties":{}})
        );
        assert_eq!(
            canonical_json(&json!({"b":1,"a":{"d":[1,{"z":0,"y":1}],"c":null}})),
            r#"{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}"#
        );
    }
}
