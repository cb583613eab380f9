//! The spans of a run, named and attributed after OpenTelemetry's GenAI semantic
//! conventions: `invoke_agent {name}` for a run, `chat {model}` for each model request;
//! each tool call's `execute_tool {name}` span comes from the engine
//! ([`harnessx_core::telemetry`]). See `docs/observability.md` for the tree and every
//! attribute.
//!
//! There is no span per turn: the conventions have none, and GenAI-aware backends draw
//! `invoke_agent` with its `chat` and `execute_tool` children. Each `chat` span carries
//! its turn as `harnessx.turn`; the calls of a turn follow their `chat` span.
//!
//! These are plain [`tracing`] spans: with no subscriber interested, each costs a
//! disabled-callsite check, and nothing here is computed. Public so that a runtime that
//! drives the loop itself (the durable one) records the same spans.

use std::fmt::Display;

use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;

use crate::model::{FinishReason, Message, Model, ModelError, ModelRequest, ModelResponse, Usage};
use crate::{Agent, AgentError, RunResult};
use harnessx_core::telemetry::capture_content;

/// The span of a run of `agent`: `invoke_agent {agent name}` (`invoke_agent` for an
/// agent without a name), a child of the current span; none for an agent without a
/// model, which cannot run. Enter it (or `instrument` the run with it) and finish with
/// [`record_run`], or [`record_result`] or [`record_error`].
pub fn invoke_agent(agent: &Agent) -> Span {
    let Some(model) = agent.model() else { return Span::none() };
    let agent_name = agent.name();
    let span = tracing::info_span!(
        target: "harnessx_agent::run",
        "invoke_agent",
        "otel.name" = Empty,
        "otel.kind" = "internal",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = agent_name,
        "gen_ai.provider.name" = %model.provider_name(),
        "gen_ai.request.model" = %model.model_name(),
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.usage.cache_creation.input_tokens" = Empty,
        "gen_ai.usage.reasoning.output_tokens" = Empty,
        "harnessx.usage.cost_usd" = Empty,
        "harnessx.usage.tool_calls" = Empty,
        "harnessx.limit_reached" = Empty,
        "harnessx.turns" = Empty,
        "harnessx.run_id" = Empty,
        "harnessx.replayed" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
    );
    if let Some(name) = agent_name
        && !span.is_disabled()
    {
        span.record("otel.name", format!("invoke_agent {name}"));
    }
    span
}

/// Records a run's end on its `invoke_agent` span: usage totals and turns, or the error.
pub fn record_run(span: &Span, outcome: &Result<RunResult, AgentError>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(result) => record_result(span, result),
        Err(e) => record_error(span, agent_error_type(e), e),
    }
}

/// Records a finished run on its `invoke_agent` span: usage totals (with the tool calls
/// and, when the price is known, the cost), turns, and the limit it stopped at, if any.
pub fn record_result(span: &Span, result: &RunResult) {
    record_usage(span, &result.usage);
    span.record("harnessx.usage.tool_calls", int(result.usage.tool_calls));
    if let Some(cost) = result.usage.cost_usd {
        span.record("harnessx.usage.cost_usd", cost);
    }
    if let Some(limit) = result.limit {
        span.record("harnessx.limit_reached", limit.as_str());
    }
    span.record("harnessx.turns", i64::from(result.turns));
}

/// Records token totals on a span: `gen_ai.usage.input_tokens` / `output_tokens`, and
/// the cache reads and writes (`gen_ai.usage.cache_read.input_tokens`,
/// `gen_ai.usage.cache_creation.input_tokens`) and reasoning tokens
/// (`gen_ai.usage.reasoning.output_tokens`) when there are any.
pub fn record_usage(span: &Span, usage: &Usage) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    for (name, count) in [
        ("gen_ai.usage.cache_read.input_tokens", usage.cached_input_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    ] {
        if count > 0 {
            span.record(name, int(count));
        }
    }
}

/// Integers go in as `i64`: tracing-opentelemetry records an unsigned field as text.
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Marks a span failed: `error.type` (a class, e.g. `max_turns`, `429`) and the ERROR
/// status with `error` as its description.
pub fn record_error(span: &Span, error_type: &str, error: &dyn Display) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    // The code first: tracing-opentelemetry turns a description into an error status.
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", tracing::field::display(error));
}

