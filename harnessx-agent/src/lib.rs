#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod config;
pub mod events;
mod front_matter;
pub mod knowledge;
pub mod model;
pub mod planning;
pub mod run;
pub mod skills;
pub mod spans;
pub mod specialist;
#[cfg(feature = "otel")]
pub mod telemetry;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use config::AgentConfig;
pub use events::AgentEvent;
pub use knowledge::{Knowledge, KnowledgeError, KnowledgeSource};
pub use model::{ParseToolChoiceError, ToolChoice};
pub use planning::{PLANNING_PROMPT_LINE, PlanningState};
pub use run::engine::{Start, drive};
pub use run::recovery::{Recovery, Unknown};
pub use run::state::{NeedsInput, NeedsInputKind, RunResult, RunState, RunStatus};
pub use run::steps::{Answer, Executed, Recorded, Steps};
pub use run::{Events, RunStream, call_ids_for_turn, history_safe};
pub use skills::{SKILL_TOOL_NAME, Skill, SkillError, SkillSource};
pub use specialist::SubAgent;

use crate::model::{Message, Model, ModelError, ModelRequest, ModelResponse};
use harnessx_builtin::planning::{PlanningOptions, planning_state, register_planning_tools};
use harnessx_core::PermissionManager;
use harnessx_core::RegistryError;
use harnessx_core::ToolRegistry;
use harnessx_core::catalog::BuiltinOptions;
use harnessx_core::catalog::CommonOptions;
use harnessx_core::{Sandbox, ToolSource};

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
    #[error("the run reached max_turns ({0}) without a final answer")]
    MaxTurns(u32),
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
    /// [`AgentConfig::tool_choice`] forces a tool that is not registered: the run fails
    /// before its first request.
    #[error("{}", unknown_tool_choice(.name, .registered))]
    UnknownToolChoice {
        /// The name in [`ToolChoice::Tool`].
        name: String,
        /// The registered tools, in registration order.
        registered: Vec<String>,
    },
    /// An MCP server could not be started, reached or listed.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] harnessx_mcp::McpError),
    /// [`AgentBuilder::build`] was called with MCP servers, which connect asynchronously.
    #[cfg(feature = "mcp")]
    #[error(
        "MCP servers connect asynchronously: build the agent with `.connect().await` instead of `.build()`"
    )]
    McpNeedsConnect,
}

