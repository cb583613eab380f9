//! Decoding a call's arguments into Rust values, and the one text of an argument error.
//!
//! Every kind of handler decodes here: the `#[tool]` fast path (its shared handlers take
//! each parameter with [`Args`] and [`decode_value`]), `#[tool]` closures and `#[toolbox]`
//! methods ([`Args`]), the typed constructors [`ToolHandler::typed_async`] and
//! [`ToolHandler::typed_blocking`], and the built-ins ([`decode_args`], a whole struct at
//! once). So one mistake reads the same whichever way the tool was written:
//!
//! | mistake | text |
//! | --- | --- |
//! | an argument is missing | `invalid arguments for calc: "a" is a required property` |
//! | an argument does not decode | `invalid arguments for calc: a: invalid type: string "x", expected i64` |
//! | the arguments are not an object | `invalid arguments for calc: expected a JSON object, got an array` |
//!
//! That is also the form of a schema validation error (the engine builds both with
//! `error_line`): the model gets one kind of line for "the arguments do not fit",
//! whether the schema or the decoder noticed. The decoder only sees what the schema let
//! through, so it matters where the schema is looser than the Rust type (a hand-written
//! schema, a recursive type's recursion point, serde attributes the schema cannot say).
//!
//! Whole-struct decoding names the field by decoding the top-level object one entry at a
//! time ([`decode_args`]'s deserializer tags each entry's error with its key); a mistake
//! deeper inside a value is named by serde's own text after the top-level field
//! (`place: missing field `lat``), the same through [`Args`].
//!
//! [`ToolHandler::typed_async`]: crate::ToolHandler::typed_async
//! [`ToolHandler::typed_blocking`]: crate::ToolHandler::typed_blocking

use std::fmt::{self, Write as _};

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::ToolError;
use crate::schema::kind_of;
use crate::tool::handler::ToolContext;

/// Longest argument error line sent to the model; longer ones are cut with an ellipsis.
pub(crate) const MAX_ERROR_LINE: usize = 400;

/// The one line of every argument error: `invalid arguments for {tool}: {path}: {message}`
/// (without `{path}: ` when the path is empty), on one line, at most
/// [`MAX_ERROR_LINE`] bytes (a huge value quoted by the message is cut).
pub(crate) fn error_line(tool: &str, path: &str, message: &dyn fmt::Display) -> String {
    subject_line(format_args!("invalid arguments for {tool}"), path, message)
}

/// [`error_line`] for another subject than a tool's arguments (`invalid output`, what
/// an agent's output schema refuses): `{subject}: {path}: {message}`, by the same rules.
pub(crate) fn subject_line(subject: fmt::Arguments<'_>, path: &str, message: &dyn fmt::Display) -> String {
    let mut line = String::with_capacity(96);
    let _ = write!(line, "{subject}: ");
    if !path.is_empty() {
        line.push_str(path);
        line.push_str(": ");
    }
    let start = line.len();
    let _ = write!(line, "{message}");
    let text = &line[start..];
    // Most messages are one line already; only the others are rewritten.
    if text.contains(|c: char| c.is_whitespace() && c != ' ') || text.contains("  ") || text.trim() != text {
        let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        line.truncate(start);
        line.push_str(&one_line);
    }
    truncate(line)
}

