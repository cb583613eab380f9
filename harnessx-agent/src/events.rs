//! [`AgentEvent`]: what a streamed run reports.

use harnessx_core::Parts;
use serde::{Serialize, Serializer};

use crate::budget::Limit;
use crate::model::Usage;
use crate::run::state::RunStatus;

/// One event of [`Agent::run_stream`](crate::Agent::run_stream). Serializes as a
/// JSON object with a `type` field (`model_request`, `text_delta`, `reasoning_delta`, `tool_call_start`,
/// `tool_call_end`, `tool_progress`, `hook`, `model_fallback`, `compaction`, `run_end`, `error`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A request to the model is about to be sent.
    ModelRequest {
        /// 1-based turn number.
        turn: u32,
        /// The model's name.
        model: String,
        /// The media attached to the prompt, on the run's first request (none after it),
        /// each summarised as [`Part::describe`](harnessx_core::Part::describe) does:
        /// `{"type":"image","media_type":"image/png","bytes":N}`, never its base64. Not
        /// written when empty.
        #[serde(serialize_with = "described", skip_serializing_if = "Parts::is_empty")]
        parts: Parts,
    },
    /// A piece of the model's text.
    TextDelta {
        /// The piece.
        text: String,
    },
    /// A piece of the model's reasoning (thinking) text, for reasoning models that show
    /// it. Never part of the answer.
    ReasoningDelta {
        /// The piece.
        text: String,
    },
    /// A tool call was scheduled. Emitted in call order for every call of a turn.
    ToolCallStart {
        /// Position of the call in its turn.
        index: usize,
        /// The call id.
        call_id: String,
        /// The name as the model wrote it.
        name: String,
        /// The registered tool it resolved to, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// The raw argument text.
        arguments: String,
    },
    /// A tool call finished (in completion order).
    ToolCallEnd {
        /// Position of the call in its turn.
        index: usize,
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// Whether the result is an error.
        is_error: bool,
        /// The result text.
        content: String,
        /// The media beside the text (an image a tool returned, say), summarised as on
        /// `model_request`. Not written when empty.
        #[serde(serialize_with = "described", skip_serializing_if = "Parts::is_empty")]
        parts: Parts,
    },
    /// A running tool call reported how far it got (an MCP server's
    /// `notifications/progress`, or a handler's own through `ToolContext::progress`).
    ToolProgress {
        /// The call id.
        call_id: String,
        /// How far it got (increases with each report).
        progress: f64,
        /// Of how much (`null` when unknown).
        total: Option<f64>,
        /// What it is doing (`null` when it does not say).
        message: Option<String>,
    },
    /// A hook decided something: about a call, `allow`, `ask`, `deny`, `rewrite` or
    /// `answer` before it ran, `replace` after; about the run (`call_id` `null`),
    /// `add_context` or `block` on the prompt, `stop` on a model response.
    Hook {
        /// The hook's name (a command hook's command).
        hook: String,
        /// The call id; `None` (`null` in JSON) for a decision about the run.
        call_id: Option<String>,
        /// What it decided.
        decision: String,
    },
    /// The model was down (a connection failure, HTTP 5xx, 429 or 529, its retries
    /// spent), and the request went to the next model of a
    /// [`FallbackModel`](crate::model::FallbackModel).
    ModelFallback {
        /// The model that failed.
        from: String,
        /// The model asked now.
        to: String,
        /// Why, in one line.
        reason: String,
    },
    /// The history was compacted before a request to fit the model's context window:
    /// old tool results cleared, or older turns summarised.
    Compaction {
        /// The request's estimated size before, in tokens.
        tokens_before: u64,
        /// Its estimated size after.
        tokens_after: u64,
    },
    /// The run ended: with a final answer (`status` `completed`), at a limit
    /// (`limit_reached`, with `limit`), or by a hook (`blocked`, with `blocked`: the
    /// hook and its message). A durable run that stops to wait for input sends none.
    RunEnd {
        /// [`RunStatus::Completed`], [`RunStatus::LimitReached`] or [`RunStatus::Blocked`].
        status: RunStatus,
        /// The limit reached (`turns`, `tool_calls`, `tokens`, `cost`), with
        /// `limit_reached`.
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<Limit>,
        /// The final text (empty at a limit; a typed run's: its value as compact JSON).
        output: String,
        /// A typed run's answer: the value its output schema admitted (see
        /// `docs/output.md`); absent for a free-text run.
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<serde_json::Value>,
        /// What the run used: tokens, requests, tool calls, and the cost when the price
        /// is known.
        usage: Usage,
        /// Model requests made.
        turns: u32,
        /// Which hook blocked the run, and why, with `blocked`.
        #[serde(skip_serializing_if = "Option::is_none")]
        blocked: Option<harnessx_core::hooks::Blocked>,
    },
    /// The run failed (a model or runtime fault; tool failures never do this).
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Parts as their summaries ([`Part::describe`](harnessx_core::Part::describe)): what an
/// event shows of media, never their bytes.
fn described<S: Serializer>(parts: &Parts, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(parts.iter().map(harnessx_core::Part::describe))
}
