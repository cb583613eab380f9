//! The `execute_tool {name}` span of one call, named and attributed after OpenTelemetry's
//! GenAI semantic conventions (`gen_ai.operation.name`, `gen_ai.tool.name`,
//! `gen_ai.tool.call.id`, `gen_ai.tool.type`; `error.type` and an ERROR status for an
//! error result).
//!
//! Field values are only built when a subscriber wants the span: without one, a call
//! pays the callsite's disabled check and nothing else. Contents (the arguments and the
//! result) are recorded only when [`capture_content`] is on.

use tracing::Span;
use tracing::field::Empty;

use crate::telemetry::capture_content;
use crate::tool::call::{ToolCall, ToolResult};

/// Why a call ended in an error result, as `error.type` (low cardinality: a class, never
/// the message). Decided where the error is made, never read back from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorType {
    /// No tool of that name (after repair).
    UnknownTool,
    /// Arguments that are not a JSON object, or that fail the schema.
    InvalidArguments,
    /// Refused by the permissions.
    PermissionDenied,
    /// The handler did not finish in time.
    Timeout,
    /// The handler panicked.
    Panic,
    /// The handler returned an error (or a result given from elsewhere is an error).
    ToolError,
}

impl ErrorType {
    fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::PermissionDenied => "permission_denied",
            Self::Timeout => "timeout",
            Self::Panic => "panic",
            Self::ToolError => "tool_error",
        }
    }

    /// The status description when contents are not captured (the result's text may
    /// hold what the arguments held).
    fn description(self) -> &'static str {
        match self {
            Self::UnknownTool => "the model called a tool that is not registered",
            Self::InvalidArguments => "the arguments were not valid for the tool",
            Self::PermissionDenied => "permission denied",
            Self::Timeout => "the tool timed out",
            Self::Panic => "the tool panicked",
            Self::ToolError => "the tool returned an error",
        }
    }
}

/// The span of one call, a child of the current span. `tool` is the registered name the
/// call resolved to (`None`: the name as the model wrote it).
pub(crate) fn tool_span(call: &ToolCall, tool: Option<&str>, replayed: bool) -> Span {
    let name = tool.unwrap_or(&call.name);
    let span = tracing::info_span!(
        target: "harnessx_core::tool",
        "execute_tool",
        "otel.name" = %format_args!("execute_tool {name}"),
        "otel.kind" = "internal",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = name,
        "gen_ai.tool.call.id" = call.id.as_str(),
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "harnessx.replayed" = Empty,
        "harnessx.deduplicated" = Empty,
    );
    if !span.is_disabled() {
        if replayed {
            span.record("harnessx.replayed", true);
        }
        if capture_content() {
            span.record("gen_ai.tool.call.arguments", call.arguments.as_str());
        }
    }
    span
}

/// Records how the call ended: the result (when contents are captured) and, for an
/// error result, `error.type` and the ERROR status.
pub(crate) fn record_result(span: &Span, result: &ToolResult, error: Option<ErrorType>) {
    if span.is_disabled() {
        return;
    }
    let capture = capture_content();
    if capture {
        span.record("gen_ai.tool.call.result", result.content.as_str());
    }
    if result.is_error {
        let kind = error.unwrap_or(ErrorType::ToolError);
        span.record("error.type", kind.as_str());
        // The code first: tracing-opentelemetry turns a description into an error status.
        span.record("otel.status_code", "ERROR");
        let description =
            if capture { result.content.lines().next().unwrap_or_default() } else { kind.description() };
        span.record("otel.status_description", description);
    }
}

/// Marks a call answered by an identical earlier call of the run (dedupe).
pub(crate) fn record_deduplicated(span: &Span) {
    span.record("harnessx.deduplicated", true);
}

#[cfg(test)]
mod tests {
    use super::*;

    // With no subscriber installed (the default), a call's span costs the callsite's
    // disabled check: no field is built, nothing is allocated.
    #[test]
    fn with_no_subscriber_the_spans_allocate_nothing() {
        let call = ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#);
        let ok = ToolResult::success("call_1", "add", crate::ToolOutput::text("5"));
        let failed = ToolResult::error("call_1", "add", "tool add failed");
        let info = allocation_counter::measure(|| {
            for replayed in [false, true] {
                let span = tool_span(&call, Some("add"), replayed);
                record_result(&span, &ok, None);
                record_result(&span, &failed, Some(ErrorType::ToolError));
                record_deduplicated(&span);
            }
        });
        assert_eq!(info.count_total, 0, "{info:?}");
        // The counter counts (so the zero above means something).
        let one = allocation_counter::measure(|| drop(std::hint::black_box(Box::new(1u8))));
        assert_eq!(one.count_total, 1);
    }
}
