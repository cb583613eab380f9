//! Long runs that fit the context window: counting a request's tokens ([`tokens`]), the
//! windows of known models ([`known_window`]), and compaction ([`compact`]), driven by the
//! run loop before each request and after a provider's context-length refusal.
//!
//! Before a request whose estimated size passes [`ContextPolicy::compact_at`] of the
//! window, the older turns are compacted at the turn boundary: first the old tool results
//! are cleared (each replaced by a one-line stub naming its call); when that is not
//! enough, one summarising request turns them into one summary message. The system
//! prompt, the first user message, the planning list and the newest
//! [`keep_turns`](ContextPolicy::keep_turns) turns stay as they were, and a call is never
//! separated from its result. A compaction brings the request down to half the
//! threshold, so it happens rarely, and between two compactions every request's prefix
//! is byte-identical to the one before it (the prompt cache keeps working).
//!
//! A provider's context-length error ([`ModelError::ContextWindow`](crate::model::ModelError::ContextWindow))
//! triggers one compaction and one retry; a second refusal fails the run with
//! [`AgentError::ContextOverflow`](crate::AgentError::ContextOverflow). In a durable run
//! the summary and the refusal are journaled steps ([`Steps::summary`](crate::Steps::summary)):
//! a resume replays them and never asks for a new summary. See `docs/context.md`.

pub mod compact;
pub mod media;
pub mod tokens;
pub(crate) mod track;
mod windows;

use std::fmt;
use std::sync::Arc;

use crate::model::Model;

pub use media::MediaCost;
pub use tokens::{Encoding, Tally};
pub use windows::known_window;

/// The default of [`ContextPolicy::compact_at`].
pub const DEFAULT_COMPACT_AT: f64 = 0.8;
/// The default of [`ContextPolicy::keep_turns`].
pub const DEFAULT_KEEP_TURNS: usize = 4;

/// How a run keeps its requests within the model's context window
/// ([`AgentConfig::context`](crate::AgentConfig::context)).
///
/// ```
/// use harnessx_agent::{AgentConfig, ContextPolicy};
///
/// let config = AgentConfig {
///     context: ContextPolicy { window: Some(32_768), keep_turns: 2, ..ContextPolicy::default() },
///     ..AgentConfig::default()
/// };
/// assert_eq!(config.context.compact_at, 0.8);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ContextPolicy {
    /// The model's context window in tokens. `None` (the default): the window of a
    /// known model ([`known_window`]); for other models, none until a provider's
    /// context-length error names it (nothing is compacted before then).
    pub window: Option<u64>,
    /// The share of the window (less the request's `max_tokens`) a request may reach
    /// before the history is compacted (default 0.8). Compaction brings it to half of
    /// that.
    pub compact_at: f64,
    /// How many of the newest turns (an assistant message and its results) stay as they
    /// were (default 4; fewer when they alone pass the target).
    pub keep_turns: usize,
    /// Who writes the summary.
    pub summarizer: Summarizer,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            window: None,
            compact_at: DEFAULT_COMPACT_AT,
            keep_turns: DEFAULT_KEEP_TURNS,
            summarizer: Summarizer::Agent,
        }
    }
}

/// The model that writes a compaction's summary.
#[derive(Clone, Default)]
pub enum Summarizer {
    /// The agent's own model (the default).
    #[default]
    Agent,
    /// Another model, e.g. a cheaper one.
    Model(Arc<dyn Model>),
}

impl Summarizer {
    /// A summarizer of its own.
    pub fn model(model: impl Model + 'static) -> Self {
        Self::Model(Arc::new(model))
    }
}

impl fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Agent => f.write_str("Agent"),
            Self::Model(m) => write!(f, "Model({})", m.name()),
        }
    }
}

impl PartialEq for Summarizer {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Agent, Self::Agent) => true,
            (Self::Model(a), Self::Model(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