/// The span of one compaction of a run's history (`compact_context`), a child of the
/// current span: the estimated sizes before and after, and how (`cleared` old tool
/// results, or `summarised` older turns). Recorded with [`record_compaction`].
pub fn compaction(turn: u32, tokens_before: u64) -> Span {
    tracing::info_span!(
        target: "harnessx_agent::run",
        "compact_context",
        "otel.kind" = "internal",
        "harnessx.turn" = turn,
        "harnessx.context.tokens_before" = tokens_before,
        "harnessx.context.tokens_after" = Empty,
        "harnessx.context.how" = Empty,
        "harnessx.replayed" = Empty,
    )
}

/// Records how a compaction ended on its span.
pub fn record_compaction(span: &Span, tokens_after: u64, how: &str) {
    span.record("harnessx.context.tokens_after", tokens_after);
    span.record("harnessx.context.how", how);
}

/// The `error.type` of a failed run.
pub fn agent_error_type(error: &AgentError) -> &'static str {
    match error {
        AgentError::Model(e) => model_error_class(e),
        #[allow(deprecated)] // still classed, for code that builds the error itself
        AgentError::MaxTurns(_) => "max_turns",
        AgentError::ContextOverflow { .. } => "context_length_exceeded",
        AgentError::UnknownPrice { .. } => "unknown_price",
        AgentError::NoModel => "no_model",
        AgentError::Closed => "closed",
        _ => "agent_error",
    }
}

/// The `error.type` of a failed model request: the HTTP status for an error status (as
/// the conventions suggest), else the kind of failure.
pub fn model_error_type(error: &ModelError) -> String {
    match error {
        ModelError::Http { status, .. } => status.to_string(),
        other => model_error_class(other).to_owned(),
    }
}

fn model_error_class(error: &ModelError) -> &'static str {
    match error {
        ModelError::Auth(_) => "authentication",
        ModelError::Http { .. } => "http",
        ModelError::ContextWindow { .. } => "context_length_exceeded",
        ModelError::Transport(_) => "transport",
        ModelError::Protocol(_) => "protocol",
        ModelError::Other(_) => "model_error",
    }
}

/// The span of one model request: `chat {model}`, a client span, child of the current
/// span. With content capture on, it records the request's messages and system prompt.
pub fn chat(model: &dyn Model, request: &ModelRequest, turn: u32) -> Span {
    // Field values are computed only when a subscriber wants the span.
    let span = tracing::info_span!(
        target: "harnessx_agent::model",
        "chat",
        "otel.name" = %format_args!("chat {}", model.model_name()),
        "otel.kind" = "client",
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = %model.provider_name(),
        "gen_ai.request.model" = %model.model_name(),
        "gen_ai.request.max_tokens" = request.max_tokens.map(i64::from),
        "harnessx.turn" = i64::from(turn),
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.usage.cache_creation.input_tokens" = Empty,
        "gen_ai.usage.reasoning.output_tokens" = Empty,
        "gen_ai.system_instructions" = Empty,
        "gen_ai.input.messages" = Empty,
        "gen_ai.output.messages" = Empty,
        "harnessx.replayed" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
    );
    if !span.is_disabled() && capture_content() {
        if let Some(system) = &request.system {
            span.record(
                "gen_ai.system_instructions",
                json!([{"type": "text", "content": system}]).to_string(),
            );
        }
        let messages: Vec<Value> = request.messages.iter().map(input_message).collect();
        span.record("gen_ai.input.messages", Value::Array(messages).to_string());
    }
    span
}

/// Records a model's answer on its `chat` span: finish reason, token usage and, with
/// content capture on, the output message.
pub fn record_response(span: &Span, response: &ModelResponse) {
    if span.is_disabled() {
        return;
    }
    let reason = finish_reason(&response.finish_reason);
    record_finish_reasons(span, reason);
    record_usage(span, &response.usage);
    if capture_content() {
        let output = json!([{
            "role": "assistant",
            "parts": assistant_parts(&response.content, &response.tool_calls),
            "finish_reason": reason,
        }]);
        span.record("gen_ai.output.messages", output.to_string());
    }
}

/// `gen_ai.response.finish_reasons` is a string array: with the `otel` feature it is
/// set as one on the OpenTelemetry span; a `tracing` field can only hold the JSON text.
fn record_finish_reasons(span: &Span, reason: &str) {
    #[cfg(feature = "otel")]
    {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let reasons = opentelemetry::Array::String(vec![reason.to_owned().into()]);
        span.set_attribute("gen_ai.response.finish_reasons", opentelemetry::Value::Array(reasons));
    }
    #[cfg(not(feature = "otel"))]
    span.record("gen_ai.response.finish_reasons", json!([reason]).to_string());
}

