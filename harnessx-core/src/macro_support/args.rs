//! Decoding a validated arguments object into a tool function's parameters.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// The arguments object of one call, taken apart one parameter at a time.
#[derive(Debug)]
pub struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// Takes the arguments object (`null` counts as `{}`).
    pub fn new(args: Value) -> Result<Self, ToolError> {
        match args {
            Value::Object(map) => Ok(Self { map }),
            Value::Null => Ok(Self { map: Map::new() }),
            other => Err(ToolError::new(format!(
                "invalid arguments: expected a JSON object, got {}",
                crate::schema::kind_of(&other)
            ))),
        }
    }

    /// A parameter that must be present.
    pub fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ToolError> {
        match self.map.remove(name) {
            Some(value) => decode(name, value),
            None => Err(missing(name)),
        }
    }

    /// The raw value of a parameter, if present (non-generic: the shared handlers decode it
    /// themselves, so each parameter type costs one small generic function).
    pub(crate) fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    /// A parameter with a default: `None` when absent.
    pub fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ToolError> {
        self.map.remove(name).map(|value| decode(name, value)).transpose()
    }
}

fn decode<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, ToolError> {
    serde_json::from_value(value).map_err(|e| invalid(name, e))
}

/// The error for a required parameter that is absent.
pub(crate) fn missing(name: &str) -> ToolError {
    ToolError::new(format!("missing required argument `{name}`"))
}

/// The error for a parameter whose value does not decode.
pub(crate) fn invalid(name: &str, e: serde_json::Error) -> ToolError {
    ToolError::new(format!("invalid argument `{name}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn takes_parameters_by_name() {
        let mut args = Args::new(json!({"a": 2, "b": "x"})).unwrap();
        assert_eq!(args.required::<i64>("a").unwrap(), 2);
        assert_eq!(args.optional::<String>("b").unwrap().as_deref(), Some("x"));
        assert_eq!(args.optional::<String>("c").unwrap(), None);
    }

    #[test]
    fn errors_name_the_argument() {
        let mut args = Args::new(Value::Null).unwrap();
        assert_eq!(args.required::<i64>("a").unwrap_err().message(), "missing required argument `a`");
        let mut args = Args::new(json!({"a": "x"})).unwrap();
        let err = args.required::<i64>("a").unwrap_err();
        assert!(err.message().starts_with("invalid argument `a`: invalid type: string"), "{err}");
        assert!(Args::new(json!([1])).is_err());
    }
}