fn truncate(mut line: String) -> String {
    if line.len() > MAX_ERROR_LINE {
        let mut cut = MAX_ERROR_LINE;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line
}

/// The error for a required argument that is absent (worded as the schema validator
/// words it, so the model reads the same line whichever caught it).
pub fn missing_argument(ctx: &ToolContext, name: &str) -> ToolError {
    ToolError::new(error_line(ctx.tool_name(), "", &format_args!("\"{name}\" is a required property")))
}

/// The error for an argument whose value does not decode (non-generic: one function for
/// every parameter type).
pub fn invalid_argument(ctx: &ToolContext, name: &str, error: &dyn fmt::Display) -> ToolError {
    ToolError::new(error_line(ctx.tool_name(), name, error))
}

/// The error for arguments that are not a JSON object.
fn not_an_object(ctx: &ToolContext, got: &Value) -> ToolError {
    ToolError::new(error_line(
        ctx.tool_name(),
        "",
        &format_args!("expected a JSON object, got {}", kind_of(got)),
    ))
}

/// The arguments object (`null` counts as `{}`).
fn object(args: Value, ctx: &ToolContext) -> Result<Map<String, Value>, ToolError> {
    match args {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(not_an_object(ctx, &other)),
    }
}

/// Decodes the value of the argument `name`. The one decoder of a single argument: [`Args`]
/// and the `#[tool]` fast path both call it. `match` rather than `map_err`, so each
/// parameter type instantiates only this small function (see docs/performance.md).
pub fn decode_value<T: DeserializeOwned>(
    ctx: &ToolContext,
    name: &str,
    value: Value,
) -> Result<T, ToolError> {
    match T::deserialize(value) {
        Ok(value) => Ok(value),
        Err(e) => Err(invalid_argument(ctx, name, &e)),
    }
}

/// Decodes the whole arguments object into `A` (a `#[derive(Deserialize)]` struct, usually),
/// with the same error texts as [`Args`]: a missing field is a missing argument, a field
/// whose value does not decode is named.
///
/// ```
/// use harnessx_core::ToolContext;
/// use harnessx_core::tool::decode::decode_args;
/// use serde_json::json;
///
/// #[derive(serde::Deserialize)]
/// struct Add { a: i64, b: i64 }
///
/// let ctx = ToolContext::new("call-1", "add");
/// let Add { a, b } = decode_args(json!({"a": 2, "b": 3}), &ctx).unwrap();
/// assert_eq!(a + b, 5);
/// let err = decode_args::<Add>(json!({"a": 2, "b": "3"}), &ctx).err().unwrap();
/// assert_eq!(err.message(), r#"invalid arguments for add: b: invalid type: string "3", expected i64"#);
/// let err = decode_args::<Add>(json!({"a": 2}), &ctx).err().unwrap();
/// assert_eq!(err.message(), r#"invalid arguments for add: "b" is a required property"#);
/// ```
pub fn decode_args<A: DeserializeOwned>(args: Value, ctx: &ToolContext) -> Result<A, ToolError> {
    match A::deserialize(Fields(object(args, ctx)?)) {
        Ok(value) => Ok(value),
        Err(e) => Err(e.into_tool_error(ctx)),
    }
}

/// The rest of a `Deserializer` that serves a map or a struct (its `deserialize_any`) and
/// refuses every other request with `$no` (for the text paths: a refusal sends the call
/// to the general path). Used by [`TextFields`] and the flat schema's plain decoder.
macro_rules! only_maps {
    ($no:expr) => {
        serde::forward_to_deserialize_any! { map struct }

        fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, _: V) -> Result<V::Value, Self::Error> {
            Err($no)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err($no)
        }

        fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Self::Error> {
            Err($no)
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            _: usize,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err($no)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            _: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err($no)
        }

        $crate::tool::decode::only_maps!(@refuse $no;
            deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
            deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
            deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
            deserialize_string deserialize_bytes deserialize_byte_buf deserialize_option
            deserialize_unit deserialize_seq deserialize_identifier deserialize_ignored_any
        );
    };
    (@refuse $no:expr; $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err($no)
        }
    )*};
}
pub(crate) use only_maps;

/// Decodes argument text the engine already found to fit the tool's flat schema into `A`,
/// as [`decode_args`] decodes its value: the object's entries one by one, in the order
/// written (the text has no repeated key). `None` when it does not decode, or when `A`
/// asks for anything but a struct or map: the caller then takes the general path, whose
/// error text is the one the model reads.
pub(crate) fn decode_json<A: DeserializeOwned>(text: &str) -> Option<A> {
    // The plain shapes without serde_json's machinery; serde_json for the others.
    match crate::schema::decode_plain(text) {
        Some(value) => Some(value),
        None => A::deserialize(TextFields(text)).ok(),
    }
}

/// Checked argument text as a deserializer: a struct or map is served by the text's own
/// object; any other request is refused (to the general path).
struct TextFields<'t>(&'t str);

impl<'de> de::Deserializer<'de> for TextFields<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let mut de = serde_json::Deserializer::from_str(self.0);
        let value = de::Deserializer::deserialize_map(&mut de, visitor)?;
        de.end()?;
        Ok(value)
    }

    only_maps!(<serde_json::Error as de::Error>::custom("not a struct"));
}

/// The arguments object of one call, taken apart one parameter at a time.
#[derive(Debug)]
pub struct Args<'a> {
    map: Map<String, Value>,
    ctx: &'a ToolContext,
}

impl<'a> Args<'a> {
    /// Takes the arguments object (`null` counts as `{}`) of the call `ctx` describes.
    pub fn new(args: Value, ctx: &'a ToolContext) -> Result<Self, ToolError> {
        match object(args, ctx) {
            Ok(map) => Ok(Self { map, ctx }),
            Err(e) => Err(e),
        }
    }

