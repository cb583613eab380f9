//! Media in request bodies: what every adapter shares to send images, documents and audio
//! ([`Part`]s) in its provider's shape.
//!
//! # One copy of the base64
//!
//! A request body is built as a [`serde_json::Value`] and serialized once to be sent. A
//! medium's base64 put into that `Value` as a `String` would be a second copy of it (the
//! string, then the body), 6.7 MB each for a 5 MB image. So an adapter never writes the
//! base64 into the `Value`: it asks [`Blobs`] for a short placeholder string in its place
//! ([`Blobs::base64`], [`Blobs::data_url`]), which keeps the bytes (a [`Bytes`] clone: a
//! reference count). [`WireBody::to_bytes`] then serializes the `Value` through a wrapper
//! that writes each placeholder as the base64 itself, streamed into the body by
//! [`Base64Display`] through `collect_str`, into a buffer sized for the whole body up
//! front (so it never grows, and never copies what it holds). The body sent is the only
//! place the base64 ever is.
//!
//! A body without media has no placeholder and is serialized as the `Value` it is: a
//! text-only request is byte for byte what it was before media existed.
//!
//! [`WireBody::into_value`] is the body as a plain `Value`, placeholders replaced by their
//! text: what `request_body()` returns, for tests and inspection (a copy is fine there).
//!
//! A placeholder is a NUL character, a per-body random nonce and an index, so no text a
//! user or a tool wrote is taken for one by chance.

use std::fmt;
use std::hash::{BuildHasher, RandomState};

use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
use harnessx_core::{Blob, Bytes, Part};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::model::ModelError;

/// How a blob is written in place of its placeholder.
#[derive(Debug)]
enum Form {
    /// Bare standard base64.
    Base64,
    /// A data URL, `data:MEDIA_TYPE;base64,...`.
    #[cfg_attr(not(feature = "openai"), allow(dead_code, reason = "only the OpenAI adapters send data URLs"))]
    DataUrl(String),
}

/// The blobs of one request body, each standing in the body's `Value` as a placeholder.
#[derive(Debug)]
pub(crate) struct Blobs {
    nonce: u64,
    list: Vec<(Form, Bytes)>,
}

impl Default for Blobs {
    fn default() -> Self {
        Self::new()
    }
}

/// What every placeholder starts with: no JSON text a person writes starts with NUL.
const MARK: &str = "\0harnessx-blob:";

impl Blobs {
    /// None yet (and nothing computed: a text-only body costs nothing here).
    pub(crate) fn new() -> Self {
        Self { nonce: 0, list: Vec::new() }
    }

    /// The placeholder for `bytes` written as bare base64.
    pub(crate) fn base64(&mut self, bytes: &Bytes) -> Value {
        self.add(Form::Base64, bytes)
    }

    /// The placeholder for `bytes` written as a `data:` URL of `media_type`.
    #[cfg_attr(not(feature = "openai"), allow(dead_code, reason = "only the OpenAI adapters send data URLs"))]
    pub(crate) fn data_url(&mut self, media_type: &str, bytes: &Bytes) -> Value {
        self.add(Form::DataUrl(media_type.to_owned()), bytes)
    }

    /// A URL for the blob: the URL itself, or a data URL of the bytes.
    #[cfg_attr(not(feature = "openai"), allow(dead_code, reason = "only the OpenAI adapters send data URLs"))]
    pub(crate) fn url(&mut self, media_type: &str, blob: &Blob) -> Value {
        match blob {
            Blob::Bytes(bytes) => self.data_url(media_type, bytes),
            Blob::Url(url) => Value::String(url.clone()),
        }
    }

    fn add(&mut self, form: Form, bytes: &Bytes) -> Value {
        if self.list.is_empty() {
            self.nonce = RandomState::new().hash_one(0u8);
        }
        let index = self.list.len();
        // A clone of `Bytes` shares the buffer.
        self.list.push((form, bytes.clone()));
        Value::String(format!("{MARK}{:016x}:{index}", self.nonce))
    }

    /// The blob a string stands for, if it is one of this body's placeholders.
    fn lookup(&self, text: &str) -> Option<Encoded<'_>> {
        if self.list.is_empty() {
            return None;
        }
        let rest = text.strip_prefix(MARK)?;
        let (nonce, index) = rest.split_once(':')?;
        if u64::from_str_radix(nonce, 16).ok()? != self.nonce {
            return None;
        }
        let (form, bytes) = self.list.get(index.parse::<usize>().ok()?)?;
        Some(Encoded { form, bytes })
    }

    /// How many bytes the blobs take written out.
    fn encoded_len(&self) -> usize {
        self.list.iter().map(|(form, bytes)| Encoded { form, bytes }.len()).sum()
    }
}

