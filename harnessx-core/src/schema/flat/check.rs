//! The text check: whether argument text is an object the flat schema accepts, in one
//! quick pass over plain text or, failing that, read entry by entry through serde_json.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, Visitor};

use super::text::{Cursor, PlainScalar, plain_scalar};
use super::{BOOLEAN, FlatSchema, INTEGER, NULL, NUMBER, No, Property, STRING, no};

impl FlatSchema {
    /// Whether `text` is a JSON object the schema accepts, checked without building a
    /// value. `false` also for anything it is not sure of (see the module docs).
    pub(crate) fn accepts(&self, text: &str) -> bool {
        self.plain(text).is_some() || self.read(text)
    }

    /// The common case in one pass over the bytes: keys and strings without escapes,
    /// integers of at most 18 digits, `true`, `false`, `null`. `Some` when the text is
    /// such an object and the schema accepts it; `None` for anything else, which
    /// [`read`](Self::read) then decides.
    fn plain(&self, text: &str) -> Option<()> {
        let mut at = Cursor { text, at: 0 };
        at.skip_space();
        at.eat(b'{')?;
        at.skip_space();
        let mut seen = 0u64;
        if at.peek() == Some(b'}') {
            at.at += 1;
        } else {
            loop {
                at.eat(b'"')?;
                let index = self.index_of(at.plain_string()?)?;
                let bit = 1u64 << index;
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
                at.skip_space();
                at.eat(b':')?;
                let scalar = Scalar(&self.properties[index]);
                match plain_scalar(&mut at)? {
                    PlainScalar::Int(n) => scalar.integer::<No>(n.into()),
                    PlainScalar::Str(_) => scalar.kind(STRING),
                    PlainScalar::Bool(_) => scalar.kind(BOOLEAN),
                    PlainScalar::Null => scalar.kind(NULL),
                }
                .ok()?;
                at.skip_space();
                match at.peek()? {
                    b',' => {
                        at.at += 1;
                        at.skip_space();
                    }
                    b'}' => {
                        at.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        at.skip_space();
        (at.at == text.len() && self.required & !seen == 0).then_some(())
    }

    /// The general check: the text read by serde_json, entry by entry.
    fn read(&self, text: &str) -> bool {
        let mut de = serde_json::Deserializer::from_str(text);
        let seen = match (&mut de).deserialize_map(Entries(self)) {
            Ok(seen) => seen,
            Err(_) => return false,
        };
        de.end().is_ok() && self.required & !seen == 0
    }
}

/// The object's entries: each key a known property seen once, each value of its kinds.
/// Gives the set of properties seen.
struct Entries<'s>(&'s FlatSchema);

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of arguments")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        let mut seen = 0u64;
        while let Some(index) = map.next_key_seed(Key(self.0))? {
            let bit = 1u64 << index;
            if seen & bit != 0 {
                // A repeated key: the value kept is the last, which the general path
                // checks (and a decoder may refuse).
                return Err(no());
            }
            seen |= bit;
            map.next_value_seed(Scalar(&self.0.properties[index]))?;
        }
        Ok(seen)
    }
}

/// A key, as the index of its property; an unknown key is a no.
struct Key<'s>(&'s FlatSchema);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = usize;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        self.0.index_of(key).ok_or_else(no)
    }
}

/// A value of one property: a scalar of its kinds within its bounds.
struct Scalar<'s>(&'s Property);

impl Scalar<'_> {
    fn integer<E: de::Error>(&self, n: i128) -> Result<(), E> {
        let p = self.0;
        let within = p.min.is_none_or(|min| n >= min) && p.max.is_none_or(|max| n <= max);
        if p.kinds & (INTEGER | NUMBER) != 0 && within { Ok(()) } else { Err(no()) }
    }

    fn kind<E: de::Error>(&self, kind: u8) -> Result<(), E> {
        if self.0.kinds & kind != 0 { Ok(()) } else { Err(no()) }
    }
}