    /// A parameter that must be present.
    pub fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ToolError> {
        match self.map.remove(name) {
            Some(value) => decode_value(self.ctx, name, value),
            None => Err(missing_argument(self.ctx, name)),
        }
    }

    /// A parameter with a default: `None` when absent.
    pub fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ToolError> {
        match self.map.remove(name) {
            Some(value) => match decode_value(self.ctx, name, value) {
                Ok(value) => Ok(Some(value)),
                Err(e) => Err(e),
            },
            None => Ok(None),
        }
    }

    /// The raw value of a parameter, if present (non-generic: the `#[tool]` fast path
    /// decodes it itself, so each parameter type costs one small generic function).
    pub(crate) fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    /// The call being decoded.
    pub(crate) fn context(&self) -> &'a ToolContext {
        self.ctx
    }
}

/// Why whole-struct decoding failed, before it becomes a [`ToolError`] with the tool's name.
#[derive(Debug)]
enum Failure {
    /// A required field is absent.
    Missing(&'static str),
    /// The value of a field does not decode.
    Invalid { field: String, message: String },
    /// Anything else (a type-level rule, an unknown field under `deny_unknown_fields`).
    Other(String),
}

impl Failure {
    fn into_tool_error(self, ctx: &ToolContext) -> ToolError {
        match self {
            Failure::Missing(field) => missing_argument(ctx, field),
            Failure::Invalid { field, message } => invalid_argument(ctx, &field, &message),
            Failure::Other(message) => ToolError::new(error_line(ctx.tool_name(), "", &message)),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Missing(field) => write!(f, "missing field `{field}`"),
            Failure::Invalid { field, message } => write!(f, "{field}: {message}"),
            Failure::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Failure {}

impl de::Error for Failure {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Failure::Other(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Failure::Missing(field)
    }
}

/// Serves the listed requests as `serde_json::Value` would (an object is no bool, ...).
macro_rules! forward_to_value {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Failure> {
            as_value(Value::Object(self.0).$method(visitor))
        }
    )*};
}

fn as_value<T>(result: Result<T, serde_json::Error>) -> Result<T, Failure> {
    result.map_err(|e| Failure::Other(e.to_string()))
}

/// The top-level arguments object as a deserializer: a struct or map is decoded one entry
/// at a time, each entry's error tagged with its key; any other request is served as
/// `serde_json::Value` would serve it.
struct Fields(Map<String, Value>);

impl<'de> de::Deserializer<'de> for Fields {
    type Error = Failure;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Failure> {
        visitor.visit_map(Entries { entries: self.0.into_iter(), pending: None })
    }