/// A blob as written: its base64, after `data:...;base64,` for a data URL.
struct Encoded<'a> {
    form: &'a Form,
    bytes: &'a [u8],
}

impl Encoded<'_> {
    /// The written length (the JSON escaping of a media type aside).
    fn len(&self) -> usize {
        let base64 = self.bytes.len().div_ceil(3) * 4;
        match self.form {
            Form::Base64 => base64,
            Form::DataUrl(media_type) => "data:;base64,".len() + media_type.len() + base64,
        }
    }
}

impl fmt::Display for Encoded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Form::DataUrl(media_type) = self.form {
            write!(f, "data:{media_type};base64,")?;
        }
        // Written in small pieces straight to the formatter: no string of it is built.
        Base64Display::new(self.bytes, &STANDARD).fmt(f)
    }
}

/// A request body: its JSON with placeholders, and the blobs they stand for.
#[derive(Debug)]
pub(crate) struct WireBody {
    value: Value,
    blobs: Blobs,
}

impl WireBody {
    pub(crate) fn new(value: Value, blobs: Blobs) -> Self {
        Self { value, blobs }
    }

    /// The bytes sent: the JSON with each blob written where its placeholder is, in a
    /// buffer allocated once at the body's size.
    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>, ModelError> {
        let failed = |e: serde_json::Error| {
            ModelError::Protocol(format!("the request body could not be written as JSON: {e}"))
        };
        if self.blobs.list.is_empty() {
            return serde_json::to_vec(&self.value).map_err(failed);
        }
        let mut skeleton = Count(0);
        serde_json::to_writer(&mut skeleton, &self.value).map_err(failed)?;
        let mut body = Vec::with_capacity(skeleton.0 + self.blobs.encoded_len());
        serde_json::to_writer(&mut body, &Expand { value: &self.value, blobs: &self.blobs })
            .map_err(failed)?;
        Ok(body)
    }

    /// The body as a plain `Value`, each placeholder replaced by its blob's text.
    pub(crate) fn into_value(self) -> Value {
        let Self { mut value, blobs } = self;
        if !blobs.list.is_empty() {
            fill(&mut value, &blobs);
        }
        value
    }
}

