//! The response read: the wire format of answers (stream events, the response object,
//! output items, usage) as `#[derive(Deserialize)]` structs, and what they stand for
//! (reasoning, errors, finish reasons).

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use super::{PROVIDER, RESPONSES_PROVIDER};
use crate::model::http;
use crate::model::{FinishReason, ModelError, Reasoning, Usage};

/// The stream event types this adapter acts on; any other is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(super) enum Kind {
    #[serde(rename = "response.output_item.added")]
    ItemAdded,
    #[serde(rename = "response.output_item.done")]
    ItemDone,
    #[serde(rename = "response.output_text.delta")]
    TextDelta,
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta,
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta,
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone,
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningDelta,
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningPartAdded,
    #[serde(rename = "response.completed")]
    Completed,
    #[serde(rename = "response.incomplete")]
    Incomplete,
    #[serde(rename = "response.failed")]
    Failed,
    #[serde(rename = "error")]
    Error,
    #[serde(other)]
    Other,
}

/// One stream event: its `type` and the fields the types above use. Every field but
/// the type is optional; which ones a type needs is checked where it is handled.
#[derive(Debug, Deserialize)]
pub(super) struct WireEvent {
    /// Absent in no OpenAI event; a server that leaves it out gets the SSE `event:` name.
    #[serde(rename = "type")]
    pub(super) kind: Option<Kind>,
    pub(super) output_index: Option<u64>,
    /// Which part of a reasoning summary a `reasoning_summary_part.added` starts.
    pub(super) summary_index: Option<u64>,
    pub(super) delta: Option<String>,
    pub(super) arguments: Option<String>,
    /// An output item, kept as received (a reasoning item goes back byte for byte).
    pub(super) item: Option<Value>,
    pub(super) response: Option<WireResponse<IgnoredAny>>,
    /// An `error` event: OpenAI documents `code`, `message` and `param` beside the type;
    /// some recordings nest them in `error`.
    pub(super) error: Option<Value>,
    pub(super) code: Option<Value>,
    pub(super) message: Option<String>,
    pub(super) param: Option<Value>,
}

/// Just the type of an event, for one that did not parse as [`WireEvent`].
#[derive(Deserialize)]
pub(super) struct Head {
    #[serde(rename = "type")]
    pub(super) kind: Option<Kind>,
}

/// A response object (`response.completed` and its kin carry one; a non-streamed
/// answer is one). `O` is its `output`: skipped in a stream, whose items came already.
#[derive(Debug, Deserialize)]
pub(super) struct WireResponse<O> {
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(default)]
    pub(super) output: O,
}

#[derive(Debug, Deserialize)]
pub(super) struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// `usage`: every input token (cached included) and every output token (reasoning
/// included), with those parts in the details.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<TokenDetails>,
    #[serde(default)]
    output_tokens_details: Option<TokenDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct TokenDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn usage(&self) -> Usage {
        let detail = |d: &Option<TokenDetails>, f: fn(&TokenDetails) -> Option<u64>| {
            d.as_ref().and_then(f).unwrap_or(0)
        };
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: detail(&self.input_tokens_details, |d| d.cached_tokens),
            reasoning_tokens: detail(&self.output_tokens_details, |d| d.reasoning_tokens),
            ..Usage::default()
        }
    }
}

/// An output item, as far as this adapter reads it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item {
    Message {
        #[serde(default)]
        content: Vec<Part>,
    },
    FunctionCall {
        #[serde(default)]
        call_id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        summary: Vec<SummaryPart>,
    },
    /// Built-in tools' calls (web search, ...), which this adapter does not offer.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(super) struct SummaryPart {
    #[serde(default)]
    text: String,
}

impl Item {
    pub(super) fn of(value: &Value) -> Result<Self, ModelError> {
        Self::deserialize(value).map_err(|e| {
            ModelError::Protocol(format!(
                "an output item of the {} is not as documented ({e}): {}",
                PROVIDER.name,
                http::truncate(&value.to_string(), 200)
            ))
        })
    }
}

/// A reasoning item as a [`Reasoning`]: its summary texts joined by a blank line, the
/// whole item as its data.
pub(super) fn reasoning_of(summary: &[SummaryPart], item: Value) -> Reasoning {
    let text = summary.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n");
    Reasoning { provider: RESPONSES_PROVIDER.to_owned(), text, signature: None, data: item }
}

/// The error a reported failure stands for (an `error` event, `response.failed`'s
/// `response.error`): its code decides the status where it names one (a context-window
/// refusal is [`ModelError::ContextWindow`], a rate limit a retryable 429, a server
/// error a retryable 500); otherwise the shared mapping by `type`.
pub(super) fn reported_error(error: &Value) -> ModelError {
    #[derive(Deserialize)]
    struct Reported {
        #[serde(default)]
        code: Option<Value>,
    }
    let code = Reported::deserialize(error).ok().and_then(|r| r.code);
    let status = match code.as_ref().and_then(Value::as_str) {
        Some("context_length_exceeded" | "invalid_prompt") => Some(400),
        Some("rate_limit_exceeded") => Some(429),
        Some("server_error") => Some(500),
        _ => None,
    };
    let mut body = json!({"error": error});
    if let Some(status) = status {
        body["status_code"] = json!(status);
    }
    http::body_error(&body, PROVIDER)
}

pub(super) fn finish_of(
    status: Option<&str>,
    incomplete: Option<&IncompleteDetails>,
    calls: bool,
) -> FinishReason {
    match status {
        Some("incomplete") => match incomplete.and_then(|d| d.reason.as_deref()) {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("incomplete".into()),
        },
        _ if calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_errors_map_by_code() {
        let e = reported_error(&json!({"code": "rate_limit_exceeded", "message": "slow down"}));
        assert!(matches!(e, ModelError::Http { status: 429, .. }) && e.is_retryable(), "{e:?}");
        let e = reported_error(&json!({"code": "server_error", "message": "oops"}));
        assert!(matches!(e, ModelError::Http { status: 500, .. }) && e.is_retryable(), "{e:?}");
        let e = reported_error(
            &json!({"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}),
        );
        assert!(matches!(e, ModelError::ContextWindow { .. }), "{e:?}");
        let e = reported_error(
            &json!({"type": "insufficient_quota", "code": "insufficient_quota", "message": "You exceeded your current quota"}),
        );
        assert!(
            matches!(&e, ModelError::Protocol(m) if m.contains("You exceeded your current quota (insufficient_quota)")),
            "{e:?}"
        );
        assert!(!e.is_retryable());
    }
}
