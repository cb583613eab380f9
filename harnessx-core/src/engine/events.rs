//! Events the engine emits while executing calls, for streams, progress lines and logs.

use crate::tool::call::{ToolCall, ToolResult};

/// One engine event. Borrowed: a sink that keeps events clones what it needs.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ToolEvent<'a> {
    /// A call was scheduled. Emitted for every call of a batch, in call order, before
    /// any handler runs, whichever call finishes first.
    CallStart {
        /// Position of the call in its batch.
        index: usize,
        /// The call as the model made it.
        call: &'a ToolCall,
        /// The registered name it resolved to, if it resolved.
        tool: Option<&'a str>,
    },
    /// A call finished (in completion order).
    CallEnd {
        /// Position of the call in its batch.
        index: usize,
        /// Its result.
        result: &'a ToolResult,
    },
    /// A running call reported how far it got (an MCP server's `notifications/progress`,
    /// or a handler's own through [`ToolContext::progress`](crate::ToolContext::progress)).
    Progress {
        /// The call id.
        call_id: &'a str,
        /// How far it got (increases with each report).
        progress: f64,
        /// Of how much, when known.
        total: Option<f64>,
        /// What it is doing, when it says.
        message: Option<&'a str>,
    },
    /// A hook decided something about a call ([`crate::hooks`]): `decision` is `allow`,
    /// `ask`, `deny`, `rewrite` or `answer` before the call, `replace` after it.
    Hook {
        /// The call id.
        call_id: &'a str,
        /// The hook's name.
        hook: &'a str,
        /// What it decided.
        decision: &'a str,
    },
}

/// Receives [`ToolEvent`]s. Called inline by the engine: keep it quick (send to a
/// channel, write a line).
pub trait ToolEventSink: Send + Sync {
    /// Handles one event.
    fn on_event(&self, event: &ToolEvent<'_>);
}

impl<F> ToolEventSink for F
where
    F: Fn(&ToolEvent<'_>) + Send + Sync,
{
    fn on_event(&self, event: &ToolEvent<'_>) {
        self(event)
    }
}