/// Records a failed model request on its `chat` span.
pub fn record_model_error(span: &Span, error: &ModelError) {
    if span.is_disabled() {
        return;
    }
    record_error(span, &model_error_type(error), error);
}

/// A `chat` span for a response a durable runtime replays from its journal (no request
/// is made): marked `harnessx.replayed = true`, with the journaled finish reason and
/// usage, closed at once.
pub fn replayed_chat(model: &dyn Model, request: &ModelRequest, turn: u32, response: &ModelResponse) {
    let span = chat(model, request, turn);
    if !span.is_disabled() {
        span.record("harnessx.replayed", true);
        record_response(&span, response);
    }
}

/// The conventions' finish reasons (`stop`, `length`, `content_filter`, `tool_call`),
/// or the provider's own.
fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_call",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(other) => other,
    }
}

/// One message in the conventions' shape: `{role, parts: [..]}`.
fn input_message(message: &Message) -> Value {
    match message {
        Message::User { content, .. } => {
            json!({"role": "user", "parts": [{"type": "text", "content": content}]})
        }
        Message::Assistant { content, tool_calls, .. } => {
            json!({"role": "assistant", "parts": assistant_parts(content, tool_calls)})
        }
        Message::Tool { call_id, content, .. } => json!({
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": call_id, "response": content}],
        }),
    }
}

fn assistant_parts(content: &str, calls: &[harnessx_core::ToolCall]) -> Vec<Value> {
    let mut parts = Vec::with_capacity(1 + calls.len());
    if !content.is_empty() {
        parts.push(json!({"type": "text", "content": content}));
    }
    for call in calls {
        // The arguments as JSON when they parse, else the text as the model sent it.
        let arguments = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        parts.push(json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::ToolCall;

    #[test]
    fn messages_take_the_conventions_shape() {
        let call = ToolCall::new("c1", "add", r#"{"a":1}"#);
        let assistant = input_message(&Message::assistant("", vec![call]));
        assert_eq!(
            assistant,
            json!({"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1}}]})
        );
        let result = harnessx_core::ToolResult::error("c1", "add", "boom");
        assert_eq!(
            input_message(&Message::tool(&result)),
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "boom"}]})
        );
    }

    /// A subscriber that keeps every field recorded on a span, as `name=value`.
    #[derive(Clone, Default)]
    struct Fields(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl tracing::field::Visit for Fields {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.lock().unwrap().push(format!("{}={value:?}", field.name()));
        }
    }

    impl tracing::Subscriber for Fields {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            span.record(&mut self.clone());
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
            values.record(&mut self.clone());
        }
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn chat_spans_carry_the_cache_and_reasoning_usage_and_leave_out_zeros() {
        let fields = Fields::default();
        let response = ModelResponse {
            usage: Usage {
                input_tokens: 1000,
                cached_input_tokens: 800,
                cache_write_tokens: 100,
                reasoning_tokens: 0,
                output_tokens: 40,
                ..Usage::default()
            },
            ..ModelResponse::default()
        };
        tracing::subscriber::with_default(fields.clone(), || {
            let span = chat(&crate::model::TestModel::new(), &ModelRequest::default(), 1);
            record_response(&span, &response);
        });
        let seen = fields.0.lock().unwrap().clone();
        for expected in [
            "gen_ai.usage.input_tokens=1000",
            "gen_ai.usage.output_tokens=40",
            "gen_ai.usage.cache_read.input_tokens=800",
            "gen_ai.usage.cache_creation.input_tokens=100",
        ] {
            assert!(seen.iter().any(|f| f == expected), "{expected} not in {seen:?}");
        }
        assert!(!seen.iter().any(|f| f.starts_with("gen_ai.usage.reasoning")), "{seen:?}");
    }

    #[test]
    fn model_errors_are_classed_by_status_or_kind() {
        assert_eq!(model_error_type(&ModelError::Http { status: 429, message: "slow down".into() }), "429");
        assert_eq!(model_error_type(&ModelError::Transport("reset".into())), "transport");
        assert_eq!(agent_error_type(&AgentError::NoModel), "no_model");
    }
}
