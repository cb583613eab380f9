//! What the model reads of an MCP tool's result.
//!
//! Text blocks are the result's text. Media pass through as parts: an image block becomes
//! an [`Image`](Part::Image) part, audio an [`Audio`](Part::Audio) part, an embedded blob
//! resource a [`File`](Part::File) part (named by the last segment of its URI), their
//! base64 decoded once into shared bytes. Each medium also leaves one line in the text,
//! in its place among the text blocks, so a provider or a model that takes no media still
//! reads that something was there:
//!
//! ```text
//! [image: image/png, 1234 bytes]
//! [audio: audio/wav, 5678 bytes]
//! [resource file:///tmp/report.pdf: application/pdf, 9012 bytes]
//! ```
//!
//! A medium whose base64 does not decode is left out, and its line says so
//! (`[image: image/png, not valid base64, left out]`). Text resources stay text. An error
//! result (`isError`) is its text only.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use harnessx_core::{Bytes, Part, ToolError, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Standard base64, its padding optional (servers differ).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What the model reads of a result: text blocks joined, media as parts with a line each
/// in the text (never dropped silently), structured content kept; `isError` makes it an
/// error result.
pub(super) fn output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut lines: Vec<String> = Vec::with_capacity(result.content.len());
    let mut parts = Vec::new();
    for block in &result.content {
        let (line, part) = convert(block);
        lines.push(line);
        parts.extend(part);
    }
    if lines.is_empty()
        && let Some(structured) = &result.structured_content
    {
        lines.push(structured.to_string());
    }
    let text = lines.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::new(if text.is_empty() { "the tool failed".to_owned() } else { text }));
    }
    Ok(ToolOutput { content: text, structured_content: result.structured_content, parts: parts.into() })
}

/// A block's line in the text, and its part when it is a medium that decoded.
pub(super) fn convert(block: &ContentBlock) -> (String, Option<Part>) {
    match block {
        ContentBlock::Text(text) => (text.text.clone(), None),
        ContentBlock::Image(image) => medium("image", &image.mime_type, &image.data, |data| Part::Image {
            media_type: image.mime_type.clone(),
            data: data.into(),
        }),
        ContentBlock::Audio(audio) => medium("audio", &audio.mime_type, &audio.data, |data| Part::Audio {
            media_type: audio.mime_type.clone(),
            data: data.into(),
        }),
        ContentBlock::Resource(embedded) => resource(&embedded.resource),
        ContentBlock::ResourceLink(link) => (format!("[resource link: {}]", link.uri), None),
        // Unreachable with the rmcp built today; kept for kinds a newer rmcp adds.
        #[allow(unreachable_patterns)]
        _ => ("[content of a kind this client does not know]".to_owned(), None),
    }
}

/// A resource's line and part: text as `[resource URI]` and its text, a blob as a
/// [`File`](Part::File) part (named by its URI's last segment) with a line naming it.
pub(super) fn resource(contents: &ResourceContents) -> (String, Option<Part>) {
    match contents {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            (format!("[resource {uri}]\n{text}"), None)
        }
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
            let media_type = mime_type.as_deref().unwrap_or("application/octet-stream");
            medium(&format!("resource {uri}"), media_type, blob, |data| Part::File {
                media_type: media_type.to_owned(),
                name: file_name(uri),
                data: data.into(),
            })
        }
        #[allow(unreachable_patterns)]
        _ => ("[a resource of a kind this client does not know]".to_owned(), None),
    }
}

/// A medium's line and part: `[what: media type, N bytes]` and the part made of its
/// decoded bytes, or a line saying it was left out.
fn medium(
    what: &str,
    media_type: &str,
    base64: &str,
    part: impl FnOnce(Bytes) -> Part,
) -> (String, Option<Part>) {
    match BASE64.decode(base64) {
        Ok(bytes) => {
            (format!("[{what}: {media_type}, {} bytes]", bytes.len()), Some(part(Bytes::from(bytes))))
        }
        Err(e) => {
            tracing::debug!(what, media_type, error = %e, "an MCP result's medium is not valid base64");
            (format!("[{what}: {media_type}, not valid base64, left out]"), None)
        }
    }
}

/// The file name in a resource's URI: its last path segment, when it has one.
fn file_name(uri: &str) -> Option<String> {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let name = path.rsplit('/').next().unwrap_or(path);
    (!name.is_empty() && !name.contains(':')).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use harnessx_core::Blob;
    use rmcp::model::EmbeddedResource;

    use super::*;

    fn bytes_of(part: &Part) -> &[u8] {
        part.blob().and_then(Blob::as_bytes).expect("bytes")
    }

    #[test]
    fn media_pass_through_as_parts_with_a_line_each() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("here it is"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ContentBlock::audio("UklGRg", "audio/wav"),
            ContentBlock::resource(
                ResourceContents::blob("JVBERi0xLjc=", "file:///tmp/report.pdf?v=2")
                    .with_mime_type("application/pdf"),
            ),
            ContentBlock::embedded_text("file:///notes.txt", "plain notes"),
        ]);
        let output = output(result).unwrap();
        assert_eq!(
            output.content,
            "here it is\n[image: image/png, 8 bytes]\n[audio: audio/wav, 4 bytes]\n\
             [resource file:///tmp/report.pdf?v=2: application/pdf, 8 bytes]\n[resource file:///notes.txt]\nplain notes"
        );
        assert_eq!(output.parts.len(), 3);
        assert_eq!(output.parts[0].media_type(), Some("image/png"));
        assert_eq!(bytes_of(&output.parts[0]), b"\x89PNG\r\n\x1a\n");
        assert!(matches!(output.parts[1], Part::Audio { .. }));
        assert_eq!(bytes_of(&output.parts[1]), b"RIFF");
        let Part::File { media_type, name, .. } = &output.parts[2] else { panic!("{:?}", output.parts[2]) };
        assert_eq!((media_type.as_str(), name.as_deref()), ("application/pdf", Some("report.pdf")));
        assert_eq!(bytes_of(&output.parts[2]), b"%PDF-1.7");
    }

    #[test]
    fn a_medium_that_does_not_decode_is_left_out_and_named() {
        let output =
            output(CallToolResult::success(vec![ContentBlock::image("not base64!", "image/png")])).unwrap();
        assert_eq!(output.content, "[image: image/png, not valid base64, left out]");
        assert!(output.parts.is_empty());
    }

    #[test]
    fn a_blob_without_a_type_or_a_name_is_an_octet_stream_file() {
        let block = ContentBlock::Resource(EmbeddedResource::new(ResourceContents::blob("AAEC", "mem:blob")));
        let output = output(CallToolResult::success(vec![block])).unwrap();
        assert_eq!(output.content, "[resource mem:blob: application/octet-stream, 3 bytes]");
        assert_eq!(
            *output.parts,
            [Part::File {
                media_type: "application/octet-stream".into(),
                name: None,
                data: Blob::Bytes(Bytes::from_static(&[0, 1, 2]))
            }]
        );
    }

    #[test]
    fn an_error_result_is_its_text() {
        let result =
            CallToolResult::error(vec![ContentBlock::text("bad"), ContentBlock::image("AAAA", "image/png")]);
        assert_eq!(output(result).unwrap_err().to_string(), "bad\n[image: image/png, 3 bytes]");
    }
}
