//! Options structs from a JSON map, with errors that keep what went wrong as data.
//!
//! `serde_json::from_value` would decode the same structs, but its errors are text: by the
//! time the catalog words a message, which option failed and which type was expected are
//! gone. This deserializer is the same walk over a [`serde_json::Value`] with its own
//! error type, which serde hands the pieces (`invalid_type` gets the expected type,
//! `unknown_field` the valid field names); the walk adds the option's path. Messages are
//! then built from those pieces, never parsed out of a string.

use std::fmt;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Expected, IntoDeserializer, MapAccess, SeqAccess, Unexpected,
    Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

use crate::error::RegistryError;

/// Decodes `T` from `map`, the way `serde_json::from_value` would.
pub(crate) fn from_map<T: DeserializeOwned>(map: &Map<String, Value>) -> Result<T, DecodeError> {
    T::deserialize(MapDe(map))
}

/// Why a map did not decode, and where.
#[derive(Debug)]
pub(crate) struct DecodeError {
    /// The option the problem is in (`max_read_bytes`, `include[1]`); empty at the top.
    path: String,
    problem: Problem,
}

#[derive(Debug)]
enum Problem {
    /// A key the struct does not have, with the ones it has.
    UnknownKey { key: String, expected: &'static [&'static str] },
    /// A value of the wrong type or out of range: what was expected, and the value (JSON).
    Expected { expected: String, got: Option<String> },
    /// Anything else a `Deserialize` impl reports (e.g. `invalid permission "maybe": ..`).
    Message(String),
}

impl DecodeError {
    fn new(problem: Problem) -> Self {
        Self { path: String::new(), problem }
    }

    /// Prefixes the path with a map key.
    fn in_key(mut self, key: &str) -> Self {
        self.path = match (self.path.is_empty(), self.path.starts_with('[')) {
            (true, _) => key.to_owned(),
            (false, true) => format!("{key}{}", self.path),
            (false, false) => format!("{key}.{}", self.path),
        };
        self
    }

    /// Prefixes the path with a list index.
    fn in_index(mut self, index: usize) -> Self {
        self.path = match (self.path.is_empty(), self.path.starts_with('[')) {
            (true, _) => format!("[{index}]"),
            (false, true) => format!("[{index}]{}", self.path),
            (false, false) => format!("[{index}].{}", self.path),
        };
        self
    }

    /// Records the offending value, unless a deeper one was recorded already.
    fn with_value(mut self, value: &Value) -> Self {
        if let Problem::Expected { got: got @ None, .. } = &mut self.problem {
            *got = Some(value.to_string());
        }
        self
    }

    /// The message for an operator. `bundle` names whose own options these are
    /// (`of the filesystem bundle`); `None` for the common options.
    pub(crate) fn into_registry_error(self, bundle: Option<&str>) -> RegistryError {
        RegistryError::InvalidOption(self.message(bundle))
    }

    fn message(&self, bundle: Option<&str>) -> String {
        let path = &self.path;
        let of = bundle.map(|b| format!(" of the {b} bundle")).unwrap_or_default();
        match &self.problem {
            Problem::UnknownKey { key, expected } => {
                // The path ends with the key itself (tagged where it was read).
                let key = if path.is_empty() { key.as_str() } else { path.as_str() };
                let valid = if expected.is_empty() { "none".to_owned() } else { expected.join(", ") };
                match bundle {
                    Some(b) => format!("unknown option `{key}` for built-in \"{b}\"; valid options: {valid}"),
                    None => format!("unknown option `{key}`; valid options: {valid}"),
                }
            }
            Problem::Expected { expected, got } => {
                let got = got.as_deref().map(|g| format!(", got {g}")).unwrap_or_default();
                if path.is_empty() {
                    format!("options must be {expected}{got}")
                } else {
                    format!("option `{path}`{of} must be {expected}{got}")
                }
            }
            Problem::Message(m) if path.is_empty() => m.clone(),
            Problem::Message(m) => format!("option `{path}`{of}: {m}"),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(None))
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::new(Problem::Message(msg.to_string()))
    }

    fn invalid_type(_: Unexpected<'_>, expected: &dyn Expected) -> Self {
        Self::new(Problem::Expected { expected: expected.to_string(), got: None })
    }

    fn invalid_value(_: Unexpected<'_>, expected: &dyn Expected) -> Self {
        Self::new(Problem::Expected { expected: expected.to_string(), got: None })
    }

    fn invalid_length(_: usize, expected: &dyn Expected) -> Self {
        Self::new(Problem::Expected { expected: expected.to_string(), got: None })
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        Self::new(Problem::Expected { expected: format!("one of {}", expected.join(", ")), got: None })
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::new(Problem::UnknownKey { key: field.to_owned(), expected })
    }

