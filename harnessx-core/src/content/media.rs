//! What a tool function returns to hand the model media: an [`Image`], a [`File`] or a
//! [`Content`] (text and media in order). A `#[tool]` function (or a typed handler) that
//! returns one of them, or a `Result` of one, gives a result whose text names each medium
//! in one line (`[image: image/png, 1234 bytes]`: what a model or a provider that takes
//! no media reads) and whose [`parts`](crate::ToolOutput::parts) carry the bytes.
//!
//! ```
//! use harnessx_core::content::{Content, Image, IntoToolOutput};
//!
//! # let png = b"\x89PNG\r\n\x1a\n".to_vec();
//! // What `#[tool] fn chart(values: Vec<f64>) -> Content` returns, as the model gets it:
//! let chart = Content::new().text("a chart of 3 values").image(Image::png(png));
//! let output = chart.into_tool_output().unwrap();
//! assert_eq!(output.content, "a chart of 3 values\n[image: image/png, 8 bytes]");
//! assert_eq!(output.parts.len(), 1);
//! ```

use bytes::Bytes;

use super::{Blob, Part, sniff};
use crate::ToolOutput;
use crate::error::ToolError;

/// An image a tool returns: its media type and bytes (shared, not copied), or a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The media type (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
    pub media_type: String,
    /// Its bytes, or a URL.
    pub data: Blob,
}

impl Image {
    /// An image of `media_type`.
    pub fn new(media_type: impl Into<String>, data: impl Into<Bytes>) -> Self {
        Self { media_type: media_type.into(), data: Blob::Bytes(data.into()) }
    }

    /// A PNG image.
    pub fn png(data: impl Into<Bytes>) -> Self {
        Self::new("image/png", data)
    }

    /// A JPEG image.
    pub fn jpeg(data: impl Into<Bytes>) -> Self {
        Self::new("image/jpeg", data)
    }

    /// An image whose type is read from its first bytes (PNG, JPEG, GIF, WebP); `None`
    /// when they are none of those.
    pub fn sniffed(data: impl Into<Bytes>) -> Option<Self> {
        let data = data.into();
        sniff(&data).filter(|t| t.starts_with("image/")).map(|t| Self::new(t, data))
    }

    /// An image at a URL, for the providers that fetch URLs themselves.
    pub fn url(media_type: impl Into<String>, url: impl Into<String>) -> Self {
        Self { media_type: media_type.into(), data: Blob::Url(url.into()) }
    }
}

/// A document or other file a tool returns (a PDF, say): its media type, name and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The media type (`application/pdf`, ...).
    pub media_type: String,
    /// Its file name, when it has one.
    pub name: Option<String>,
    /// Its bytes, or a URL.
    pub data: Blob,
}

impl File {
    /// A file of `media_type`.
    pub fn new(media_type: impl Into<String>, name: Option<String>, data: impl Into<Bytes>) -> Self {
        Self { media_type: media_type.into(), name, data: Blob::Bytes(data.into()) }
    }

    /// A PDF document named `name`.
    pub fn pdf(name: impl Into<String>, data: impl Into<Bytes>) -> Self {
        Self::new("application/pdf", Some(name.into()), data)
    }
}

impl From<Image> for Part {
    fn from(image: Image) -> Self {
        Part::Image { media_type: image.media_type, data: image.data }
    }
}

impl From<File> for Part {
    fn from(file: File) -> Self {
        Part::File { media_type: file.media_type, name: file.name, data: file.data }
    }
}

/// Text and media in order: what a tool returns when its result is more than one thing
/// (a caption and a chart, two pages).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Content {
    parts: Vec<Part>,
}

impl Content {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// This content with `text` after what it has.
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// This content with `image` after what it has.
    #[must_use]
    pub fn image(self, image: Image) -> Self {
        self.part(image.into())
    }

    /// This content with `file` after what it has.
    #[must_use]
    pub fn file(self, file: File) -> Self {
        self.part(file.into())
    }

    /// This content with `part` after what it has.
    #[must_use]
    pub fn part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }
}

