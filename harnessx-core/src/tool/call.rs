//! A call the model made, what a handler returns, and the result sent back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::{Part, Parts};
use crate::depth::{MAX_JSON_DEPTH, value_too_deep};

/// One tool call as a model requested it: an id, a name (possibly misspelt or decorated),
/// and the raw JSON text of the arguments (possibly malformed or cut off).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; echoed in the [`ToolResult`].
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments as raw JSON text. Empty text and `null` count as `{}`.
    pub arguments: String,
}

impl ToolCall {
    /// A call with raw JSON argument text.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    /// A call whose arguments are already a JSON value (e.g. Anthropic's `input` object).
    pub fn from_value(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        Self::new(id, name, arguments.to_string())
    }
}

/// What a handler produced on success: text for the model, media beside it (an image, a
/// document), and, optionally, the same result as structured JSON for programs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// Machine-readable form of the result, if the tool has one.
    pub structured_content: Option<Value>,
    /// Media the model sees beside the text (images, documents, audio), in order. Not
    /// written when empty, so a text-only result serializes as it did before parts.
    #[serde(default, skip_serializing_if = "Parts::is_empty")]
    pub parts: Parts,
}

impl ToolOutput {
    /// A text result.
    pub fn text(content: impl Into<String>) -> Self {
        Self { content: content.into(), structured_content: None, parts: Parts::new() }
    }

    /// This result with `part` added after its other parts (an image the tool produced,
    /// a document it read). Keep a short line in [`content`](Self::content) that names
    /// the part: it is what a model or a provider that takes no media reads.
    #[must_use]
    pub fn with_part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// A JSON result: strings pass through as text, other values are serialized compactly
    /// and also kept as structured content. A value nested more than
    /// [`MAX_JSON_DEPTH`] levels deep is kept without text (writing
    /// it out would recurse past the stack); the engine turns such a result into an error.
    pub fn json(value: Value) -> Self {
        match value {
            Value::String(s) => Self::text(s),
            deep if value_too_deep(&deep, MAX_JSON_DEPTH) => {
                Self { content: String::new(), structured_content: Some(deep), parts: Parts::new() }
            }
            // `to_string` writes straight into a buffer (`Display` goes through a formatter).
            other => Self {
                content: serde_json::to_string(&other).unwrap_or_else(|_| other.to_string()),
                structured_content: Some(other),
                parts: Parts::new(),
            },
        }
    }

    /// Serializes any value as a result (see [`ToolOutput::json`]).
    pub fn from_serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, crate::ToolError> {
        Ok(Self::json(serde_json::to_value(value)?))
    }
}

impl From<String> for ToolOutput {
    fn from(s: String) -> Self {
        Self::text(s)
    }
}

impl From<&str> for ToolOutput {
    fn from(s: &str) -> Self {
        Self::text(s)
    }
}

impl From<Value> for ToolOutput {
    fn from(v: Value) -> Self {
        Self::json(v)
    }
}

/// The outcome of one call, ready to go back to the model. Every failure (unknown tool,
/// bad arguments, permission, timeout, handler error or panic) is a result with
/// `is_error` set, never a Rust error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The registered name of the tool that ran, or the name as requested when it could
    /// not be resolved.
    pub name: String,
    /// Text for the model.
    pub content: String,
    /// Whether this is an error result.
    pub is_error: bool,
    /// Structured form of a successful result, if the tool produced one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Media beside the text ([`ToolOutput::parts`]). Not written when empty, so the
    /// journal and the events of a text-only result are as they were before parts.
    #[serde(default, skip_serializing_if = "Parts::is_empty")]
    pub parts: Parts,
}

impl ToolResult {
    /// A successful result.
    pub fn success(call_id: impl Into<String>, name: impl Into<String>, output: ToolOutput) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: output.content,
            is_error: false,
            structured_content: output.structured_content,
            parts: output.parts,
        }
    }

    /// An error result with a message for the model.
    pub fn error(call_id: impl Into<String>, name: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: message.into(),
            is_error: true,
            structured_content: None,
            parts: Parts::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // A text-only result is written as before parts existed: journals and events unchanged.
    #[test]
    fn text_only_results_are_written_without_parts() {
        let result = ToolResult::success("c1", "t", ToolOutput::text("ok"));
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"call_id": "c1", "name": "t", "content": "ok", "is_error": false})
        );
        let output = serde_json::to_value(ToolOutput::text("ok")).unwrap();
        assert_eq!(output, json!({"content": "ok", "structured_content": null}));
    }

    #[test]
    fn a_success_keeps_the_outputs_parts() {
        let image = Part::image("image/png", vec![1, 2, 3]);
        let output = ToolOutput::text("[image]").with_part(image.clone());
        let result = ToolResult::success("c1", "t", output);
        assert_eq!(*result.parts, [image]);
        let back: ToolResult = serde_json::from_value(serde_json::to_value(&result).unwrap()).unwrap();
        assert_eq!(back, result);
    }
}