    serde::forward_to_deserialize_any! { map struct }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Failure> {
        as_value(Value::Object(self.0).deserialize_unit_struct(name, visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Failure> {
        as_value(Value::Object(self.0).deserialize_newtype_struct(name, visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Failure> {
        as_value(Value::Object(self.0).deserialize_tuple(len, visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Failure> {
        as_value(Value::Object(self.0).deserialize_tuple_struct(name, len, visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Failure> {
        as_value(Value::Object(self.0).deserialize_enum(name, variants, visitor))
    }

    forward_to_value! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_option
        deserialize_unit deserialize_seq deserialize_identifier deserialize_ignored_any
    }
}

/// The entries of the arguments object; the key of the entry being decoded is kept to
/// name it in an error.
struct Entries {
    entries: serde_json::map::IntoIter,
    pending: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Failure;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Failure> {
        let Some((key, value)) = self.entries.next() else { return Ok(None) };
        let deserializer: StrDeserializer<'_, Failure> = key.as_str().into_deserializer();
        let decoded = seed.deserialize(deserializer)?;
        self.pending = Some((key, value));
        Ok(Some(decoded))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Failure> {
        let Some((field, value)) = self.pending.take() else {
            return Err(Failure::Other("a value was asked for before its key".into()));
        };
        seed.deserialize(value).map_err(|e| Failure::Invalid { field, message: e.to_string() })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    fn ctx() -> ToolContext {
        ToolContext::new("call-1", "calc")
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Calc {
        a: i64,
        #[serde(default)]
        b: Vec<u8>,
        c: Option<String>,
    }

    #[test]
    fn takes_parameters_by_name() {
        let ctx = ctx();
        let mut args = Args::new(json!({"a": 2, "b": "x"}), &ctx).unwrap();
        assert_eq!(args.required::<i64>("a").unwrap(), 2);
        assert_eq!(args.optional::<String>("b").unwrap().as_deref(), Some("x"));
        assert_eq!(args.optional::<String>("c").unwrap(), None);
        assert!(Args::new(Value::Null, &ctx).unwrap().take("a").is_none());
    }

    #[test]
    fn one_text_per_mistake_whichever_way_decoded() {
        let ctx = ctx();
        // Missing.
        let by_name = Args::new(json!({}), &ctx).unwrap().required::<i64>("a").unwrap_err();
        let whole = decode_args::<Calc>(json!({"b": [1]}), &ctx).unwrap_err();
        assert_eq!(by_name.message(), r#"invalid arguments for calc: "a" is a required property"#);
        assert_eq!(whole, by_name);
        // A value that does not decode, at the top level and deeper inside.
        for (value, text) in [
            (json!("x"), r#"invalid arguments for calc: a: invalid type: string "x", expected i64"#),
            (json!(1.5), "invalid arguments for calc: a: invalid type: floating point `1.5`, expected i64"),
        ] {
            let by_name =
                Args::new(json!({"a": value.clone()}), &ctx).unwrap().required::<i64>("a").unwrap_err();
            let whole = decode_args::<Calc>(json!({"a": value}), &ctx).unwrap_err();
            assert_eq!(by_name.message(), text);
            assert_eq!(whole, by_name);
        }
        let by_name = Args::new(json!({"b": [1, 300]}), &ctx).unwrap().required::<Vec<u8>>("b").unwrap_err();
        let whole = decode_args::<Calc>(json!({"a": 1, "b": [1, 300]}), &ctx).unwrap_err();
        assert_eq!(
            by_name.message(),
            "invalid arguments for calc: b: invalid value: integer `300`, expected u8"
        );
        assert_eq!(whole, by_name);
        // Not an object.
        let by_name = Args::new(json!([1]), &ctx).unwrap_err();
        let whole = decode_args::<Calc>(json!([1]), &ctx).unwrap_err();
        assert_eq!(by_name.message(), "invalid arguments for calc: expected a JSON object, got an array");
        assert_eq!(whole, by_name);
    }

    #[test]
    fn whole_struct_decoding_keeps_serde_semantics() {
        let ctx = ctx();
        // Defaults, absent options, unknown fields ignored, `null` as `{}` for all-optional.
        assert_eq!(
            decode_args::<Calc>(json!({"a": 1, "extra": true}), &ctx).unwrap(),
            Calc { a: 1, b: vec![], c: None }
        );
        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(deny_unknown_fields)]
        struct Strict {
            a: Option<i64>,
        }
        assert_eq!(decode_args::<Strict>(Value::Null, &ctx).unwrap(), Strict { a: None });
        let err = decode_args::<Strict>(json!({"z": 1}), &ctx).unwrap_err();
        assert_eq!(err.message(), "invalid arguments for calc: unknown field `z`, expected `a`");
        // Shapes other than a struct are served as `Value` would serve them.
        #[derive(Debug, Deserialize, PartialEq)]
        struct Wrapper(std::collections::BTreeMap<String, i64>);
        assert_eq!(decode_args::<Wrapper>(json!({"x": 1}), &ctx).unwrap().0["x"], 1);
        #[derive(Debug, Deserialize, PartialEq)]
        enum Op {
            Neg { a: i64 },
        }
        assert_eq!(decode_args::<Op>(json!({"Neg": {"a": 1}}), &ctx).unwrap(), Op::Neg { a: 1 });
        assert_eq!(decode_args::<Value>(json!({"a": [1]}), &ctx).unwrap(), json!({"a": [1]}));
        #[derive(Debug, Deserialize, PartialEq)]
        struct Flat {
            #[serde(flatten)]
            rest: std::collections::BTreeMap<String, u8>,
        }
        let err = decode_args::<Flat>(json!({"x": -1}), &ctx).unwrap_err();
        assert!(
            err.message().starts_with("invalid arguments for calc: invalid value: integer `-1`"),
            "{err}"
        );
    }

    #[test]
    fn error_lines_stay_short_and_on_one_line() {
        let line = error_line("t", "v", &format!("bad\n{}", "x".repeat(10_000)));
        assert_eq!(error_line("t", "", &" two  spaces "), "invalid arguments for t: two spaces");
        assert_eq!(error_line("t", "a", &"plain text"), "invalid arguments for t: a: plain text");
        assert!(line.starts_with("invalid arguments for t: v: bad x"));
        assert!(line.len() <= MAX_ERROR_LINE + '…'.len_utf8(), "{}", line.len());
        assert!(!line.contains('\n'));
    }
}
