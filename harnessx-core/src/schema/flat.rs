//! Flat input schemas, checked straight from the argument text.
//!
//! Most tools take a handful of scalar arguments (`{"a": 2, "b": 3}`), and their schema
//! says no more than each argument's type, its integer bounds and which are required:
//! what `#[tool]` writes for `i64`, `u32`, `f64`, `bool`, `String` and their `Option`s. For
//! such a schema, [`FlatSchema::accepts`] checks the JSON text in one pass without building
//! a `serde_json::Value` (no map, no hashing, no allocation), and a handler that can decode
//! its arguments from text ([`AsyncToolHandler::call_json`]) takes them from there.
//!
//! It only ever says yes where the compiled schema says yes: anything it is not sure of
//! (an unknown or repeated key, a float for an integer, a nested value, text that is not
//! an object, a schema keyword it does not know) is a no, and the call takes the general
//! path, which parses the text, checks it with the compiled schema and gives the one-line
//! error. A no is never an error by itself.
//!
//! [`AsyncToolHandler::call_json`]: crate::AsyncToolHandler::call_json

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer as _, MapAccess, Visitor};
use serde_json::Value;

use crate::tool::decode::only_maps;

/// A JSON type a flat property may take.
const INTEGER: u8 = 1;
const NUMBER: u8 = 1 << 1;
const STRING: u8 = 1 << 2;
const BOOLEAN: u8 = 1 << 3;
const NULL: u8 = 1 << 4;

/// Most properties a flat schema has (one bit each in a `u64`).
const MAX_PROPERTIES: usize = 64;

/// Keywords of the schema itself that change nothing about which objects it accepts
/// beyond what is read here.
const ROOT_KEYWORDS: &[&str] =
    &["type", "properties", "required", "additionalProperties", "description", "title", "$schema"];

/// Keywords of a property schema that are read here or only annotate.
const PROPERTY_KEYWORDS: &[&str] =
    &["type", "minimum", "maximum", "description", "title", "default", "examples", "deprecated"];

/// One property of a flat schema.
#[derive(Debug)]
struct Property {
    name: Box<str>,
    /// The JSON types it may take (a set of the flags above).
    kinds: u8,
    /// Integer bounds (`minimum`, `maximum`), when given as integers.
    min: Option<i128>,
    max: Option<i128>,
}

/// An input schema that is an object of scalar properties (see the module docs).
#[derive(Debug)]
pub(crate) struct FlatSchema {
    properties: Box<[Property]>,
    /// The required properties, one bit per index in `properties`.
    required: u64,
}

impl FlatSchema {
    /// The flat form of `schema`, or `None` when it says more than a flat schema can.
    pub(crate) fn of(schema: &Value) -> Option<Self> {
        let root = schema.as_object()?;
        if root.keys().any(|k| !ROOT_KEYWORDS.contains(&k.as_str())) {
            return None;
        }
        match root.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(_) => return None,
        }
        match root.get("additionalProperties") {
            None | Some(Value::Bool(_)) => {}
            Some(_) => return None,
        }
        if root.get("$schema").is_some_and(|s| !s.is_string()) {
            return None;
        }
        let properties: Vec<Property> = match root.get("properties") {
            None => Vec::new(),
            Some(Value::Object(p)) if p.len() <= MAX_PROPERTIES => {
                p.iter().map(|(name, schema)| property(name, schema)).collect::<Option<_>>()?
            }
            Some(_) => return None,
        };
        let mut required = 0u64;
        match root.get("required") {
            None => {}
            Some(Value::Array(names)) => {
                for name in names {
                    let name = name.as_str()?;
                    let index = properties.iter().position(|p| &*p.name == name)?;
                    required |= 1 << index;
                }
            }
            Some(_) => return None,
        }
        Some(Self { properties: properties.into_boxed_slice(), required })
    }

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

    fn index_of(&self, key: &str) -> Option<usize> {
        self.properties.iter().position(|p| same_bytes(p.name.as_bytes(), key.as_bytes()))
    }
}

/// Finds, in argument text a flat schema accepted, the text of each named argument's
/// value: `values[i]` for `names[i]` (left `None` when absent). `false` when a key has an
/// escape (it is then matched on the value path).
pub(crate) fn locate_values<'t>(text: &'t str, names: &[&str], values: &mut [Option<&'t str>]) -> bool {
    locate(text, names, values).is_some()
}

fn locate<'t>(text: &'t str, names: &[&str], values: &mut [Option<&'t str>]) -> Option<()> {
    let mut at = Cursor { text, at: 0 };
    at.skip_space();
    at.eat(b'{')?;
    loop {
        at.skip_space();
        match at.peek()? {
            b'}' => return Some(()),
            b',' => {
                at.at += 1;
                continue;
            }
            _ => {}
        }
        at.eat(b'"')?;
        let key = at.plain_string()?;
        at.skip_space();
        at.eat(b':')?;
        at.skip_space();
        let start = at.at;
        if at.peek()? == b'"' {
            // A string: to its closing quote, escapes skipped (the text is valid JSON).
            at.at += 1;
            loop {
                match at.peek()? {
                    b'"' => break,
                    b'\\' => at.at += 2,
                    _ => at.at += 1,
                }
            }
            at.at += 1;
        } else {
            // A number or a word.
            while !matches!(at.peek()?, b',' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                at.at += 1;
            }
        }
        // (Both ends are at ASCII bytes, so on character boundaries.)
        let value = text.get(start..at.at)?;
        if let Some(i) =
            names.iter().position(|name| !name.is_empty() && same_bytes(name.as_bytes(), key.as_bytes()))
        {
            values[i] = Some(value);
        }
    }
}

