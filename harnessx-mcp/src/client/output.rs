//! What the model reads of an MCP tool's result.

use harnessx_core::{ToolError, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What the model reads of a result: text blocks joined, other blocks described (never
/// dropped silently), structured content kept; `isError` makes it an error result.
pub(super) fn output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::new(if text.is_empty() { "the tool failed".to_owned() } else { text }));
    }
    Ok(ToolOutput { content: text, structured_content: result.structured_content, parts: Vec::new() })
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!("[image: {}, {} bytes of base64]", image.mime_type, image.data.len())
        }
        ContentBlock::Audio(audio) => {
            format!("[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len())
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => format!(
                "[resource {uri}: {}, {} bytes of base64]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            ),
            _ => "[a resource of a kind this client does not know]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        // Unreachable with the rmcp built today; kept for kinds a newer rmcp adds.
        #[allow(unreachable_patterns)]
        _ => "[content of a kind this client does not know]".to_owned(),
    }
}
