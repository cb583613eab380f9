//! Input schemas: compiling them once, checking arguments against them (the one-line
//! error that names the wrong field), their canonical form ([`canonical_schema`], the one
//! set of rules for every schema a model sees) and the builders `#[tool]` composes
//! schemas from ([`build`]).

pub mod build;
mod canonical;
mod flat;

pub use canonical::{canonical_schema, canonical_subschema};
pub(crate) use flat::{FlatSchema, decode_plain, decode_plain_value, locate_values};

use serde_json::Value;

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
        Some(error_line(tool, &display_path(error.instance_path().as_str()), &error))
    }
}

/// A JSON Schema compiled once, checking any value (not only an object of arguments) with
/// the one-line error of an argument error: the subject, the path of the first wrong
/// field, what is wrong. For schemas that are not a tool's input: an agent's output
/// schema (`invalid output: items[0].name: 5 is not of type "string"`).
///
/// ```
/// use harnessx_core::schema::ValueSchema;
/// use serde_json::json;
///
/// let schema = ValueSchema::compile(&json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}},
///     "required": ["city"]
/// }))
/// .unwrap();
/// assert_eq!(schema.check("invalid output", &json!({"city": "Paris"})), None);
/// assert_eq!(
///     schema.check("invalid output", &json!({"city": 5})).unwrap(),
///     r#"invalid output: city: 5 is not of type "string""#
/// );
/// assert!(ValueSchema::compile(&json!({"type": 5})).is_err());
/// ```
pub struct ValueSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ValueSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueSchema").finish_non_exhaustive()
    }
}

impl ValueSchema {
    /// Compiles `schema` (JSON Schema 2020-12 unless it says otherwise). The error is one
    /// line saying why the schema is not usable.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| e.to_string().split_whitespace().collect::<Vec<_>>().join(" "))?;
        Ok(Self { validator })
    }

    /// Whether `value` conforms.
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// `None` when `value` conforms; otherwise one line, `{subject}: {path}: {message}`
    /// (without `{path}: ` for the value as a whole), naming the first wrong field, at most
    /// 400 bytes: the wording of every argument error.
    pub fn check(&self, subject: &str, value: &Value) -> Option<String> {
        let error = self.validator.validate(value).err()?;
        let path = display_path(error.instance_path().as_str());
        Some(crate::tool::decode::subject_line(format_args!("{subject}"), &path, &error))
    }
}

/// The one-line form of an argument error for another subject than a tool's arguments:
/// `{subject}: {path}: {message}` (without `{path}: ` when it is empty), whitespace
/// folded to single spaces, at most 400 bytes. For a value that decoded badly after the
/// schema let it through (a serde error).
pub fn error_line_for(subject: &str, path: &str, message: &dyn std::fmt::Display) -> String {
    crate::tool::decode::subject_line(format_args!("{subject}"), path, message)
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

/// A short name for a JSON value's type, for messages (`an object`, `a string`, `null`).
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
    fn canonical_json_sorts_keys() {
        assert_eq!(
            canonical_json(&json!({"b":1,"a":{"d":[1,{"z":0,"y":1}],"c":null}})),
            r#"{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}"#
        );
    }
}
