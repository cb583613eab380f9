//! Content parts: the text, images, documents and audio that user messages, tool results,
//! MCP results and the history carry, one type from the user to the journal.
//!
//! A [`Part`] is text or a piece of media; a medium's data is a [`Blob`]: bytes shared
//! without copying ([`Bytes`], so a clone of a part or a message is a reference count, not a
//! copy of a 5 MB image), or a URL for the providers that fetch URLs themselves. The parts
//! beside a text are [`Parts`]: one word and no allocation when there are none.
//!
//! # Serialized shape
//!
//! Parts are written as flat, tagged JSON objects, the bytes in standard base64 (with
//! padding):
//!
//! ```json
//! {"type": "text", "text": "what is in this picture?"}
//! {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo..."}
//! {"type": "image", "media_type": "image/png", "url": "https://example.com/a.png"}
//! {"type": "file", "media_type": "application/pdf", "name": "report.pdf", "data": "JVBERi0..."}
//! {"type": "audio", "media_type": "audio/wav", "data": "UklGR..."}
//! ```
//!
//! A durable store writes a medium's bytes once, apart, and the part as a reference to
//! them, `{"type": "image", "media_type": "image/png", "sha256": "9f86d0…", "bytes": 1234}`
//! (see [`store`]).
//!
//! That is the journal's and the wire's form. What a person or a program watching a run
//! sees (`--json` events, logs) is [`Part::describe`], which names a medium's type and size
//! and never carries its base64.

use std::fmt;

use base64::Engine as _;
use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
pub use bytes::Bytes;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

mod media;
mod parts;
pub mod store;

pub use media::{Content, File, Image, IntoToolOutput};
pub use parts::Parts;

/// One part of a message or a tool result.
///
/// The enum is exhaustive on purpose: a provider adapter matches every kind, so a new
/// kind is a compile error in each adapter rather than a part silently dropped.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "PartWire")]
pub enum Part {
    /// Text.
    Text(String),
    /// An image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
    Image {
        /// The image's media type.
        media_type: String,
        /// Its bytes, or a URL.
        data: Blob,
    },
    /// A document or other file (`application/pdf`, `text/csv`, ...).
    File {
        /// The file's media type.
        media_type: String,
        /// Its file name, when it has one (some providers show it to the model).
        name: Option<String>,
        /// Its bytes, or a URL.
        data: Blob,
    },
    /// Audio, for the providers that take it (`audio/wav`, `audio/mpeg`, ...).
    Audio {
        /// The audio's media type.
        media_type: String,
        /// Its bytes, or a URL.
        data: Blob,
    },
}

/// The data of a medium: bytes shared without copying, or a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blob {
    /// The bytes themselves (a clone shares them).
    Bytes(Bytes),
    /// A URL, for the providers that accept URLs and fetch them themselves.
    Url(String),
}

impl Blob {
    /// The bytes, unless this is a URL.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match self {
            Self::Bytes(bytes) => Some(bytes),
            Self::Url(_) => None,
        }
    }

    /// The URL, unless these are bytes.
    pub fn url(&self) -> Option<&str> {
        match self {
            Self::Bytes(_) => None,
            Self::Url(url) => Some(url),
        }
    }

    /// How many bytes are held: the data's length, 0 for a URL (its bytes are elsewhere).
    pub fn len(&self) -> usize {
        self.as_bytes().map_or(0, Bytes::len)
    }

    /// Whether no bytes are held (an empty medium, or a URL).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<Bytes> for Blob {
    fn from(bytes: Bytes) -> Self {
        Self::Bytes(bytes)
    }
}

impl From<Vec<u8>> for Blob {
    /// Takes the vector's buffer over (no copy).
    fn from(bytes: Vec<u8>) -> Self {
        Self::Bytes(Bytes::from(bytes))
    }
}

