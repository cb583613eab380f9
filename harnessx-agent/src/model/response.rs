//! What a model returns: the response, its stream events, usage.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use harnessx_core::ToolCall;

/// Token usage of one request or a whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Number of model requests.
    pub requests: u64,
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.requests += rhs.requests;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A final answer.
    #[default]
    Stop,
    /// It called tools.
    ToolCalls,
    /// It hit the output token limit (a tool call may be cut off).
    Length,
    /// The provider filtered the output.
    ContentFilter,
    /// Anything else, as the provider said it.
    Other(String),
}

/// One complete model response.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The text.
    pub content: String,
    /// The tool calls, in order. Arguments are raw text and may be malformed or cut off;
    /// the engine refuses to run such calls.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Tokens used.
    pub usage: Usage,
}

impl ModelResponse {
    /// A text-only final answer.
    pub fn text(content: impl Into<String>) -> Self {
        Self { content: content.into(), ..Self::default() }
    }

    /// A response that calls tools.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self { tool_calls: calls, finish_reason: FinishReason::ToolCalls, ..Self::default() }
    }
}

/// An event of a streamed response. The last event of a successful stream is
/// [`ModelEvent::Done`] with the assembled response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of text.
    TextDelta(String),
    /// A tool call began (its id and name are known).
    ToolCallStart {
        /// Position of the call in the response.
        index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A piece of a tool call's argument text.
    ToolCallDelta {
        /// Position of the call in the response.
        index: usize,
        /// The piece.
        delta: String,
    },
    /// The complete response.
    Done(ModelResponse),
}
