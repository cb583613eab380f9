//! The plain decoder: a handler's arguments decoded straight from plain argument text, as
//! serde_json would decode them.

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};

use super::No;
use super::text::{Cursor, PlainScalar, plain_scalar};
use crate::tool::decode::only_maps;

/// Decodes `A` from argument text of the plain shape
/// [`FlatSchema::plain`](super::FlatSchema::plain) reads (keys and strings without
/// escapes, integers of at most 18 digits, `true`, `false`, `null`), as serde_json would
/// decode it from the text: the same visits in the same order. `None` for
/// anything else (a float, an escape, a request only serde_json serves the same way), and
/// the caller asks serde_json.
pub(crate) fn decode_plain<A: DeserializeOwned>(text: &str) -> Option<A> {
    let mut object = PlainObject { at: Cursor { text, at: 0 }, first: true };
    let value = A::deserialize(&mut object).ok()?;
    object.at.skip_space();
    (object.at.at == text.len()).then_some(value)
}

/// One plain value (see [`decode_plain`]).
pub(crate) fn decode_plain_value<T: DeserializeOwned>(text: &str) -> Option<T> {
    let mut at = Cursor { text, at: 0 };
    let value = plain_scalar(&mut at)?;
    at.skip_space();
    if at.at != text.len() {
        return None;
    }
    T::deserialize(value).ok()
}

/// The object being decoded by [`decode_plain`].
struct PlainObject<'t> {
    at: Cursor<'t>,
    first: bool,
}

impl<'de> de::Deserializer<'de> for &mut PlainObject<'de> {
    type Error = No;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, No> {
        self.at.skip_space();
        self.at.eat(b'{').ok_or(No)?;
        visitor.visit_map(self)
    }

    // Anything but a map or struct of the whole object is left to serde_json.
    only_maps!(No);
}

impl<'de> MapAccess<'de> for PlainObject<'de> {
    type Error = No;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, No> {
        let at = &mut self.at;
        at.skip_space();
        if at.peek() == Some(b'}') {
            at.at += 1;
            return Ok(None);
        }
        if !std::mem::take(&mut self.first) {
            at.eat(b',').ok_or(No)?;
            at.skip_space();
        }
        at.eat(b'"').ok_or(No)?;
        let key = at.plain_string().ok_or(No)?;
        at.skip_space();
        at.eat(b':').ok_or(No)?;
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, No> {
        let value = plain_scalar(&mut self.at).ok_or(No)?;
        seed.deserialize(value)
    }
}

/// The name serde_json gives `RawValue`, which it serves from the text itself.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

impl<'de> de::Deserializer<'de> for PlainScalar<'de> {
    type Error = No;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, No> {
        match self {
            PlainScalar::Str(s) => visitor.visit_borrowed_str(s),
            PlainScalar::Int(n) if n >= 0 => visitor.visit_u64(n.unsigned_abs()),
            PlainScalar::Int(n) => visitor.visit_i64(n),
            PlainScalar::Bool(b) => visitor.visit_bool(b),
            PlainScalar::Null => visitor.visit_unit(),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, No> {
        match self {
            PlainScalar::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, No> {
        match self {
            PlainScalar::Null => visitor.visit_unit(),
            _ => Err(No),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, No> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, No> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, No> {
        if name == RAW_VALUE { Err(No) } else { visitor.visit_newtype_struct(self) }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, No> {
        match self {
            PlainScalar::Str(s) => visitor.visit_enum(de::value::BorrowedStrDeserializer::new(s)),
            _ => Err(No),
        }
    }

    // Bytes are served by serde_json in a way of its own: left to it.
    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value, No> {
        Err(No)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value, No> {
        Err(No)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        seq map struct tuple tuple_struct identifier
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// Whatever the plain decoder decodes, serde_json decodes from the same text to the
    /// same value, for many kinds of fields and many texts.
    #[test]
    fn the_plain_decoder_decodes_as_serde_json_does() {
        use std::collections::{BTreeMap, HashMap};

        use serde::Deserialize;

        #[derive(Debug, PartialEq, Deserialize)]
        enum Unit {
            Red,
            #[serde(rename = "blue")]
            Blue,
        }

        #[derive(Debug, PartialEq, Deserialize)]
        struct Meters(f64);

        #[derive(Debug, PartialEq, Deserialize)]
        struct Inner {
            #[serde(default)]
            u: Option<u64>,
        }

        #[derive(Debug, PartialEq, Deserialize)]
        struct Wide {
            a: u8,
            b: i8,
            #[serde(default)]
            c: f32,
            #[serde(rename = "d-d", default)]
            d: Option<i64>,
            #[serde(default)]
            e: String,
            #[serde(default)]
            f: Option<char>,
            #[serde(default)]
            g: Option<Unit>,
            #[serde(default)]
            h: Option<Meters>,
            #[serde(default)]
            i: bool,
            #[serde(default)]
            j: Value,
            #[serde(default)]
            k: (),
            #[serde(flatten)]
            rest: Inner,
        }

        #[derive(Debug, PartialEq, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Strict {
            a: i64,
        }

        fn same<T: DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) -> bool {
            let Some(plain) = decode_plain::<T>(text) else { return false };
            let json = serde_json::from_str::<T>(text);
            assert_eq!(json.as_ref().ok(), Some(&plain), "{text}");
            true
        }

        let bases = [
            r#"{"a": 7, "b": -3, "c": 2, "d-d": null, "e": "hé", "f": "x", "g": "Red", "h": 4, "i": true, "j": null, "k": null, "u": 9}"#,
            r#"{"a":255,"b":-128,"d-d":-9007199254740993,"g":"blue","j":"s","u":null}"#,
            r#"{ "a" : 0 , "b" : 0 , "e" : "" , "f" : "ab" , "g" : "Green" , "k" : 1 }"#,
        ];
        let mut decoded = 0;
        for base in bases {
            let bytes = base.as_bytes();
            for i in 0..=bytes.len() {
                let mut variants = vec![];
                if i < bytes.len() {
                    variants.push([&bytes[..i], &bytes[i + 1..]].concat());
                }
                for &c in b"{}\",:-.e09tn \\" {
                    variants.push([&bytes[..i], &[c][..], &bytes[i..]].concat());
                }
                for v in variants.into_iter().filter_map(|v| String::from_utf8(v).ok()) {
                    decoded += usize::from(same::<Wide>(&v));
                    same::<Strict>(&v);
                    same::<HashMap<String, Value>>(&v);
                    same::<BTreeMap<String, Option<i64>>>(&v);
                    same::<Value>(&v);
                }
            }
        }
        assert!(decoded > 100, "{decoded}");
        for text in [r#"{"a": 1}"#, r#"{"a": -1}"#, "{}", r#"{"a": 1, "b": 2}"#] {
            same::<Strict>(text);
            same::<HashMap<String, i64>>(text);
        }
        assert_eq!(decode_plain_value::<Option<u8>>(" 7 "), Some(Some(7)));
        assert_eq!(decode_plain_value::<Option<u8>>("null"), Some(None));
        assert_eq!(decode_plain_value::<u8>("300"), None);
        assert_eq!(decode_plain_value::<f64>("1.5"), None);
        assert_eq!(decode_plain_value::<String>(r#""a\nb""#), None);
    }
}
