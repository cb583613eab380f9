//! Models: the [`Model`] trait every provider adapter implements, the provider-neutral
//! request and response, and test models.

#[cfg(feature = "anthropic")]
pub mod anthropic;
pub mod fallback;
pub mod function;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
mod media;
pub mod message;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "http")]
pub(crate) mod overflow;
pub mod reasoning;
pub mod response;
pub mod sse;
pub mod test_model;
pub mod tool_choice;

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::Serialize;

#[cfg(feature = "anthropic")]
pub use anthropic::AnthropicModel;
pub use fallback::{Fallback, FallbackModel};
pub use function::FunctionModel;
#[cfg(feature = "gemini")]
pub use gemini::GeminiModel;
pub use message::Message;
#[cfg(feature = "openai")]
pub use openai::{OpenAiModel, OpenAiResponsesModel};
pub use reasoning::{Reasoning, ReasoningConfig, ReasoningEffort};
pub use response::{FinishReason, ModelEvent, ModelResponse, Usage};
pub use test_model::TestModel;
pub use tool_choice::{ParseToolChoiceError, ToolChoice};

use harnessx_core::{Backoff, ToolSpec};

/// One request to a model: the system prompt, the conversation and the tools, all
/// provider-neutral. Adapters translate it to their wire format (and schema dialect).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ModelRequest {
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call (canonical schemas).
    pub tools: Vec<ToolSpec>,
    /// Output token limit, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Whether the model may, must or must not call a tool (default [`ToolChoice::Auto`]:
    /// with `parallel_tool_calls` unset, adapters send nothing for it). Adapters send
    /// neither field when [`tools`](Self::tools) is empty: providers refuse a tool choice
    /// without tools.
    #[serde(skip_serializing_if = "ToolChoice::is_auto")]
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one response; `None` sends nothing
    /// (the provider's default, which allows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The JSON answer a typed run expects (`None` for a free-text answer). Adapters send
    /// it as the provider's answer format when it is [`native`](OutputFormat::native);
    /// test models answer with a value of its schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputFormat>,
    /// How much the model reasons before answering, for reasoning models (`None`: the
    /// provider's default, nothing sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig>,
    /// A key grouping requests that share a prefix, for providers that route on one
    /// (OpenAI's `prompt_cache_key`, sent only to `api.openai.com`). A durable run sets it
    /// to its run id; an adapter's own key, where set, wins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
}

/// The JSON answer a typed run expects (see `docs/output.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputFormat {
    /// A name for the format (OpenAI's `json_schema.name`): `final_result`.
    pub name: String,
    /// The schema, canonical, of an object.
    pub schema: serde_json::Value,
    /// Whether the provider is asked for it (mode `native`: OpenAI's `response_format`,
    /// Anthropic's `output_config.format`); otherwise the system prompt asks (mode
    /// `prompted`) and adapters send nothing.
    pub native: bool,
}

/// A failure talking to a model. Only these fail a run; tool failures never do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The API key is missing or was rejected.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// The provider answered with an error status.
    #[error("the model provider answered HTTP {status}: {message}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider refused the request as larger than the model's context window
    /// (OpenAI's `context_length_exceeded`, Anthropic's `prompt is too long`, Gemini's
    /// `The input token count (N) exceeds the maximum number of tokens allowed (M)`,
    /// llama.cpp's `exceed_context_size_error`, vLLM's `maximum context length`). A run compacts its
    /// history and retries once before failing with it.
    #[error("the request does not fit the model's context window: {message}")]
    ContextWindow {
        /// The provider's message.
        message: String,
        /// The window in tokens, when the provider said.
        limit: Option<u64>,
        /// The request's size in tokens by the provider's count, when it said.
        requested: Option<u64>,
    },
    /// The connection failed or was cut.
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The provider's answer could not be understood.
    #[error("unexpected answer from the model provider: {0}")]
    Protocol(String),
    /// Anything else (e.g. a test model's closure).
    #[error("{0}")]
    Other(String),
}

/// The most characters of a model error a model is shown ([`ModelError::for_model`]).
pub const MAX_MODEL_ERROR_LINE: usize = 300;

impl ModelError {
    /// The error as a model reads it (a specialist's failure is its parent's tool
    /// result): one line of at most [`MAX_MODEL_ERROR_LINE`] characters, cut with `…`.
    /// The operator's text ([`Display`](fmt::Display)) keeps everything the server said.
    ///
    /// ```
    /// use harnessx_agent::model::ModelError;
    ///
    /// let e = ModelError::Http { status: 500, message: format!("7 validation errors:\n{}", "x".repeat(5000)) };
    /// let line = e.for_model();
    /// assert!(line.starts_with("the model provider answered HTTP 500: 7 validation errors: xxx"));
    /// assert!(!line.contains('\n') && line.chars().count() <= 301 && line.ends_with('…'));
    /// assert!(e.to_string().len() > 5000);
    /// ```
    pub fn for_model(&self) -> String {
        let line = self.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        match line.char_indices().nth(MAX_MODEL_ERROR_LINE) {
            Some((at, _)) => format!("{}…", &line[..at]),
            None => line,
        }
    }