/// Replaces the placeholders under `value` by their text. Bodies are as deep as the
/// adapters build them (their tool schemas included), which serialization walks anyway.
fn fill(value: &mut Value, blobs: &Blobs) {
    match value {
        Value::String(text) => {
            if let Some(encoded) = blobs.lookup(text) {
                *text = encoded.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| fill(item, blobs)),
        Value::Object(map) => map.values_mut().for_each(|item| fill(item, blobs)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A `Value` serialized as `serde_json` serializes it, except that a placeholder is
/// written as its blob.
struct Expand<'a> {
    value: &'a Value,
    blobs: &'a Blobs,
}

impl Serialize for Expand<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let blobs = self.blobs;
        match self.value {
            Value::String(text) => match blobs.lookup(text) {
                Some(encoded) => serializer.collect_str(&encoded),
                None => serializer.serialize_str(text),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for value in items {
                    seq.serialize_element(&Expand { value, blobs })?;
                }
                seq.end()
            }
            Value::Object(object) => {
                let mut map = serializer.serialize_map(Some(object.len()))?;
                for (key, value) in object {
                    map.serialize_entry(key, &Expand { value, blobs })?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Counts what is written.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The line that stands in for a part a provider cannot take, so that it does not vanish
/// unsaid: `[audio: audio/wav, 1234 bytes — not supported by anthropic]` (a URL in place
/// of the size for a medium given by URL; a file's name after its media type).
#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(dead_code, reason = "Gemini takes every kind of part")
)]
pub(crate) fn unsupported(part: &Part, provider: &str) -> String {
    let described = match part {
        Part::Text(text) => return text.clone(),
        Part::Image { media_type, data } | Part::Audio { media_type, data } => {
            format!("{}: {media_type}, {}", part.kind(), size(data))
        }
        Part::File { media_type, name: Some(name), data } => {
            format!("file: {media_type}, {name}, {}", size(data))
        }
        Part::File { media_type, name: None, data } => format!("file: {media_type}, {}", size(data)),
    };
    format!("[{described} — not supported by {provider}]")
}

#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(dead_code, reason = "Gemini takes every kind of part")
)]
fn size(blob: &Blob) -> String {
    match blob {
        Blob::Bytes(bytes) => format!("{} bytes", bytes.len()),
        Blob::Url(url) => url.clone(),
    }
}

/// The line that names the tool call whose media follow it, where a provider takes a
/// result's media only in a user message: `[read_file result, call ID]` (`error` for a
/// failed call).
#[cfg_attr(
    not(any(feature = "openai", feature = "gemini")),
    allow(dead_code, reason = "Anthropic takes media inside a tool result and needs no header")
)]
pub(crate) fn result_header(name: &str, call_id: &str, is_error: bool) -> String {
    let outcome = if is_error { "error" } else { "result" };
    format!("[{name} {outcome}, call {call_id}]")
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_body_without_blobs_is_the_value_as_serde_json_writes_it() {
        let value = json!({"model": "m", "messages": [{"role": "user", "content": "hé \"x\"\n"}], "n": 1.5});
        let body = WireBody::new(value.clone(), Blobs::new());
        assert_eq!(body.to_bytes().unwrap(), value.to_string().into_bytes());
        assert_eq!(body.into_value(), value);
    }

    #[test]
    fn placeholders_are_written_as_their_blobs_and_nothing_else_changes() {
        let bytes = Bytes::from_static(b"\x89PNG\r\n\x1a\nrest");
        let mut blobs = Blobs::new();
        let url = blobs.data_url("image/png", &bytes);
        let bare = blobs.base64(&bytes);
        let value = json!({"a": [url, {"b": bare}], "text": format!("{MARK}0:0"), "k": null});
        let b64 = STANDARD.encode(&bytes);
        let want = json!({
            "a": [format!("data:image/png;base64,{b64}"), {"b": b64}],
            "text": format!("{MARK}0:0"),
            "k": null
        });
        let body = WireBody::new(value, blobs);
        let raw = body.to_bytes().unwrap();
        assert_eq!(raw, want.to_string().into_bytes());
        assert_eq!(body.into_value(), want);
    }

    // The one-copy promise: a 5 MB image goes into one buffer sized for the whole body
    // up front (it never grows, so nothing in it is copied; the estimate counts each
    // placeholder too, a few dozen bytes over), and no string of its base64 is built on
    // the way (`Encoded` writes to the serializer).
    #[test]
    fn a_large_blob_is_written_into_one_exactly_sized_buffer() {
        let bytes = Bytes::from(vec![0xA5u8; 5 << 20]);
        let mut blobs = Blobs::new();
        let value = json!({"messages": [{"content": [{"url": blobs.data_url("image/png", &bytes)}]}]});
        let raw = WireBody::new(value, blobs).to_bytes().unwrap();
        assert!(raw.capacity() >= raw.len() && raw.capacity() < raw.len() + 64, "{}", raw.capacity());
        let sent: Value = serde_json::from_slice(&raw).unwrap();
        let url = sent["messages"][0]["content"][0]["url"].as_str().unwrap();
        let data = url.strip_prefix("data:image/png;base64,").unwrap();
        assert_eq!(STANDARD.decode(data).unwrap(), bytes);
    }

    #[test]
    fn another_bodys_placeholder_is_plain_text() {
        let bytes = Bytes::from_static(b"x");
        let mut blobs = Blobs::new();
        let own = blobs.base64(&bytes);
        // Another body's (another nonce), a malformed one, one past the end.
        let foreign = format!("{MARK}{:016x}:0", blobs.nonce.wrapping_add(1));
        let value = json!([foreign, own, format!("{MARK}zz:0"), format!("{MARK}{:016x}:9", blobs.nonce)]);
        let sent = WireBody::new(value.clone(), blobs).into_value();
        assert_eq!(sent[0], value[0]);
        assert_eq!(sent[1], "eA==");
        assert_eq!(sent[2], value[2]);
        assert_eq!(sent[3], value[3]);
    }

    #[test]
    fn unsupported_parts_are_named_not_dropped() {
        assert_eq!(
            unsupported(&Part::audio("audio/wav", vec![0u8; 1234]), "anthropic"),
            "[audio: audio/wav, 1234 bytes — not supported by anthropic]"
        );
        assert_eq!(
            unsupported(&Part::file("text/csv", Some("a.csv".into()), vec![1u8; 3]), "x"),
            "[file: text/csv, a.csv, 3 bytes — not supported by x]"
        );
        assert_eq!(
            unsupported(&Part::image_url("image/png", "https://e/a.png"), "x"),
            "[image: image/png, https://e/a.png — not supported by x]"
        );
        assert_eq!(result_header("shot", "c1", false), "[shot result, call c1]");
        assert_eq!(result_header("shot", "c1", true), "[shot error, call c1]");
    }
}