impl From<&'static [u8]> for Blob {
    fn from(bytes: &'static [u8]) -> Self {
        Self::Bytes(Bytes::from_static(bytes))
    }
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// An image from its bytes (a `Vec<u8>` is taken over, a [`Bytes`] shared).
    pub fn image(media_type: impl Into<String>, data: impl Into<Bytes>) -> Self {
        Self::Image { media_type: media_type.into(), data: Blob::Bytes(data.into()) }
    }

    /// An image the provider fetches from a URL.
    pub fn image_url(media_type: impl Into<String>, url: impl Into<String>) -> Self {
        Self::Image { media_type: media_type.into(), data: Blob::Url(url.into()) }
    }

    /// A document or other file from its bytes, with its file name when it has one.
    pub fn file(media_type: impl Into<String>, name: Option<String>, data: impl Into<Bytes>) -> Self {
        Self::File { media_type: media_type.into(), name, data: Blob::Bytes(data.into()) }
    }

    /// Audio from its bytes.
    pub fn audio(media_type: impl Into<String>, data: impl Into<Bytes>) -> Self {
        Self::Audio { media_type: media_type.into(), data: Blob::Bytes(data.into()) }
    }

    /// The part's kind as its serialized `type`: `"text"`, `"image"`, `"file"`, `"audio"`.
    pub fn kind(&self) -> &'static str {
        self.wire_kind().as_str()
    }

    /// The media type of a medium; `None` for text.
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Text(_) => None,
            Self::Image { media_type, .. }
            | Self::File { media_type, .. }
            | Self::Audio { media_type, .. } => Some(media_type),
        }
    }

    /// The data of a medium; `None` for text.
    pub fn blob(&self) -> Option<&Blob> {
        match self {
            Self::Text(_) => None,
            Self::Image { data, .. } | Self::File { data, .. } | Self::Audio { data, .. } => Some(data),
        }
    }

    /// How many bytes the part holds: a text's UTF-8 length, a medium's data length, 0 for
    /// a medium given by URL.
    pub fn byte_len(&self) -> usize {
        match self {
            Self::Text(text) => text.len(),
            _ => self.blob().map_or(0, Blob::len),
        }
    }

    /// A summary to show a person or a program watching a run (`--json` events, logs):
    /// text as it is, a medium as its type, media type, file name and size, never its
    /// base64: `{"type":"image","media_type":"image/png","bytes":1234}`, or `"url"` in
    /// place of `"bytes"` for a medium given by URL.
    pub fn describe(&self) -> Value {
        let (media_type, data) = match self {
            Self::Text(text) => return json!({ "type": "text", "text": text }),
            Self::Image { media_type, data }
            | Self::File { media_type, data, .. }
            | Self::Audio { media_type, data } => (media_type, data),
        };
        let mut summary = json!({ "type": self.kind(), "media_type": media_type });
        if let Self::File { name: Some(name), .. } = self {
            summary["name"] = json!(name);
        }
        match data {
            Blob::Bytes(bytes) => summary["bytes"] = json!(bytes.len()),
            Blob::Url(url) => summary["url"] = json!(url),
        }
        summary
    }

    fn wire_kind(&self) -> Kind {
        match self {
            Self::Text(_) => Kind::Text,
            Self::Image { .. } => Kind::Image,
            Self::File { .. } => Kind::File,
            Self::Audio { .. } => Kind::Audio,
        }
    }
}

/// The media type of `bytes` read from their first bytes (their "magic number"), for the
/// types providers take as images or documents: PNG, JPEG, GIF, WebP and PDF. `None` for
/// anything else.
///
/// This looks at the signature only. A PNG signature followed by garbage is still
/// `"image/png"` here: whether the whole file is a valid image is not checked (a provider
/// rejects a broken one; decoding it here would put an image decoder on every read).
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xFF\xD8\xFF", "image/jpeg"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"%PDF-", "application/pdf"),
    ];
    if let Some((_, media_type)) = SIGNATURES.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(media_type);
    }
    // WebP: a RIFF container (`RIFF`, a 4-byte size) whose form type is `WEBP`.
    (bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP").then_some("image/webp")
}

/// The media type of audio `bytes` read from their signature, for the audio providers
/// take: WAV (`audio/wav`) and MP3 (`audio/mpeg`). `None` for anything else. Apart from
/// [`sniff`], so a tool that passes images and documents does not take audio for one.
pub fn sniff_audio(bytes: &[u8]) -> Option<&'static str> {
    if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WAVE" {
        return Some("audio/wav");
    }
    // An ID3v2 tag, or an MPEG-1 Layer III frame header (11 sync bits, version 1, layer
    // 3: `FF FB`, `FF FA`, `FF F3`, `FF F2`).
    let frame = bytes.len() >= 2 && bytes[0] == 0xFF && matches!(bytes[1], 0xFA | 0xFB | 0xF2 | 0xF3);
    (bytes.starts_with(b"ID3") || frame).then_some("audio/mpeg")
}

/// A part's `type` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Text,
    Image,
    File,
    Audio,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Image => "image",
            Self::File => "file",
            Self::Audio => "audio",
        }
    }
}

/// A part as read: one flat object, every field optional, checked by [`Part::try_from`].
/// Read as a struct (not an internally tagged enum, which buffers the whole object, the
/// base64 included, before looking at `type`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartWire {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    data: Option<Base64>,
    #[serde(default)]
    url: Option<String>,
    /// A reference to bytes kept apart ([`store`]): their SHA-256 and length.
    #[serde(default)]
    sha256: Option<String>,
    #[serde(default)]
    bytes: Option<u64>,
}

impl TryFrom<PartWire> for Part {
    type Error = String;

