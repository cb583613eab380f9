//! [`AgentError`]: why a run, or building an agent, failed.

use crate::model::ModelError;
use crate::{KnowledgeError, SkillError};
use harnessx_core::RegistryError;

/// Why a run (or building an agent) failed. Tool failures never appear here: they are
/// error results the model reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model failed (after retries).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A tool could not be registered.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The run made `max_turns` model requests without a final answer.
    ///
    /// No longer returned by a run: one that reaches `max_turns` ends with
    /// [`RunStatus::LimitReached`](crate::RunStatus::LimitReached) and
    /// [`Limit::Turns`](crate::Limit::Turns), as at its other limits. Kept so that code
    /// matching it compiles.
    #[deprecated(note = "a run that reaches max_turns ends with RunStatus::LimitReached (Limit::Turns)")]
    #[error("the run reached max_turns ({0}) without a final answer")]
    MaxTurns(u32),
    /// The request does not fit the model's context window even after compacting the
    /// history (the newest turn, the system prompt and the first message alone are too
    /// large), or the provider refused it again after the one compaction a refusal earns.
    #[error(
        "the request does not fit the model's context window even after compacting the history ({detail}): lower the tool result cap (max_result_chars, --max-result-chars) or give the model's real window (ContextPolicy::window, --context-window)"
    )]
    ContextOverflow {
        /// What was measured: the estimate and the window, or the provider's words.
        detail: String,
    },
    /// [`RunLimits::max_cost_usd`](crate::RunLimits::max_cost_usd) is set and the price of
    /// the model is not known: the run fails before its first request.
    #[error(
        "a cost limit is set, but the price of the model {model:?} is not known: give it with AgentConfig::price (the command line's --price IN,OUT[,CACHED_IN])"
    )]
    UnknownPrice {
        /// The model's name.
        model: String,
    },
    /// No model was configured.
    #[error("no model configured: pass one to Agent::builder().model(..)")]
    NoModel,
    /// The agent was closed.
    #[error("the agent is closed")]
    Closed,
    /// Skills could not be loaded (a `SKILL.md` with bad front matter names its file and
    /// line).
    #[error(transparent)]
    Skill(#[from] SkillError),
    /// A knowledge source could not be indexed (a concept with bad front matter names its
    /// file and line).
    #[error(transparent)]
    Knowledge(#[from] KnowledgeError),
    /// [`AgentConfig::tool_choice`](crate::AgentConfig::tool_choice) forces a tool that is not registered: the run fails
    /// before its first request.
    #[error("{}", unknown_tool_choice(.name, .registered))]
    UnknownToolChoice {
        /// The name in [`ToolChoice::Tool`](crate::ToolChoice::Tool).
        name: String,
        /// The registered tools, in registration order.
        registered: Vec<String>,
    },
    /// A typed run could not start (an unusable output schema, a tool named
    /// `final_result`) or its answers did not fit the schema after every retry (the last
    /// error names the field).
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    /// An MCP server could not be started, reached or listed.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] harnessx_mcp::McpError),
    /// [`AgentBuilder::build`](crate::AgentBuilder::build) was called with MCP servers, which connect asynchronously.
    #[cfg(feature = "mcp")]
    #[error(
        "MCP servers connect asynchronously: build the agent with `.connect().await` instead of `.build()`"
    )]
    McpNeedsConnect,
}

/// The text of [`AgentError::UnknownToolChoice`]: the name, the closest registered one,
/// every registered one, and the keywords.
pub(crate) fn unknown_tool_choice(name: &str, registered: &[String]) -> String {
    let mut text = format!("tool_choice forces the tool \"{name}\", which is not registered");
    let closest = harnessx_core::tool::name::suggestions(name, registered.iter().map(String::as_str), 1);
    if let Some(closest) = closest.first() {
        text.push_str(&format!(" (did you mean \"{closest}\"?)"));
    }
    if registered.is_empty() {
        text.push_str("; the agent has no tools");
    } else {
        text.push_str(&format!("; registered tools: {}", registered.join(", ")));
    }
    text.push_str(". Name one of them, or use auto, required or none");
    text
}
