//! [`AgentConfig`]: the agent-wide settings.

use crate::budget::{DEFAULT_MAX_TURNS, ModelPrice, RunLimits};
use crate::context::ContextPolicy;
use crate::model::{ModelRetry, ToolChoice};
use crate::output::{DEFAULT_OUTPUT_RETRIES, OutputMode};
use harnessx_core::{ResultDir, ToolPolicy};

/// Agent-wide settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Register the planning tools `write_todos`/`read_todos` and their prompt line
    /// (default `true`).
    pub planning: bool,
    /// Registry-wide tool options, adopted by the agent's registry below the registry's
    /// own values.
    pub tools: ToolPolicy,
    /// What a run may not exceed: model requests, tool calls, tokens, dollars, calls per
    /// tool. See [`RunLimits`]. The default sets none; a run without
    /// [`RunLimits::max_turns`] is held to [`DEFAULT_MAX_TURNS`] (50) requests (see
    /// [`run_limits`](Self::run_limits)), and one that reaches its turn limit ends with
    /// [`RunStatus::LimitReached`](crate::RunStatus::LimitReached) ([`Limit::Turns`](crate::budget::Limit::Turns)).
    pub limits: RunLimits,
    /// The price of the agent's model, for the cost of its runs; `None` (the default)
    /// takes the built-in price of its model's name
    /// ([`ModelPrice::builtin`]), if the table has it. A run with
    /// [`RunLimits::max_cost_usd`] and no price fails before its first request.
    pub price: Option<ModelPrice>,
    /// Tell the model what is left of its limits, appended to the newest message of each
    /// request (as the planning list is, so request prefixes stay cacheable), so it can
    /// wrap up before the hard stop (default `false`).
    pub budget_note: bool,
    /// Retries of model requests on 429, 5xx and connection errors.
    pub model_retry: ModelRetry,
    /// Output token limit per model request, if any.
    pub max_tokens: Option<u32>,
    /// Whether [`run_stream`](crate::Agent::run_stream) uses streaming model
    /// requests (default `true`). With `false` it makes one complete request per turn
    /// and emits no text deltas; the events are otherwise the same.
    pub stream: bool,
    /// Whether the model may, must or must not call a tool on the first request
    /// (default [`ToolChoice::Auto`]). A [`ToolChoice::Tool`] must name a registered tool
    /// when a run starts, or the run fails with [`AgentError::UnknownToolChoice`](crate::AgentError::UnknownToolChoice).
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one response: `Some(false)` asks for
    /// at most one (OpenAI's `parallel_tool_calls`, Anthropic's
    /// `disable_parallel_tool_use`); `None` (the default) sends nothing.
    pub parallel_tool_calls: Option<bool>,
    /// After a turn in which the model called a tool, later requests of the run use
    /// [`ToolChoice::Auto`] (default `true`, as the OpenAI Agents SDK's
    /// `reset_tool_choice`), so [`ToolChoice::Required`] cannot call tools forever. With
    /// `false` every request uses [`tool_choice`](Self::tool_choice) and a run under
    /// `Required` ends only at its turn limit ([`RunLimits::max_turns`]).
    pub reset_tool_choice: bool,
    /// How a run keeps its requests within the model's context window: the window,
    /// when to compact, how many turns stay, who summarises (see [`ContextPolicy`]).
    pub context: ContextPolicy,
    /// Where a run saves the whole text of a tool result longer than
    /// [`ToolPolicy::max_result_chars`]; its marker then names the file, for the file
    /// tools to read parts of. `None` (the default): nothing is saved.
    pub result_dir: Option<ResultDir>,
    /// How a typed run ([`Agent::run_typed`](crate::Agent::run_typed)) asks for its answer
    /// when its [`Output`](crate::output::Output) does not say (default
    /// [`OutputMode::Tool`]).
    pub output_mode: OutputMode,
    /// How many times a typed run's refused answer is asked again when its
    /// [`Output`](crate::output::Output) does not say (default
    /// [`DEFAULT_OUTPUT_RETRIES`], so three attempts).
    pub output_retries: u32,
    /// How much a reasoning model thinks before it answers (effort or token budget,
    /// mapped per provider; see [`ReasoningConfig`](crate::model::ReasoningConfig)).
    /// `None` (the default): the provider's default, nothing sent.
    pub reasoning: Option<crate::model::ReasoningConfig>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            planning: true,
            tools: ToolPolicy::default(),
            limits: RunLimits::default(),
            price: None,
            budget_note: false,
            model_retry: ModelRetry::default(),
            max_tokens: None,
            stream: true,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            reset_tool_choice: true,
            context: ContextPolicy::default(),
            result_dir: None,
            output_mode: OutputMode::Tool,
            reasoning: None,
            output_retries: DEFAULT_OUTPUT_RETRIES,
        }
    }
}

impl AgentConfig {
    /// The limits a run is held to: [`limits`](Self::limits), with
    /// [`DEFAULT_MAX_TURNS`] as [`RunLimits::max_turns`] when `limits` does not set it, so
    /// every run has a turn limit. (The default is applied here rather than written into
    /// `AgentConfig::default().limits`: a config that sets `limits` from
    /// `RunLimits::default()` would otherwise lose it and run without a turn limit.)
    ///
    /// ```
    /// use harnessx_agent::AgentConfig;
    /// use harnessx_agent::budget::{DEFAULT_MAX_TURNS, RunLimits};
    ///
    /// let limits = RunLimits { max_tool_calls: Some(3), ..RunLimits::default() };
    /// let config = AgentConfig { limits, ..AgentConfig::default() };
    /// assert_eq!(config.run_limits().max_turns, Some(DEFAULT_MAX_TURNS));
    /// let limits = RunLimits { max_turns: Some(4), ..RunLimits::default() };
    /// assert_eq!(AgentConfig { limits, ..AgentConfig::default() }.run_limits().max_turns, Some(4));
    /// ```
    pub fn run_limits(&self) -> RunLimits {
        let mut limits = self.limits.clone();
        limits.max_turns.get_or_insert(DEFAULT_MAX_TURNS);
        limits
    }
}