    fn try_from(wire: PartWire) -> Result<Self, String> {
        let PartWire { kind, text, media_type, name, data, url, sha256, bytes } = wire;
        let what = kind.as_str();
        if kind == Kind::Text {
            if media_type.is_some() || name.is_some() || data.is_some() || url.is_some() || sha256.is_some() {
                return Err("a text part has only `text`".into());
            }
            return text.map(Part::Text).ok_or_else(|| "a text part needs `text`".into());
        }
        if text.is_some() {
            return Err(format!("the {what} part has no `text` (text is a part of its own)"));
        }
        if name.is_some() && kind != Kind::File {
            return Err(format!("`name` belongs to a file part, not to the {what} part"));
        }
        let media_type = media_type.ok_or_else(|| format!("the {what} part needs `media_type`"))?;
        if bytes.is_some() != sha256.is_some() {
            return Err(format!("the {what} part has `sha256` and `bytes` together or neither"));
        }
        let data = match (data, url, sha256) {
            (Some(Base64(bytes)), None, None) => Blob::Bytes(bytes),
            (None, Some(url), None) => Blob::Url(url),
            (None, None, Some(sha256)) => Blob::Bytes(store::resolve(&sha256, bytes.unwrap_or_default())?),
            _ => {
                return Err(format!(
                    "the {what} part needs exactly one of `data` (base64), `url` and `sha256` (a stored blob)"
                ));
            }
        };
        Ok(match kind {
            Kind::Image => Part::Image { media_type, data },
            Kind::File => Part::File { media_type, name, data },
            Kind::Audio => Part::Audio { media_type, data },
            Kind::Text => unreachable!("handled above"),
        })
    }
}

/// A part as written: the same flat object, borrowed from the part.
#[derive(Serialize)]
struct PartRef<'a> {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    media_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Base64Ref<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<usize>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (text, name) = match self {
            Self::Text(text) => (Some(text.as_str()), None),
            Self::File { name, .. } => (None, name.as_deref()),
            _ => (None, None),
        };
        let blob = self.blob();
        let media_type = self.media_type();
        let bytes = blob.and_then(Blob::as_bytes);
        // Inside a `store::collecting` scope, bytes kept apart are written as a reference.
        let sha256 =
            media_type.zip(bytes).and_then(|(media_type, bytes)| store::reference(media_type, bytes));
        PartRef {
            kind: self.wire_kind(),
            text,
            media_type,
            name,
            data: bytes.filter(|_| sha256.is_none()).map(|bytes| Base64Ref(bytes)),
            url: blob.and_then(Blob::url),
            bytes: sha256.as_ref().and(bytes).map(Bytes::len),
            sha256,
        }
        .serialize(serializer)
    }
}

/// Bytes written as base64 straight into the serializer's output (no intermediate string).
struct Base64Ref<'a>(&'a [u8]);

impl Serialize for Base64Ref<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&Base64Display::new(self.0, &STANDARD))
    }
}