    fn missing_field(field: &'static str) -> Self {
        Self::new(Problem::Message(format!("`{field}` is required")))
    }
}

/// A map at the top: the options themselves.
struct MapDe<'de>(&'de Map<String, Value>);

impl<'de> de::Deserializer<'de> for MapDe<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_map(Entries { iter: self.0.iter(), pending: None })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// One value anywhere in the options.
struct ValueDe<'de>(&'de Value);

impl<'de> ValueDe<'de> {
    fn visit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let mut seq = Items { iter: items.iter().enumerate(), len: items.len() };
                let out = visitor.visit_seq(&mut seq)?;
                match seq.iter.len() {
                    0 => Ok(out),
                    _ => Err(de::Error::invalid_length(seq.len, &"a shorter list")),
                }
            }
            Value::Object(map) => visitor.visit_map(Entries { iter: map.iter(), pending: None }),
        }
    }
}

impl<'de> de::Deserializer<'de> for ValueDe<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let value = self.0;
        self.visit(visitor).map_err(|e| e.with_value(value))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    /// A unit variant from its name (`"ask"`); other enum shapes are not option values.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::String(s) => visitor
                .visit_enum(BorrowedStrDeserializer::<DecodeError>::new(s))
                .map_err(|e| e.with_value(self.0)),
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl<'de> IntoDeserializer<'de, DecodeError> for ValueDe<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// The entries of a map, each error tagged with its key.
struct Entries<'de> {
    iter: serde_json::map::Iter<'de>,
    pending: Option<(&'de str, &'de Value)>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DecodeError> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.pending = Some((key, value));
        seed.deserialize(BorrowedStrDeserializer::<DecodeError>::new(key))
            .map(Some)
            .map_err(|e| e.in_key(key))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DecodeError> {
        let Some((key, value)) = self.pending.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(ValueDe(value)).map_err(|e| e.in_key(key))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// The items of a list, each error tagged with its index.
struct Items<'de> {
    iter: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    len: usize,
}

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        match self.iter.next() {
            None => Ok(None),
            Some((i, value)) => seed.deserialize(ValueDe(value)).map(Some).map_err(|e| e.in_index(i)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::permission::PermissionLevel;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Demo {
        level: u32,
        names: Vec<String>,
        permission: Option<PermissionLevel>,
        nested: Option<Inner>,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        depth: u8,
    }

    fn decode(value: Value) -> Result<Demo, String> {
        from_map::<Demo>(value.as_object().unwrap()).map_err(|e| e.message(Some("demo")))
    }

    #[test]
    fn decodes_what_from_value_decodes() {
        let value = json!({"level": 3, "names": ["a"], "permission": "ASK", "nested": {"depth": 2}});
        let expected: Demo = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(decode(value).unwrap(), expected);
        assert_eq!(expected.permission, Some(PermissionLevel::Ask));
        assert_eq!(decode(json!({})).unwrap(), Demo::default());
    }

    #[test]
    fn an_unknown_key_lists_the_fields_serde_knows() {
        assert_eq!(
            decode(json!({"levle": 1})).unwrap_err(),
            "unknown option `levle` for built-in \"demo\"; valid options: level, names, permission, nested"
        );
        assert_eq!(
            decode(json!({"nested": {"deep": 1}})).unwrap_err(),
            "unknown option `nested.deep` for built-in \"demo\"; valid options: depth"
        );
    }

    #[test]
    fn a_wrong_value_names_the_option_the_expected_type_and_the_value() {
        assert_eq!(
            decode(json!({"level": "lots"})).unwrap_err(),
            "option `level` of the demo bundle must be u32, got \"lots\""
        );
        assert_eq!(
            decode(json!({"names": ["a", 1]})).unwrap_err(),
            "option `names[1]` of the demo bundle must be a string, got 1"
        );
        assert_eq!(
            decode(json!({"names": "a"})).unwrap_err(),
            "option `names` of the demo bundle must be a sequence, got \"a\""
        );
        assert_eq!(
            decode(json!({"nested": {"depth": 300}})).unwrap_err(),
            "option `nested.depth` of the demo bundle must be u8, got 300"
        );
        assert_eq!(
            decode(json!({"permission": "maybe"})).unwrap_err(),
            "option `permission` of the demo bundle: invalid permission \"maybe\": expected one of allow, ask, deny"
        );
        assert_eq!(
            decode(json!({"nested": {}})).unwrap_err(),
            "option `nested` of the demo bundle: `depth` is required"
        );
    }
}
