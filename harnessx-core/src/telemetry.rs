//! What the spans of a run may record: the switch for message and argument contents.
//!
//! Every tool call runs in an `execute_tool {name}` span (and an agent's runs and model
//! requests in `invoke_agent` and `chat {model}` spans) named and attributed after
//! OpenTelemetry's GenAI semantic conventions; see `docs/observability.md`. They are plain
//! [`tracing`] spans: without a subscriber that wants them they cost one disabled-callsite
//! check each, and this crate exports nothing (exporters live behind the `otel` feature of
//! `harnessx-agent`).
//!
//! Contents (messages, tool arguments, tool results) may hold secrets, so spans leave
//! them out unless capture is switched on: by [`set_capture_content`], or by the
//! standard variable [`CAPTURE_CONTENT_ENV`] set to `true` (read once, at the first
//! span that asks). With capture on they are recorded as JSON strings
//! (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, `gen_ai.input.messages`,
//! `gen_ai.output.messages`).

use std::sync::atomic::{AtomicU8, Ordering};

/// The variable OpenTelemetry's GenAI instrumentations read to record contents:
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` turns capture on.
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static CAPTURE: AtomicU8 = AtomicU8::new(UNSET);

/// Whether spans record contents: messages, tool arguments and results. Off unless
/// [`set_capture_content`] turned it on, or [`CAPTURE_CONTENT_ENV`] is `true` (any case).
pub fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var(CAPTURE_CONTENT_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
            // A concurrent `set_capture_content` wins over the variable.
            let _ = CAPTURE.compare_exchange(
                UNSET,
                if on { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == ON
        }
    }
}

/// Turns the recording of contents on or off for the whole process, whatever
/// [`CAPTURE_CONTENT_ENV`] says.
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}