impl<'de> DeserializeSeed<'de> for Scalar<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scalar<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.kind(BOOLEAN)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<(), E> {
        self.integer(n.into())
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<(), E> {
        self.integer(n.into())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        // A number written with a fraction or exponent: `2.0` is an integer to JSON
        // Schema, and bounds compare it as a float; the general path decides those.
        if self.0.min.is_none() && self.0.max.is_none() { self.kind(NUMBER) } else { Err(no()) }
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.kind(STRING)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.kind(NULL)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::schema::CompiledSchema;

    fn add() -> Value {
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "minimum": 0, "maximum": 10}},
            "required": ["a", "b"],
            "additionalProperties": false
        })
    }

    /// Whatever the flat check accepts, the compiled schema accepts too.
    fn agrees(schema: &Value, text: &str) -> bool {
        let flat = FlatSchema::of(schema).expect("a flat schema");
        let accepted = flat.accepts(text);
        if flat.plain(text).is_some() {
            assert!(flat.read(text), "{text} accepted by the quick pass, not by serde_json");
        }
        if accepted {
            let value: Value = serde_json::from_str(text).unwrap();
            let compiled = CompiledSchema::compile("t", schema).unwrap();
            assert_eq!(compiled.check("t", &value), None, "{text} accepted here, refused by the schema");
        }
        accepted
    }

    #[test]
    fn plain_arguments_are_accepted_from_the_text() {
        let schema = add();
        for text in [
            r#"{"a": 2, "b": 3}"#,
            r#"{"b":0,"a":-7}"#,
            " {\n\"a\" : 1 , \"b\" : 10 } ",
            r#"{"\u0061": 1, "b": 1}"#,
        ] {
            assert!(agrees(&schema, text), "{text}");
        }
        // The common shapes need no second reading.
        let flat = FlatSchema::of(&schema).unwrap();
        assert!(flat.plain(r#"{"a": 2, "b": 3}"#).is_some());
        assert!(flat.plain(r#"{"a":-2,"b":10}"#).is_some());
        assert!(flat.plain(r#"{"a": 2, "\u0062": 3}"#).is_none());
    }

    #[test]
    fn anything_unsure_goes_the_general_way() {
        let schema = add();
        for text in [
            "",
            "null",
            "[]",
            "5",
            r#"{"a": 2}"#,
            r#"{"a": 2, "b": 3, "c": 1}"#,
            r#"{"a": 2, "b": 3, "a": 4}"#,
            r#"{"a": 2.0, "b": 3}"#,
            r#"{"a": 2, "b": 11}"#,
            r#"{"a": 2, "b": -1}"#,
            r#"{"a": "2", "b": 3}"#,
            r#"{"a": [2], "b": 3}"#,
            r#"{"a": {"x": 1}, "b": 3}"#,
            r#"{"a": 2, "b": 3} x"#,
            r#"{"a": 2, "b": 3"#,
            r#"{"a": 1e400, "b": 3}"#,
            r#"{"a": 99999999999999999999999, "b": 3}"#,
            r#"{"a": null, "b": 3}"#,
        ] {
            assert!(!agrees(&schema, text), "{text}");
        }
        let deep = format!("{{\"a\": {}1{}, \"b\": 1}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(!agrees(&schema, &deep));
    }

    /// Mutations of good arguments (a byte dropped, doubled, or replaced by one of JSON's
    /// own): whatever either pass accepts, the compiled schema accepts.
    #[test]
    fn mutated_text_is_never_accepted_wrongly() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": -5, "maximum": 100},
                "s": {"type": "string"},
                "f": {"type": ["number", "null"]},
                "t": {"type": "boolean"}
            },
            "required": ["a", "s"],
            "additionalProperties": false
        });
        let bases = [
            r#"{"a": 12, "s": "hi", "f": -0.5e1, "t": true}"#,
            r#"{"s":"a\"b","a":-5,"t":false,"f":null}"#,
            r#" { "a" : 100 , "s" : "é\u00e9" } "#,
        ];
        let alphabet = b"{}[]\",:-+.eE0159tfnul \\\t\n\x01";
        let mut cases = 0;
        for base in bases {
            let bytes = base.as_bytes();
            for i in 0..=bytes.len() {
                let mut variants = Vec::new();
                if i < bytes.len() {
                    variants.push([&bytes[..i], &bytes[i + 1..]].concat());
                    variants.push([&bytes[..=i], &bytes[i..]].concat());
                }
                for &c in alphabet {
                    variants.push([&bytes[..i], &[c][..], &bytes[i..]].concat());
                    if i < bytes.len() {
                        variants.push([&bytes[..i], &[c][..], &bytes[i + 1..]].concat());
                    }
                }
                for v in variants {
                    if let Ok(text) = std::str::from_utf8(&v) {
                        agrees(&schema, text);
                        cases += 1;
                    }
                }
            }
        }
        assert!(cases > 3_000, "{cases}");
    }

    #[test]
    fn kinds_nulls_and_open_objects() {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "description": "a text"},
                "f": {"type": "number"},
                "o": {"type": ["boolean", "null"], "default": null},
                "u": {"type": "integer", "minimum": 0}
            },
            "required": ["s"]
        });
        assert!(agrees(&schema, r#"{"s": "x\n\"y\"", "f": 1.5e3, "o": null, "u": 18446744073709551615}"#));
        assert!(agrees(&schema, r#"{"s": "", "f": 3, "o": true}"#));
        assert!(!agrees(&schema, r#"{"f": 3}"#));
        assert!(!agrees(&schema, r#"{"s": "x", "u": -1}"#));
        assert!(!agrees(&schema, r#"{"s": "x", "o": 1}"#));
        // An unknown key is allowed by this schema, but left to the general path.
        assert!(!agrees(&schema, r#"{"s": "x", "other": 1}"#));
        assert!(agrees(&json!({"type": "object"}), "{}"));
        assert!(agrees(&json!({"type": "object", "properties": {}}), " { } "));
    }
}
