//! The conversation: provider-neutral messages.

use serde::{Deserialize, Serialize};

use harnessx_core::{Part, Parts, ToolCall, ToolResult};

use super::Reasoning;

/// One message of a conversation, provider-neutral. The system prompt is not a message:
/// it travels in [`ModelRequest::system`](crate::model::ModelRequest::system).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said.
    User {
        /// The text.
        content: String,
        /// Media beside the text (images, documents, audio), in order. Not written when
        /// empty, so a text-only history serializes as it did before parts.
        #[serde(default, skip_serializing_if = "Parts::is_empty")]
        parts: Parts,
    },
    /// What the model said: text, tool calls, or both.
    Assistant {
        /// The text (may be empty when the model only called tools).
        #[serde(default)]
        content: String,
        /// The calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The model's reasoning before it, as its provider returned it, sent back to
        /// that provider unchanged (see [`Reasoning`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
    },
    /// The result of one tool call, paired with the call's id.
    Tool {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        content: String,
        /// Whether the result is an error.
        #[serde(default)]
        is_error: bool,
        /// Media beside the result text ([`ToolResult::parts`]). Not written when empty.
        #[serde(default, skip_serializing_if = "Parts::is_empty")]
        parts: Parts,
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User { content: content.into(), parts: Parts::new() }
    }

    /// A user message with media beside its text (a screenshot, a PDF).
    pub fn user_with_parts(content: impl Into<String>, parts: impl Into<Parts>) -> Self {
        Self::User { content: content.into(), parts: parts.into() }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant { content: content.into(), tool_calls, reasoning: Vec::new() }
    }

    /// An assistant message with the reasoning its provider returned before it.
    pub fn assistant_with_reasoning(
        content: impl Into<String>,
        tool_calls: Vec<ToolCall>,
        reasoning: Vec<Reasoning>,
    ) -> Self {
        Self::Assistant { content: content.into(), tool_calls, reasoning }
    }

    /// The message carrying a tool result.
    pub fn tool(result: &ToolResult) -> Self {
        Self::Tool {
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            content: result.content.clone(),
            is_error: result.is_error,
            // A clone of a part shares its bytes; an empty list allocates nothing.
            parts: result.parts.clone(),
        }
    }

    /// The text content.
    pub fn content(&self) -> &str {
        match self {
            Self::User { content, .. } | Self::Assistant { content, .. } | Self::Tool { content, .. } => {
                content
            }
        }
    }

    /// The media beside the text: a user message's or a tool result's parts; none for an
    /// assistant message.
    pub fn parts(&self) -> &[Part] {
        match self {
            Self::User { parts, .. } | Self::Tool { parts, .. } => parts,
            Self::Assistant { .. } => &[],
        }
    }

    pub(crate) fn content_mut(&mut self) -> &mut String {
        match self {
            Self::User { content, .. } | Self::Assistant { content, .. } | Self::Tool { content, .. } => {
                content
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use harnessx_core::ToolOutput;
    use serde_json::json;

    use super::*;

    // Text-only messages serialize as they did before parts (histories, journals and the
    // requests built from them stay byte-identical).
    #[test]
    fn text_only_messages_are_written_without_parts() {
        assert_eq!(
            serde_json::to_value(Message::user("hi")).unwrap(),
            json!({"role": "user", "content": "hi"})
        );
        let result = ToolResult::success("c1", "t", ToolOutput::text("ok"));
        assert_eq!(
            serde_json::to_value(Message::tool(&result)).unwrap(),
            json!({"role": "tool", "call_id": "c1", "name": "t", "content": "ok", "is_error": false})
        );
        let old: Message = serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!(old, Message::user("hi"));
    }

    #[test]
    fn parts_travel_from_tool_result_to_message_and_back() {
        let image = Part::image("image/png", &b"\x89PNG\r\n\x1a\n"[..]);
        let output = ToolOutput::text("[image: image/png, 8 bytes]").with_part(image.clone());
        let message = Message::tool(&ToolResult::success("c1", "shot", output));
        assert_eq!(message.parts(), std::slice::from_ref(&image));
        let written = serde_json::to_value(&message).unwrap();
        assert_eq!(
            written["parts"],
            json!([{"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="}])
        );
        assert_eq!(serde_json::from_value::<Message>(written).unwrap(), message);

        let user = Message::user_with_parts("what is this?", vec![image]);
        assert_eq!(serde_json::from_value::<Message>(serde_json::to_value(&user).unwrap()).unwrap(), user);
        assert!(Message::assistant("a", Vec::new()).parts().is_empty());
    }
}
