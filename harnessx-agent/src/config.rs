//! [`AgentConfig`]: the agent-wide settings.

use crate::model::ModelRetry;
use harnessx_core::ToolPolicy;

/// Agent-wide settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Register the planning tools `write_todos`/`read_todos` and their prompt line
    /// (default `true`).
    pub planning: bool,
    /// Registry-wide tool options, adopted by the agent's registry below the registry's
    /// own values.
    pub tools: ToolPolicy,
    /// Most model requests in one run (default 50).
    pub max_turns: u32,
    /// Retries of model requests on 429, 5xx and connection errors.
    pub model_retry: ModelRetry,
    /// Output token limit per model request, if any.
    pub max_tokens: Option<u32>,
    /// Whether [`run_stream`](crate::Agent::run_stream) uses streaming model
    /// requests (default `true`). With `false` it makes one complete request per turn
    /// and emits no text deltas; the events are otherwise the same.
    pub stream: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            planning: true,
            tools: ToolPolicy::default(),
            max_turns: 50,
            model_retry: ModelRetry::default(),
            max_tokens: None,
            stream: true,
        }
    }
}
