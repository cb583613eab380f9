//! The conversation: provider-neutral messages.

use serde::{Deserialize, Serialize};

use harnessx_core::{ToolCall, ToolResult};

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
    },
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User { content: content.into() }
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
        }
    }

    /// The text content.
    pub fn content(&self) -> &str {
        match self {
            Self::User { content } | Self::Assistant { content, .. } | Self::Tool { content, .. } => content,
        }
    }

    pub(crate) fn content_mut(&mut self) -> &mut String {
        match self {
            Self::User { content } | Self::Assistant { content, .. } | Self::Tool { content, .. } => content,
        }
    }
}
