//! [`Agent`]: a model, tools, permissions, and the loop between them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::AgentBuilder;
use crate::budget::ModelPrice;
use crate::model::{Message, Model, ModelRequest, ModelResponse};
use crate::{
    AgentConfig, AgentError, Knowledge, PLANNING_PROMPT_LINE, PlanningState, Skill, ToolChoice, skills,
};
use harnessx_builtin::planning::planning_state;
use harnessx_core::PermissionManager;
use harnessx_core::ToolRegistry;

/// An LLM agent: a model, tools, permissions, and the loop between them.
///
/// ```
/// use harnessx_agent::Agent;
/// use harnessx_agent::model::TestModel;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let agent = Agent::builder().model(TestModel::new()).build().unwrap();
/// let result = agent.run("Make a plan.").await.unwrap();
/// assert!(result.output.starts_with("Ran"));
/// # }
/// ```
pub struct Agent {
    pub(crate) name: Option<String>,
    pub(crate) model: Option<Arc<dyn Model>>,
    pub(crate) registry: ToolRegistry,
    pub(crate) permissions: PermissionManager,
    /// What the run's calls are put to in place of the manager's rules, if set.
    pub(crate) authorizer: Option<Arc<dyn harnessx_core::Authorizer>>,
    pub(crate) hooks: harnessx_core::hooks::ToolHooks,
    /// The tools whose calls are questions for a person ([`AgentBuilder::question_tool`]).
    pub(crate) questions: Vec<String>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) skills: Option<skills::Skills>,
    /// The skills' block of the system prompt, built once.
    pub(crate) skills_prompt: Option<String>,
    pub(crate) knowledge: Option<Arc<Knowledge>>,
    pub(crate) config: AgentConfig,
    pub(crate) closed: AtomicBool,
    /// The MCP servers whose tools are registered; closed with the agent.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: std::sync::Mutex<Vec<harnessx_mcp::McpConnection>>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model.as_ref().map(|m| m.name()))
            .field("tools", &self.registry)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// Whether calls of `tool` are questions for a person, which a durable run pauses for
    /// ([`AgentBuilder::question_tool`]).
    pub fn is_question(&self, tool: &str) -> bool {
        self.questions.iter().any(|q| q == tool)
    }

    /// The agent's registry, for later registration. Finish changing bindings before
    /// starting a run.
    pub fn tools(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The agent's name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The permission manager.
    pub fn permissions(&self) -> &PermissionManager {
        &self.permissions
    }

    /// The [`Authorizer`](harnessx_core::Authorizer) its runs' calls are put to in place of
    /// the manager's rules ([`AgentBuilder::authorizer`](crate::AgentBuilder::authorizer)).
    pub fn authorizer(&self) -> Option<&Arc<dyn harnessx_core::Authorizer>> {
        self.authorizer.as_ref()
    }

    /// The hooks its runs put every call through ([`AgentBuilder::hook`](crate::AgentBuilder::hook)).
    pub fn hooks(&self) -> &harnessx_core::hooks::ToolHooks {
        &self.hooks
    }

    /// The settings.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The model, if one is set.
    pub fn model(&self) -> Option<&Arc<dyn Model>> {
        self.model.as_ref()
    }

    /// The price of the agent's model, for the cost of its runs:
    /// [`AgentConfig::price`], else the built-in price of the model's name
    /// ([`ModelPrice::builtin`]); `None` when neither is known.
    pub fn price(&self) -> Option<ModelPrice> {
        self.config.price.or_else(|| ModelPrice::builtin(&self.model.as_ref()?.model_name()))
    }

    /// The first request of a run on `prompt` after `history`: the system prompt, the
    /// tools' schemas and the token limit, as [`run`](Self::run) builds it. For a
    /// runtime that drives the loop itself (the durable one).
    pub fn first_request(&self, history: Vec<Message>, prompt: impl Into<crate::Prompt>) -> ModelRequest {
        let prompt = prompt.into();
        let mut request = ModelRequest {
            system: self.effective_system_prompt(),
            messages: history,
            tools: self.registry.get_tool_params(),
            max_tokens: self.config.max_tokens,
            tool_choice: self.config.tool_choice.clone(),
            parallel_tool_calls: self.config.parallel_tool_calls,
            output: None,
            reasoning: self.config.reasoning,
            prompt_cache_key: None,
        };
        request.messages.push(Message::user_with_parts(prompt.text, prompt.parts));
        request
    }

    /// Checks that [`AgentConfig::tool_choice`] can be sent: a [`ToolChoice::Tool`] must
    /// name a registered tool, exactly. Runs call it before their first request; call it
    /// after building the agent (and registering later tools) to fail earlier.
    pub fn check_tool_choice(&self) -> Result<(), AgentError> {
        match &self.config.tool_choice {
            ToolChoice::Tool(name) if !self.registry.contains(name) => Err(AgentError::UnknownToolChoice {
                name: name.clone(),
                registered: self.registry.tool_names(),
            }),
            _ => Ok(()),
        }
    }

    /// Prepares the next request after a turn in which the model called tools: with
    /// [`AgentConfig::reset_tool_choice`] (the default) the tool choice becomes
    /// [`ToolChoice::Auto`]. The results themselves are the caller's to append. For a
    /// runtime that drives the loop itself (the durable one), as [`run`](Self::run) does.
    pub fn after_tool_calls(&self, request: &mut ModelRequest) {
        if self.config.reset_tool_choice {
            request.tool_choice = ToolChoice::Auto;
        }
    }

    /// One model request with the agent's retry policy ([`AgentConfig::model_retry`]),
    /// not streamed.
    pub async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, AgentError> {
        // The turn, for the `chat` span: the model requests of this run so far (the
        // assistant messages since the prompt), plus this one.
        let turn = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        self.request_turn(request, None, turn as u32 + 1).await
    }

    /// The todo list, while the built-in `write_todos` is installed: installed by the agent
    /// (`AgentConfig::planning`), or loaded by name (`.tool("planning")`, `"all"`). `None`
    /// when no `write_todos` is registered or it is a tool of the user's own.
    pub fn planning(&self) -> Option<Arc<PlanningState>> {
        planning_state(&self.registry.get_tool("write_todos")?)
    }

    /// The skills given to [`AgentBuilder::skills`], sorted by name.
    pub fn skills(&self) -> Vec<&Skill> {
        self.skills.iter().flat_map(|s| s.list()).collect()
    }

    /// The indexed knowledge source given to [`AgentBuilder::knowledge`], with its
    /// broken links.
    pub fn knowledge(&self) -> Option<&Arc<Knowledge>> {
        self.knowledge.as_ref()
    }

    /// The system prompt of the next request: the configured prompt, the skills' block
    /// when there are skills, and the planning line while the built-in `write_todos` is
    /// installed, separated by blank lines.
    pub fn effective_system_prompt(&self) -> Option<String> {
        self.system_prompt_with(self.planning().is_some())
    }

    /// The system prompt, with the planning line when `planning` (the run looks the
    /// built-in `write_todos` up once and passes what it found).
    fn system_prompt_with(&self, planning: bool) -> Option<String> {
        let parts: Vec<&str> = [
            self.system_prompt.as_deref(),
            self.skills_prompt.as_deref(),
            planning.then_some(PLANNING_PROMPT_LINE),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Closes the agent; later runs fail with [`AgentError::Closed`]. Its MCP servers
    /// are stopped (their processes do not outlive this call's end by more than MCP's
    /// stdio shutdown takes: stdin closed, then SIGTERM, then SIGKILL).
    pub async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        #[cfg(feature = "mcp")]
        {
            let connections = std::mem::take(&mut *self.mcp_connections());
            for connection in connections {
                connection.close().await;
            }
        }
    }

    /// The names of the MCP servers connected to this agent (command lines or URLs).
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(&self) -> Vec<String> {
        self.mcp_connections().iter().map(|c| c.server().to_owned()).collect()
    }

    #[cfg(feature = "mcp")]
    pub(crate) fn mcp_connections(&self) -> std::sync::MutexGuard<'_, Vec<harnessx_mcp::McpConnection>> {
        self.mcp.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}