    /// Whether repeating the request may succeed (429, 5xx, connection errors).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            Self::Transport(_) => true,
            _ => false,
        }
    }
}

/// A language model.
///
/// Adapters implement [`stream`](Model::stream); [`complete`](Model::complete) drains it
/// by default (override it to use a provider's non-streaming API).
pub trait Model: Send + Sync {
    /// A name for logs and events, e.g. `openai:gpt-4o`.
    fn name(&self) -> String;

    /// Who serves the model, as spans record it (`gen_ai.provider.name`): `openai`,
    /// `anthropic`, `test`. By default the part of [`name`](Model::name) before its
    /// first `:`, or the whole name.
    fn provider_name(&self) -> String {
        let name = self.name();
        name.split_once(':').map_or_else(|| name.clone(), |(provider, _)| provider.to_owned())
    }

    /// The model asked for, as spans record it (`gen_ai.request.model`, and the `chat
    /// {model}` span name): by default the part of [`name`](Model::name) after its first
    /// `:`, or the whole name.
    fn model_name(&self) -> String {
        let name = self.name();
        name.split_once(':').map_or_else(|| name.clone(), |(_, model)| model.to_owned())
    }

    /// Whether the model retries failed requests itself (a [`FallbackModel`] does, per
    /// model), so the agent sends each request once. Default `false`: the agent retries
    /// per [`AgentConfig::model_retry`](crate::AgentConfig::model_retry).
    fn retries_itself(&self) -> bool {
        false
    }

    /// Streams one response. The last item of a successful stream is [`ModelEvent::Done`].
    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>>;

    /// One complete response.
    fn complete<'a>(&'a self, request: &'a ModelRequest) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(collect_response(self.stream(request)))
    }
}

/// The error for a stream that ended without [`ModelEvent::Done`].
pub(crate) fn incomplete_stream() -> ModelError {
    ModelError::Protocol("the response stream ended before it was complete".into())
}

/// Drains a response stream to its [`ModelEvent::Done`] response (or its first error).
pub async fn collect_response(
    mut stream: BoxStream<'_, Result<ModelEvent, ModelError>>,
) -> Result<ModelResponse, ModelError> {
    while let Some(event) = stream.next().await {
        if let ModelEvent::Done(response) = event? {
            return Ok(response);
        }
    }
    Err(incomplete_stream())
}

impl fmt::Debug for dyn Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Model({})", self.name())
    }
}

/// How model requests are retried on 429, 5xx and connection errors. Separate from the
/// tools' [`ToolRetry`](harnessx_core::ToolRetry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelRetry {
    /// Total attempts including the first.
    pub max_attempts: u32,
    /// Delay before the first retry, in seconds; doubles each time.
    pub initial_delay_seconds: f64,
    /// Upper bound for a delay, in seconds.
    pub max_delay_seconds: f64,
}

impl Default for ModelRetry {
    fn default() -> Self {
        Self { max_attempts: 3, initial_delay_seconds: 1.0, max_delay_seconds: 30.0 }
    }
}

impl ModelRetry {
    /// The delay before attempt `next_attempt` (2 for the first retry):
    /// [`backoff`](Self::backoff)'s wait after `next_attempt - 2` earlier ones.
    pub fn delay_before(&self, next_attempt: u32) -> Duration {
        self.backoff().delay(next_attempt.saturating_sub(2))
    }

    /// The waits between attempts as a [`Backoff`]: doubling from
    /// `initial_delay_seconds`, capped at `max_delay_seconds`.
    pub fn backoff(&self) -> Backoff {
        use harnessx_core::tool::policy::duration_from_secs;
        Backoff::doubling(
            duration_from_secs(self.initial_delay_seconds),
            duration_from_secs(self.max_delay_seconds),
        )
    }
}

/// A stream of one response built from a finished [`ModelResponse`]: its text as one
/// delta, each call's start and arguments, then `Done`. For models that do not stream.
pub fn response_to_events(response: ModelResponse) -> Vec<ModelEvent> {
    let mut events = Vec::with_capacity(2 + 2 * response.tool_calls.len());
    if !response.content.is_empty() {
        events.push(ModelEvent::TextDelta(response.content.clone()));
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        events.push(ModelEvent::ToolCallStart { index, id: call.id.clone(), name: call.name.clone() });
        if !call.arguments.is_empty() {
            events.push(ModelEvent::ToolCallDelta { index, delta: call.arguments.clone() });
        }
    }
    events.push(ModelEvent::Done(response));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_retries_wait_one_second_doubling_up_to_thirty() {
        let waits: Vec<u64> = (2..=8).map(|n| ModelRetry::default().delay_before(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
    }

    #[test]
    fn a_cap_below_the_first_model_retry_delay_is_the_delay() {
        let r = ModelRetry { max_attempts: 3, initial_delay_seconds: 2.0, max_delay_seconds: 0.5 };
        assert_eq!(r.delay_before(2), Duration::from_millis(500));
    }
}