/// Decodes `A` from argument text of the plain shape [`FlatSchema::plain`] reads (keys and
/// strings without escapes, integers of at most 18 digits, `true`, `false`, `null`), as
/// serde_json would decode it from the text: the same visits in the same order. `None` for
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

/// The value at `at`: a plain scalar, or `None`.
fn plain_scalar<'t>(at: &mut Cursor<'t>) -> Option<PlainScalar<'t>> {
    at.skip_space();
    Some(match at.peek()? {
        b'"' => {
            at.at += 1;
            PlainScalar::Str(at.plain_string()?)
        }
        b't' => at.word("true").map(|()| PlainScalar::Bool(true))?,
        b'f' => at.word("false").map(|()| PlainScalar::Bool(false))?,
        b'n' => at.word("null").map(|()| PlainScalar::Null)?,
        _ => PlainScalar::Int(at.plain_integer()?),
    })
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

/// One plain scalar, served as serde_json serves the same text: a non-negative integer
/// as `u64`, a negative one as `i64`, a string borrowed.
#[derive(Clone, Copy)]
enum PlainScalar<'t> {
    Str(&'t str),
    Int(i64),
    Bool(bool),
    Null,
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

/// `a == b`, compared in place: argument names are short, and a call to `memcmp` costs
/// more than comparing them.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A position in argument text, for [`FlatSchema::plain`].
struct Cursor<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Cursor<'t> {
    fn bytes(&self) -> &'t [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// JSON's whitespace.
    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The rest of a string whose opening quote was read, when it has no escape and no
    /// control character (a raw one is not JSON); the position is after its closing quote.
    fn plain_string(&mut self) -> Option<&'t str> {
        let start = self.at;
        let mut end = start;
        // (An index loop: a short string costs a few instructions a byte.)
        while let Some(&b) = self.bytes().get(end) {
            if b == b'"' {
                self.at = end + 1;
                // (Both ends are at ASCII bytes, so on character boundaries.)
                return self.text.get(start..end);
            }
            if b == b'\\' || b < 0x20 {
                return None;
            }
            end += 1;
        }
        None
    }

    /// `literal` (`true`, `false`, `null`), read.
    fn word(&mut self, literal: &str) -> Option<()> {
        self.bytes()[self.at..].starts_with(literal.as_bytes()).then(|| self.at += literal.len())
    }

    /// An integer as JSON writes it (`-?(0|[1-9][0-9]*)`), of at most 18 digits, not
    /// followed by a fraction or exponent, and not `-0` (a float to serde_json).
    fn plain_integer(&mut self) -> Option<i64> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let start = self.at;
        let digits = self.bytes()[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 18 || (digits > 1 && self.bytes()[start] == b'0') {
            return None;
        }
        self.at += digits;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let n = self.bytes()[start..self.at].iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        match (negative, n) {
            // serde_json reads `-0` as the float -0.0.
            (true, 0) => None,
            (true, n) => Some(-n),
            (false, n) => Some(n),
        }
    }
}

/// A property schema's flat form.
fn property(name: &str, schema: &Value) -> Option<Property> {
    let schema = schema.as_object()?;
    if schema.keys().any(|k| !PROPERTY_KEYWORDS.contains(&k.as_str())) {
        return None;
    }
    let kinds = match schema.get("type")? {
        Value::String(t) => kind(t)?,
        Value::Array(types) if !types.is_empty() => {
            types.iter().try_fold(0, |kinds, t| Some(kinds | kind(t.as_str()?)?))?
        }
        _ => return None,
    };
    let bound = |key: &str| -> Option<Option<i128>> {
        match schema.get(key) {
            None => Some(None),
            // Bounds apply to numbers only: on other kinds they would say nothing, but
            // such a schema is not what this path is for.
            Some(Value::Number(n)) if kinds & (INTEGER | NUMBER) != 0 => {
                n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)).map(Some)
            }
            Some(_) => None,
        }
    };
    Some(Property { name: name.into(), kinds, min: bound("minimum")?, max: bound("maximum")? })
}

fn kind(name: &str) -> Option<u8> {
    Some(match name {
        "integer" => INTEGER,
        "number" => NUMBER,
        "string" => STRING,
        "boolean" => BOOLEAN,
        "null" => NULL,
        _ => return None,
    })
}

/// Why the text is not accepted here (never shown: the general path says why).
#[derive(Debug)]
struct No;

impl fmt::Display for No {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not checked here")
    }
}

impl std::error::Error for No {}

impl de::Error for No {
    fn custom<T: fmt::Display>(_: T) -> Self {
        No
    }
}

fn no<E: de::Error>() -> E {
    E::custom(No)
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
    use serde_json::json;

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

    #[test]
    fn only_schemas_that_say_no_more_are_flat() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "format": "date"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0.5}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "minimum": 1}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}),
            json!({"type": "object", "properties": {"a": {}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "minProperties": 1}),
            json!({"type": "object", "$defs": {}}),
            json!({"type": "array"}),
            json!(true),
        ] {
            assert!(FlatSchema::of(&schema).is_none(), "{schema}");
        }
        let many: serde_json::Map<String, Value> =
            (0..65).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
        assert!(FlatSchema::of(&json!({"type": "object", "properties": many})).is_none());
    }
}
