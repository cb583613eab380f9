//! What a model returns: the response, its stream events, usage.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use harnessx_core::ToolCall;

use super::Reasoning;

/// Token usage of one response, or summed over a run.
///
/// Every adapter fills it from what the provider reports, streamed or not.
/// [`input_tokens`](Self::input_tokens) counts every input token, the cached ones and
/// those written to a cache included (as OpenTelemetry's `gen_ai.usage.input_tokens`
/// does): OpenAI's `prompt_tokens`, Anthropic's `input_tokens` +
/// `cache_read_input_tokens` + `cache_creation_input_tokens`. Likewise
/// [`output_tokens`](Self::output_tokens) includes the reasoning tokens.
///
/// A run's usage ([`RunState::usage`](crate::RunState::usage)) also counts its model
/// requests and tool calls, and has its cost once the model's price is known
/// ([`ModelPrice`](crate::budget::ModelPrice)); a specialist's usage is added to its
/// parent's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Input (prompt) tokens, cached ones included.
    pub input_tokens: u64,
    /// Output (completion) tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, OpenAI Responses
    /// `input_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`); part
    /// of [`input_tokens`](Self::input_tokens).
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic
    /// `cache_creation_input_tokens`); part of [`input_tokens`](Self::input_tokens).
    pub cache_write_tokens: u64,
    /// Output tokens spent reasoning, where the provider says (OpenAI
    /// `completion_tokens_details.reasoning_tokens`, OpenAI Responses
    /// `output_tokens_details.reasoning_tokens`); part of
    /// [`output_tokens`](Self::output_tokens).
    pub reasoning_tokens: u64,
    /// Model requests (0 in one response's usage; the run counts them).
    pub requests: u64,
    /// Tool calls the run handled (0 in one response's usage): every call of the model
    /// that ran, failed or was refused, except those a run-wide limit left unrun.
    pub tool_calls: u64,
    /// What the requests cost, in US dollars, for the requests whose model has a known
    /// price; `None` when none has. Computed from the tokens, never estimated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Input and output tokens together: what a token limit counts.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens = self.input_tokens.saturating_add(rhs.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(rhs.output_tokens);
        self.cached_input_tokens = self.cached_input_tokens.saturating_add(rhs.cached_input_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(rhs.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(rhs.reasoning_tokens);
        self.requests = self.requests.saturating_add(rhs.requests);
        self.tool_calls = self.tool_calls.saturating_add(rhs.tool_calls);
        self.cost_usd = match (self.cost_usd, rhs.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

impl std::ops::Add for Usage {
    type Output = Self;

    fn add(mut self, rhs: Self) -> Self {
        self += rhs;
        self
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |a, b| a + b)
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
    /// The model's reasoning, as its provider returned it (see [`Reasoning`]); empty
    /// for models that do not reason or do not show it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    /// The model that answered (`anthropic:claude-sonnet-4-5`), when another than the
    /// agent's own could have: a [`FallbackModel`](super::FallbackModel) names the one
    /// it reached. `None`: the agent's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
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
    /// A piece of the model's reasoning text (shown, never sent back as text).
    ReasoningDelta(String),
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