/// The text of [`AgentError::UnknownToolChoice`]: the name, the closest registered one,
/// every registered one, and the keywords.
fn unknown_tool_choice(name: &str, registered: &[String]) -> String {
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

/// Builds an [`Agent`].
#[derive(Default)]
pub struct AgentBuilder {
    name: Option<String>,
    model: Option<Arc<dyn Model>>,
    tools: Vec<ToolSource>,
    specialists: Vec<SubAgent>,
    registry: Option<ToolRegistry>,
    sandbox: Option<Arc<dyn Sandbox>>,
    permissions: Option<PermissionManager>,
    system_prompt: Option<String>,
    skills: Vec<SkillSource>,
    knowledge: Option<KnowledgeSource>,
    config: AgentConfig,
    #[cfg(feature = "mcp")]
    mcp: Vec<(harnessx_mcp::McpServer, harnessx_mcp::McpOptions)>,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("tools", &self.tools)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// A name for the agent, shown in its runs' spans (`invoke_agent {name}`,
    /// `gen_ai.agent.name`). A specialist is named after its tool.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The model.
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// The model, already shared.
    pub fn model_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Adds a tool: a `#[tool]` struct, a [`ToolDefinition`](harnessx_core::ToolDefinition),
    /// or a built-in name/bundle.
    pub fn tool(mut self, tool: impl Into<ToolSource>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Adds a built-in tool or bundle with options (as `registry.load_builtin` takes).
    pub fn builtin(mut self, name: impl Into<String>, options: impl Into<BuiltinOptions>) -> Self {
        self.tools.push(ToolSource::Builtin(name.into(), options.into()));
        self
    }

    /// Adds several tools.
    pub fn tools<I, T>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<ToolSource>,
    {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Attaches an existing registry: the agent uses that same registry (shared, not
    /// cloned), and the builder's tools are added to it.
    pub fn registry(mut self, registry: ToolRegistry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Binds a caller-owned sandbox as where the `bash` built-in runs commands (bound on
    /// the registry before any tool is added; `agent.tools().sandbox()` returns it). A
    /// sandbox that owns a filesystem also takes the file tools, whose `base_path` then
    /// does not apply. Without one, `bash` uses a `LocalSandbox`.
    pub fn sandbox(mut self, sandbox: impl Sandbox) -> Self {
        self.sandbox = Some(Arc::new(sandbox));
        self
    }

    /// Like [`sandbox`](Self::sandbox), for a sandbox that is already shared.
    pub fn sandbox_arc(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Adds a specialist, exposed to the model as a tool.
    pub fn specialist(mut self, specialist: SubAgent) -> Self {
        self.specialists.push(specialist);
        self
    }

    /// The permission manager (default: ALLOW, no approval callback).
    pub fn permissions(mut self, permissions: PermissionManager) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// The system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Adds skills: folders in the Claude Code layout ([`SkillSource::dir`]) or skills
    /// built in code. The build reads their front matter (a bad one fails it, naming the
    /// file and line), registers the `Skill` tool and adds a fixed block listing each
    /// skill to the system prompt. See [`crate::skills`].
    pub fn skills(mut self, source: impl Into<SkillSource>) -> Self {
        self.skills.push(source.into());
        self
    }

    /// Adds a knowledge source: folders of concepts (Markdown with front matter) whose
    /// links make a graph. The build indexes them (SQLite FTS5) and registers
    /// `search_concepts`, `read_concept` and `get_neighbors`. Called again, the folders
    /// are added to the same index. See [`crate::knowledge`].
    pub fn knowledge(mut self, source: KnowledgeSource) -> Self {
        match &mut self.knowledge {
            Some(existing) => existing.merge(source),
            None => self.knowledge = Some(source),
        }
        self
    }

    /// Agent-wide settings.
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds the tools of an MCP server (all of them, under the server's names, following
    /// the permission manager), the server untrusted: only its hints that make a call more
    /// careful apply (see `McpOptions::trust_hints`). Build with
    /// [`connect`](Self::connect), which starts the server; [`Agent::close`] stops it.
    #[cfg(feature = "mcp")]
    pub fn mcp(self, server: harnessx_mcp::McpServer) -> Self {
        self.mcp_with(server, harnessx_mcp::McpOptions::default())
    }

    /// Like [`mcp`](Self::mcp), choosing which tools and how (a name prefix, a permission,
    /// whether the server is trusted to describe its tools).
    #[cfg(feature = "mcp")]
    pub fn mcp_with(mut self, server: harnessx_mcp::McpServer, options: harnessx_mcp::McpOptions) -> Self {
        self.mcp.push((server, options));
        self
    }

    /// Builds the agent and connects its MCP servers, registering their tools after the
    /// builder's own. A server that cannot start or be listed (or whose tool names are
    /// taken) fails the build, and the servers started before it are stopped.
    #[cfg(feature = "mcp")]
    pub async fn connect(mut self) -> Result<Agent, AgentError> {
        let servers = std::mem::take(&mut self.mcp);
        let agent = self.build()?;
        for (server, options) in servers {
            match harnessx_mcp::register_mcp(&agent.registry, server, options).await {
                Ok(connection) => agent.mcp_connections().push(connection),
                Err(e) => {
                    agent.close().await;
                    return Err(e.into());
                }
            }
        }
        Ok(agent)
    }

    /// Registers the tools and builds the agent.
    pub fn build(self) -> Result<Agent, AgentError> {
        #[cfg(feature = "mcp")]
        if !self.mcp.is_empty() {
            return Err(AgentError::McpNeedsConnect);
        }
        // Read the skills first: a bad SKILL.md fails the build before anything is
        // registered on a caller's registry.
        let skills = if self.skills.is_empty() { None } else { Some(skills::Skills::load(self.skills)?) };
        let knowledge = match &self.knowledge {
            Some(source) => Some(Arc::new(Knowledge::open(source)?)),
            None => None,
        };
        let registry = self.registry.unwrap_or_default();
        registry.adopt_policy(&self.config.tools);
        if let Some(sandbox) = self.sandbox {
            registry.bind_sandbox(sandbox);
        }
        for tool in self.tools {
            registry.add(tool)?;
        }
        let permissions = self.permissions.unwrap_or_default();
        for specialist in self.specialists {
            let def =
                specialist.into_definition(self.model.clone(), permissions.clone(), registry.serial_queue());
            registry.register_tool(def)?;
        }
        if self.config.planning && !registry.contains("write_todos") {
            // The built-in bundle, with no permission of its own: like every registration
            // style, it follows the manager (ALLOW for a plain agent; an ASK or DENY
            // manager governs planning too). A `read_todos` of the user's own is kept.
            let mut common = CommonOptions::default();
            if registry.contains("read_todos") {
                common.include = Some(vec!["write_todos".to_owned()]);
            }
            register_planning_tools(&registry, PlanningOptions { common, ..PlanningOptions::default() })?;
        }
        let skills_prompt = match &skills {
            Some(skills) if !skills.is_empty() => {
                registry.register_tool(skills.tool())?;
                Some(skills.prompt_block())
            }
            _ => None,
        };
        if let Some(knowledge) = &knowledge {
            for def in knowledge::knowledge_tools(knowledge) {
                registry.register_tool(def)?;
            }
        }
        Ok(Agent {
            name: self.name,
            model: self.model,
            registry,
            permissions,
            system_prompt: self.system_prompt,
            skills,
            skills_prompt,
            knowledge,
            config: self.config,
            closed: AtomicBool::new(false),
            #[cfg(feature = "mcp")]
            mcp: std::sync::Mutex::new(Vec::new()),
        })
    }
}

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
    name: Option<String>,
    model: Option<Arc<dyn Model>>,
    registry: ToolRegistry,
    permissions: PermissionManager,
    system_prompt: Option<String>,
    skills: Option<skills::Skills>,
    /// The skills' block of the system prompt, built once.
    skills_prompt: Option<String>,
    knowledge: Option<Arc<Knowledge>>,
    config: AgentConfig,
    closed: AtomicBool,
    /// The MCP servers whose tools are registered; closed with the agent.
    #[cfg(feature = "mcp")]
    mcp: std::sync::Mutex<Vec<harnessx_mcp::McpConnection>>,
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

    /// The settings.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The model, if one is set.
    pub fn model(&self) -> Option<&Arc<dyn Model>> {
        self.model.as_ref()
    }

    /// The first request of a run on `prompt` after `history`: the system prompt, the
    /// tools' schemas and the token limit, as [`run`](Self::run) builds it. For a
    /// runtime that drives the loop itself (the durable one).
    pub fn first_request(&self, history: Vec<Message>, prompt: impl Into<String>) -> ModelRequest {
        let mut request = ModelRequest {
            system: self.effective_system_prompt(),
            messages: history,
            tools: self.registry.get_tool_params(),
            max_tokens: self.config.max_tokens,
            tool_choice: self.config.tool_choice.clone(),
            parallel_tool_calls: self.config.parallel_tool_calls,
        };
        request.messages.push(Message::user(prompt));
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
    fn mcp_connections(&self) -> std::sync::MutexGuard<'_, Vec<harnessx_mcp::McpConnection>> {
        self.mcp.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}