impl From<Image> for Content {
    fn from(image: Image) -> Self {
        Content::new().image(image)
    }
}

impl From<File> for Content {
    fn from(file: File) -> Self {
        Content::new().file(file)
    }
}

impl FromIterator<Part> for Content {
    fn from_iter<I: IntoIterator<Item = Part>>(iter: I) -> Self {
        Self { parts: iter.into_iter().collect() }
    }
}

impl From<Content> for ToolOutput {
    /// The text parts, one per line, with a line naming each medium in its place
    /// ([`Part::label`]); the media as the output's parts.
    fn from(content: Content) -> Self {
        let mut output = ToolOutput::text(String::new());
        for part in content.parts {
            if !output.content.is_empty() {
                output.content.push('\n');
            }
            match part {
                Part::Text(text) => output.content.push_str(&text),
                medium => {
                    output.content.push_str(&medium.label());
                    output.parts.push(medium);
                }
            }
        }
        output
    }
}

impl From<Image> for ToolOutput {
    fn from(image: Image) -> Self {
        Content::from(image).into()
    }
}

impl From<File> for ToolOutput {
    fn from(file: File) -> Self {
        Content::from(file).into()
    }
}

impl Part {
    /// The one line that stands for a medium in a text: `[image: image/png, 1234 bytes]`,
    /// `[file report.pdf: application/pdf, 9012 bytes]`, `[image: image/png, at URL]`; a
    /// text part is its text.
    pub fn label(&self) -> String {
        let (kind, media_type, data) = match self {
            Part::Text(text) => return text.clone(),
            Part::Image { media_type, data } => ("image".to_owned(), media_type, data),
            Part::Audio { media_type, data } => ("audio".to_owned(), media_type, data),
            Part::File { media_type, name, data } => {
                (name.as_ref().map_or_else(|| "file".to_owned(), |n| format!("file {n}")), media_type, data)
            }
        };
        match data {
            Blob::Bytes(bytes) => format!("[{kind}: {media_type}, {} bytes]", bytes.len()),
            Blob::Url(url) => format!("[{kind}: {media_type}, at {url}]"),
        }
    }
}

/// What a tool function may return: anything `Serialize` (strings as text, other values
/// as JSON), or [`Image`], [`File`], [`Content`] (media as parts).
pub trait IntoToolOutput {
    /// The result the model is sent.
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl<T: serde::Serialize> IntoToolOutput for T {
    #[inline]
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        ToolOutput::from_serialize(&self)
    }
}

impl IntoToolOutput for Image {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self.into())
    }
}

impl IntoToolOutput for File {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self.into())
    }
}

impl IntoToolOutput for Content {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn content_becomes_text_with_a_line_per_medium_and_the_media_as_parts() {
        let content =
            Content::new().text("a chart").image(Image::png(PNG)).file(File::pdf("r.pdf", &b"%PDF-1.7"[..]));
        let output = content.into_tool_output().unwrap();
        assert_eq!(
            output.content,
            "a chart\n[image: image/png, 16 bytes]\n[file r.pdf: application/pdf, 8 bytes]"
        );
        assert_eq!(output.parts.len(), 2);
        assert_eq!(output.parts[0], Part::image("image/png", PNG));
    }

    #[test]
    fn an_image_alone_is_its_line_and_its_part() {
        let output = Image::sniffed(PNG).unwrap().into_tool_output().unwrap();
        assert_eq!(output.content, "[image: image/png, 16 bytes]");
        assert!(Image::sniffed(&b"%PDF-1.7"[..]).is_none());
        assert_eq!(
            Image::url("image/png", "https://e.x/a.png").into_tool_output().unwrap().content,
            "[image: image/png, at https://e.x/a.png]"
        );
    }

    #[test]
    fn serializable_values_are_unchanged() {
        assert_eq!("hi".into_tool_output().unwrap().content, "hi");
        assert_eq!(vec![1, 2].into_tool_output().unwrap().content, "[1,2]");
    }
}