/// Bytes read from base64, decoded from the text as the deserializer holds it.
struct Base64(Bytes);

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Decode;
        impl Visitor<'_> for Decode {
            type Value = Base64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("base64 text")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Base64, E> {
                STANDARD
                    .decode(text)
                    .map(|bytes| Base64(Bytes::from(bytes)))
                    .map_err(|e| E::custom(format_args!("`data` is not base64: {e}")))
            }
        }
        deserializer.deserialize_str(Decode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn sniffs_by_signature() {
        assert_eq!(sniff(PNG), Some("image/png"));
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0\0\x10JFIF"), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF87a\x01\0"), Some("image/gif"));
        assert_eq!(sniff(b"GIF89a\x01\0"), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"%PDF-1.7\n"), Some("application/pdf"));
    }

    #[test]
    fn sniff_leaves_other_bytes_alone() {
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(b"hello, world"), None);
        assert_eq!(sniff(b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script/></svg>"), None);
        // A WAV file is a RIFF container too, not a WebP.
        assert_eq!(sniff(b"RIFF\x24\0\0\0WAVEfmt "), None);
        // Cut short: a signature's prefix is not the signature.
        assert_eq!(sniff(b"\x89PNG"), None);
        assert_eq!(sniff_audio(b"RIFF\x24\0\0\0WAVEfmt "), Some("audio/wav"));
        assert_eq!(sniff_audio(b"ID3\x04\0\0"), Some("audio/mpeg"));
        assert_eq!(sniff_audio(b"\xFF\xFB\x90\x64"), Some("audio/mpeg"));
        assert_eq!(sniff_audio(b"RIFF\x24\0\0\0WEBPVP8 "), None);
        assert_eq!(sniff_audio(PNG), None);
        assert_eq!(sniff(b"RIFF\0\0\0\0WEB"), None);
        // The extension of a file name plays no part: PK is a zip, whatever it is named.
        assert_eq!(sniff(b"PK\x03\x04"), None);
    }

    // The signature is all that is read: a PNG header on garbage is still `image/png`
    // (validating the whole image is the provider's, or a later step's, business).
    #[test]
    fn png_header_on_garbage_is_still_png_by_magic() {
        let mut garbage = b"\x89PNG\r\n\x1a\n".to_vec();
        garbage.extend((0..1000u32).map(|i| (i * 7919 % 251) as u8));
        assert_eq!(sniff(&garbage), Some("image/png"));
    }

    #[test]
    fn media_round_trips_as_base64() {
        let image = Part::image("image/png", PNG);
        let text = serde_json::to_string(&image).unwrap();
        assert_eq!(text, r#"{"type":"image","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="}"#);
        assert_eq!(serde_json::from_str::<Part>(&text).unwrap(), image);

        let file = Part::file("application/pdf", Some("a.pdf".into()), &b"%PDF-1.4"[..]);
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(
            text,
            r#"{"type":"file","media_type":"application/pdf","name":"a.pdf","data":"JVBERi0xLjQ="}"#
        );
        assert_eq!(serde_json::from_str::<Part>(&text).unwrap(), file);

        let audio = Part::audio("audio/wav", Vec::from(&b"RIFF"[..]));
        assert_eq!(serde_json::from_value::<Part>(serde_json::to_value(&audio).unwrap()).unwrap(), audio);
    }

    #[test]
    fn text_and_urls_round_trip() {
        let text = Part::text("hello");
        assert_eq!(serde_json::to_string(&text).unwrap(), r#"{"type":"text","text":"hello"}"#);
        assert_eq!(serde_json::from_str::<Part>(r#"{"type":"text","text":"hello"}"#).unwrap(), text);

        let url = Part::image_url("image/jpeg", "https://example.com/a.jpg");
        let written = serde_json::to_string(&url).unwrap();
        assert_eq!(
            written,
            r#"{"type":"image","media_type":"image/jpeg","url":"https://example.com/a.jpg"}"#
        );
        assert_eq!(serde_json::from_str::<Part>(&written).unwrap(), url);
    }

    #[test]
    fn malformed_parts_are_refused_with_a_reason() {
        let cases = [
            (r#"{"type":"image","data":"AAAA"}"#, "needs `media_type`"),
            (r#"{"type":"image","media_type":"image/png"}"#, "exactly one of `data`"),
            (r#"{"type":"image","media_type":"image/png","data":"AAAA","url":"u"}"#, "exactly one of `data`"),
            (r#"{"type":"image","media_type":"image/png","data":"not base64!"}"#, "not base64"),
            (r#"{"type":"image","media_type":"image/png","data":"AAAA","name":"a"}"#, "`name` belongs"),
            (r#"{"type":"text"}"#, "needs `text`"),
            (r#"{"type":"text","text":"a","data":"AAAA"}"#, "only `text`"),
            (r#"{"type":"video","media_type":"video/mp4","data":"AAAA"}"#, "unknown variant"),
            (r#"{"type":"image","media_type":"image/png","data":"AAAA","size":3}"#, "unknown field"),
        ];
        for (input, reason) in cases {
            let error = serde_json::from_str::<Part>(input).unwrap_err().to_string();
            assert!(error.contains(reason), "{input}: {error}");
        }
    }

    #[test]
    fn describe_never_carries_base64() {
        let image = Part::image("image/png", vec![0u8; 1234]);
        assert_eq!(image.describe(), json!({"type": "image", "media_type": "image/png", "bytes": 1234}));
        let file = Part::file("application/pdf", Some("r.pdf".into()), vec![0u8; 9]);
        assert_eq!(
            file.describe(),
            json!({"type": "file", "media_type": "application/pdf", "name": "r.pdf", "bytes": 9})
        );
        let url = Part::image_url("image/png", "https://example.com/a.png");
        assert_eq!(
            url.describe(),
            json!({"type": "image", "media_type": "image/png", "url": "https://example.com/a.png"})
        );
        assert_eq!(Part::text("hi").describe(), json!({"type": "text", "text": "hi"}));
    }

    #[test]
    fn clones_share_the_bytes() {
        let image = Part::image("image/png", vec![1u8; 4096]);
        let copy = image.clone();
        let (Some(a), Some(b)) =
            (image.blob().and_then(Blob::as_bytes), copy.blob().and_then(Blob::as_bytes))
        else {
            panic!("both hold bytes");
        };
        assert_eq!(a.as_ptr(), b.as_ptr());
        assert_eq!(image.byte_len(), 4096);
        assert_eq!(Part::image_url("image/png", "u").byte_len(), 0);
        assert_eq!(Part::text("héllo").byte_len(), 6);
    }
}
