//! [`AgentBuilder`]: tools, model, permissions, skills and knowledge, then [`Agent`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::Agent;
use crate::model::Model;
use crate::{AgentConfig, AgentError, Knowledge, KnowledgeSource, SkillSource, SubAgent, knowledge, skills};
use harnessx_builtin::planning::{PlanningOptions, register_planning_tools};
use harnessx_core::ToolRegistry;
use harnessx_core::catalog::BuiltinOptions;
use harnessx_core::catalog::CommonOptions;
use harnessx_core::{Authorizer, PermissionManager};
use harnessx_core::{Sandbox, ToolSource};

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
    authorizer: Option<Arc<dyn Authorizer>>,
    hooks: harnessx_core::hooks::ToolHooks,
    questions: Vec<String>,
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

    /// The [`Authorizer`] the run's calls are put to, in place of the permission
    /// manager's rules: it answers Allow, Deny (with the text the model gets) or Wait (a
    /// question for a person, asked as an ASK is: the manager's approval callback on a
    /// direct run, a pause with `needs_input` on a durable one). It is asked on every
    /// backend (direct, SQLite, Restate), once per call that would run; a call a
    /// durable run already settled is not asked again. An authorizer that panics denies
    /// the call. Edited arguments it allows are checked against the manager's deny rules
    /// again. To keep the manager's rules under your own, wrap it: `PermissionManager`
    /// is an `Authorizer` too. See `docs/permissions.md`.
    pub fn authorizer(self, authorizer: impl Authorizer + 'static) -> Self {
        self.authorizer_arc(Arc::new(authorizer))
    }

    /// Puts every call of this agent's runs through `hook`, after the hooks given before
    /// it ([`harnessx_core::hooks`]): its pre decision before the call's permission is
    /// decided, its post decision on the call's result.
    pub fn hook(mut self, hook: impl harnessx_core::hooks::ToolHook + 'static) -> Self {
        self.hooks = self.hooks.with(hook);
        self
    }

    /// [`hook`](Self::hook) under its own timeout instead of
    /// [`DEFAULT_HOOK_TIMEOUT`](harnessx_core::hooks::DEFAULT_HOOK_TIMEOUT): a hook that has
    /// not answered by then refuses the call.
    pub fn hook_with_timeout(
        mut self,
        hook: impl harnessx_core::hooks::ToolHook + 'static,
        timeout: std::time::Duration,
    ) -> Self {
        self.hooks = self.hooks.with_timeout(hook, timeout);
        self
    }

    /// Calls of tool `name` (say `ask_user`) are questions for a person. In a durable run
    /// (SQLite or Restate) such a call does not run: the run pauses with a `needs_input`
    /// of kind `question` (its `reason` is the question, its `arguments` the call's), and
    /// the reply given with `answer` becomes the call's result, `The user answered:
    /// REPLY` (an empty reply tells the model nobody answered, so it proceeds on the most
    /// likely reading). A direct run calls the tool as usual, with its own way of asking.
    pub fn question_tool(mut self, name: impl Into<String>) -> Self {
        self.questions.push(name.into());
        self
    }

    /// [`authorizer`](Self::authorizer), shared.
    pub fn authorizer_arc(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
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
            authorizer: self.authorizer,
            hooks: self.hooks,
            questions: self.questions,
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
