//! The one set-up of tools and agents: `run`, `resume` and `worker` build their agent
//! here, `tools` and `mcp serve` their registry and permissions, from the flags of
//! [`flags`]. Loading tools (with the base path, the sandbox and the web flags), the
//! permission manager and who approves, MCP servers, the model: each exists once.

pub(crate) mod agent_flags;
pub(crate) mod attach;
pub(crate) mod flags;
pub(crate) mod mcp_prompt;
pub(crate) mod output;
pub(crate) mod rules;
pub(crate) mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harnessx::agent::{Agent, AgentBuilder, AgentConfig, AgentError, KnowledgeSource, SkillSource};
use harnessx::builtin::sandbox::{BubblewrapSandbox, LocalSandbox};
use harnessx::catalog::{self, BuiltinItem, BuiltinOptions};
use harnessx::durable::restate::WorkerConfig;
use harnessx::mcp::{McpConnection, McpError, register_mcp};
use harnessx::model::{AnthropicModel, GeminiModel, Model, OpenAiModel, OpenAiResponsesModel, TestModel};
use harnessx::{PermissionLevel, PermissionManager, Sandbox, ToolRegistry};

use self::flags::{AgentArgs, McpArgs, PermissionArgs, SandboxArgs, SandboxKind, WebArgs};
use self::rules::LoadedRules;
use crate::error::CliError;
use crate::terminal;

/// Said on stderr when `run` uses the built-in test model, so nobody mistakes its canned
/// answers for a real model's.
pub(crate) const TEST_MODEL_NOTICE: &str = "harnessx: using the built-in test model (no network): it calls the tools the way a person exploring this folder would (list it, glob and grep for the words of the prompt, read a file it found) and reports what came back. Pick a real model with --model openai:MODEL, --model openai-responses:MODEL (OpenAI's Responses API), --model anthropic:MODEL or --model gemini:MODEL (keys from OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY), or --base-url URL --model openai:MODEL for a local OpenAI-compatible server.";

/// Where, under the base path, capped tool results are saved whole.
pub(crate) const RESULTS_DIR: &str = ".harnessx/results";

/// Where the file tools are contained.
#[derive(Debug, Clone)]
pub(crate) enum BasePath {
    /// `--base-path DIR`: every tool that takes a base path gets it, and at least one must.
    Given(PathBuf),
    /// No flag, but `run` contains file tools under the current directory by default;
    /// tool lists without file tools simply do not use it.
    Default(PathBuf),
    /// No containment: the file tools act on the host under the process's permissions.
    Host,
}

impl BasePath {
    /// `--base-path DIR`, else no containment (`tools call`).
    pub(crate) fn from_flag(flag: Option<PathBuf>) -> Self {
        flag.map_or(Self::Host, Self::Given)
    }

    /// `--base-path DIR`, else the current directory (`run`, `resume`, `worker`, `mcp
    /// serve`): a current directory that cannot be read is a usage error.
    pub(crate) fn contained(flag: Option<PathBuf>) -> Result<Self, CliError> {
        match (flag, std::env::current_dir().ok()) {
            (Some(dir), _) => Ok(Self::Given(dir)),
            (None, Some(dir)) => Ok(Self::Default(dir)),
            (None, None) => Err(CliError::Usage(
                "the current directory cannot be read, so it cannot contain the file tools; pass --base-path DIR"
                    .into(),
            )),
        }
    }

    pub(crate) fn dir(&self) -> Option<&PathBuf> {
        match self {
            Self::Given(dir) | Self::Default(dir) => Some(dir),
            Self::Host => None,
        }
    }
}

/// What a command's built-in tools are made of.
pub(crate) struct Tools<'a> {
    /// `--tools`.
    pub(crate) specs: &'a [String],
    /// What loads when `--tools` is not given.
    pub(crate) default_specs: &'a [&'a str],
    pub(crate) base_path: BasePath,
    pub(crate) sandbox: &'a SandboxArgs,
    pub(crate) web: &'a WebArgs,
}

impl Tools<'_> {
    /// A registry with the sandbox bound and the tools loaded.
    pub(crate) fn registry(&self) -> Result<ToolRegistry, CliError> {
        let registry = ToolRegistry::new();
        let took_base_path = bind_sandbox(self.sandbox, &registry, &self.base_path)?;
        load_tools(&registry, self.specs, self.default_specs, &self.base_path, took_base_path, self.web)?;
        Ok(registry)
    }
}

/// Builds the chosen sandbox and binds it on `registry` (before any tool is loaded, so
/// `run_bash` and the file tools see it). Returns whether the sandbox took the base path
/// as its workspace.
fn bind_sandbox(args: &SandboxArgs, registry: &ToolRegistry, base_path: &BasePath) -> Result<bool, CliError> {
    if args.sandbox_network && args.sandbox != Some(SandboxKind::Bubblewrap) {
        return Err(CliError::Usage("--sandbox-network needs --sandbox bubblewrap".into()));
    }
    let here =
        || std::env::current_dir().map_err(|e| CliError::Failed(format!("the current directory: {e}")));
    let (sandbox, took_base_path): (Arc<dyn Sandbox>, bool) = match args.sandbox {
        None => return Ok(false),
        Some(SandboxKind::Local) => {
            let mut local = LocalSandbox::new();
            if let Some(dir) = base_path.dir() {
                local = local.working_dir(dir);
            }
            (Arc::new(local), false)
        }
        Some(SandboxKind::Bubblewrap) => {
            let workspace = match base_path.dir() {
                Some(dir) => dir.clone(),
                None => here()?,
            };
            let sandbox = BubblewrapSandbox::builder()
                .workspace(workspace)
                .network(args.sandbox_network)
                .build()
                .map_err(CliError::failed)?;
            (Arc::new(sandbox), true)
        }
    };
    registry.bind_sandbox(sandbox);
    Ok(took_base_path)
}

/// Loads the specs (default `default_specs`) into `registry`, passing the base path to
/// the bundles that take it, and the `--web-*` flags to the web bundle.
/// `base_path_used`: a sandbox already took it as its workspace.
fn load_tools(
    registry: &ToolRegistry,
    specs: &[String],
    default_specs: &[&str],
    base_path: &BasePath,
    base_path_used: bool,
    web: &WebArgs,
) -> Result<(), CliError> {
    let specs: Vec<String> = if specs.is_empty() {
        default_specs.iter().map(|s| s.to_string()).collect()
    } else {
        specs.iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
    };
    let mut used_base_path = base_path_used;
    let mut used_web = false;
    for spec in &specs {
        if registry.contains(spec) {
            continue; // named twice, or already loaded by its bundle
        }
        if spec == harnessx::builtin::ask_user::ASK_USER_TOOL {
            // Asked on this terminal when there is one; a durable run with no one here
            // pauses for the reply instead (the agent's question tool).
            let options = harnessx::builtin::ask_user::AskUserOptions::default();
            harnessx::builtin::ask_user::register_ask_user_tool(registry, terminal::ask_user, options)
                .map_err(CliError::usage)?;
            continue;
        }
        let item = catalog::resolve(spec).map_err(CliError::usage)?;
        let takes = |key: &str| match item {
            BuiltinItem::Tool { bundle, .. } | BuiltinItem::Bundle(bundle) => bundle.options.contains(&key),
            BuiltinItem::All => catalog::bundles().iter().any(|b| b.options.contains(&key)),
        };
        let takes_base_path = takes("base_path");
        let mut options = BuiltinOptions::new().set("replace", true);
        if let (Some(dir), true) = (base_path.dir(), takes_base_path) {
            let text = dir.to_str().ok_or_else(|| {
                CliError::Usage(match base_path {
                    BasePath::Given(_) => format!("--base-path must be valid UTF-8, got {}", dir.display()),
                    _ => format!(
                        "the current directory ({}) is not valid UTF-8, so it cannot contain the file tools; pass --base-path DIR",
                        dir.display()
                    ),
                })
            })?;
            options = options.set("base_path", text);
            used_base_path = true;
        }
        if web.given() && takes("allow_hosts") {
            options =
                options.set("allow_private", web.web_allow_private).set("allow_hosts", web.web_allow.clone());
            used_web = true;
        }
        registry.load_builtin(spec, options).map_err(CliError::usage)?;
    }
    if web.given() && !used_web {
        return Err(CliError::Usage(
            "--web-allow-private and --web-allow apply to fetch_url, but none of the --tools loads it".into(),
        ));
    }
    if matches!(base_path, BasePath::Given(_)) && !used_base_path {
        return Err(CliError::Usage("--base-path was given but none of the --tools uses a base path".into()));
    }
    Ok(())
}

/// Who approves a call that asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approvals {
    /// `--yes`: every call is approved; `on_terminal`: a person is at this terminal (a
    /// server's questions mid-call are asked there).
    All {
        /// A person is at this terminal.
        on_terminal: bool,
    },
    /// The person at this terminal, one question at a time.
    Terminal,
    /// No one: a plain run denies ASK calls, a durable run pauses on them (needs_input)
    /// until `harnessx approve` decides, `mcp serve` asks its client.
    Nobody,
}

impl Approvals {
    /// `--yes` first; else the terminal when `on_terminal`.
    pub(crate) fn of(yes: bool, on_terminal: bool) -> Self {
        match (yes, on_terminal) {
            (true, on_terminal) => Self::All { on_terminal },
            (false, true) => Self::Terminal,
            (false, false) => Self::Nobody,
        }
    }

    /// Whoever a person can answer on this terminal ([`terminal::interactive`]).
    pub(crate) fn here(yes: bool) -> Self {
        Self::of(yes, terminal::interactive())
    }
}

/// The permission manager of every command: ALLOW unless the flags say otherwise, and
/// `approvals` deciding what asks. Its rules (flags and files) are read here and added
/// once the tools are known ([`LoadedRules::install`]); `base` is the folder path rules
/// are relative to (the file tools' base path, else the current directory).
pub(crate) fn permissions(
    args: &PermissionArgs,
    approvals: Approvals,
    base: Option<&std::path::Path>,
) -> Result<(PermissionManager, LoadedRules), CliError> {
    let here = std::env::current_dir().ok();
    let base = base.or(here.as_deref());
    let loaded = rules::load(args, base)?;
    let manager =
        PermissionManager::new(args.default_permission.map(Into::into).unwrap_or(PermissionLevel::Allow));
    let manager = match approvals {
        Approvals::All { .. } => terminal::approve_all(manager),
        Approvals::Terminal => {
            let base = base.map(|b| b.canonicalize().unwrap_or_else(|_| b.to_path_buf()));
            terminal::prompt_on_terminal(
                manager,
                terminal::Always { base, project_file: rules::project_file_to_write() },
            )
        }
        Approvals::Nobody => manager,
    };
    Ok((manager, loaded))
}

/// Connects every server of `mcp` and registers its tools in `registry` (`tools`; an
/// agent connects its own, [`build_agent`]). A server that fails stops the ones already
/// connected.
pub(crate) async fn connect_mcp(
    mcp: &McpArgs,
    registry: &ToolRegistry,
) -> Result<Vec<McpConnection>, CliError> {
    let mut connections = Vec::new();
    for (server, options) in mcp.servers_with_options()? {
        match register_mcp(registry, server, options).await {
            Ok(connection) => connections.push(connection),
            Err(e) => {
                for connection in connections {
                    connection.close().await;
                }
                return Err(mcp_error(e));
            }
        }
    }
    Ok(connections)
}

/// An MCP server that cannot be started, or whose tool names clash, is a usage error;
/// one that started and failed the handshake or listing is a failure.
fn mcp_error(e: McpError) -> CliError {
    match e {
        McpError::Protocol { .. } | McpError::Auth { .. } => CliError::failed(e),
        McpError::Clash { server, name } => CliError::Usage(format!(
            "the MCP server `{server}` has a tool named \"{name}\", which is already registered: pick the built-in tools with --tools (--tools '' for none), or leave one of the servers out"
        )),
        _ => CliError::usage(e),
    }
}

/// The model a `--model` spec names, checked; made with [`ModelFlag::build`] once the
/// tools are loaded.
enum ModelFlag {
    Test,
    OpenAi(OpenAiModel),
    OpenAiResponses(OpenAiResponsesModel),
    Anthropic(AnthropicModel),
    Gemini(GeminiModel),
}

impl ModelFlag {
    fn parse(spec: &str, base_url: Option<&str>) -> Result<Self, CliError> {
        let (provider, name) = spec.split_once(':').unwrap_or((spec, ""));
        let name = name.trim();
        match provider {
            "test" if name.is_empty() => {
                if base_url.is_some() {
                    return Err(CliError::Usage(
                        "--base-url needs an openai:, openai-responses:, anthropic: or gemini: model".into(),
                    ));
                }
                Ok(Self::Test)
            }
            "openai" if !name.is_empty() => {
                let mut model = OpenAiModel::new(name);
                if let Some(url) = base_url {
                    model = model.base_url(url);
                }
                // What the server turns out not to take (and how the run goes around
                // it) is said once, on stderr.
                Ok(Self::OpenAi(model.on_warning(|line| errln!("harnessx: warning: {line}"))))
            }
            "openai-responses" if !name.is_empty() => {
                let mut model = OpenAiResponsesModel::new(name);
                if let Some(url) = base_url {
                    model = model.base_url(url);
                }
                Ok(Self::OpenAiResponses(model))
            }
            "anthropic" if !name.is_empty() => {
                let mut model = AnthropicModel::new(name);
                if let Some(url) = base_url {
                    model = model.base_url(url);
                }
                Ok(Self::Anthropic(model))
            }
            "gemini" if !name.is_empty() => {
                let mut model = GeminiModel::new(name);
                if let Some(url) = base_url {
                    model = model.base_url(url);
                }
                Ok(Self::Gemini(model))
            }
            _ => Err(CliError::Usage(format!(
                "unknown model \"{spec}\": use test, openai:MODEL, openai-responses:MODEL, anthropic:MODEL or gemini:MODEL (e.g. openai:gpt-4o)"
            ))),
        }
    }

    /// The model. `only_tool` is the one tool the flags loaded, if they loaded exactly
    /// one: an OpenAI-compatible server that refuses `--tool-choice required` gets it
    /// named instead (the planning tools are offered beside it).
    /// `base`: where the file tools act, if contained (the test model picks a name for
    /// them that nothing there has).
    fn build(self, only_tool: Option<String>, base: Option<&Path>) -> Arc<dyn Model> {
        match self {
            Self::Test => Arc::new(TestModel::exploring().scratch_name(free_name(base))),
            Self::OpenAi(model) => match only_tool {
                Some(tool) => Arc::new(model.required_fallback(tool)),
                None => Arc::new(model),
            },
            Self::OpenAiResponses(model) => Arc::new(model),
            Self::Anthropic(model) => Arc::new(model),
            Self::Gemini(model) => Arc::new(model),
        }
    }
}

/// A name the test model can give the tools that write without touching anything of the
/// user's: `a`, else `a-2`, `a-3`, ..., the first that neither the folder the file tools
/// act in (else the current one) nor `generate_file`'s download area has.
fn free_name(base: Option<&Path>) -> String {
    let folder = base.map(Path::to_path_buf).unwrap_or_default();
    let downloads = std::env::var_os(harnessx::builtin::fs::OUTPUT_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("output"));
    let taken = |name: &str| {
        [&folder, &downloads].iter().any(|dir| std::fs::symlink_metadata(dir.join(name)).is_ok())
    };
    (1..1000)
        .map(|n| if n == 1 { "a".to_owned() } else { format!("a-{n}") })
        .find(|name| !taken(name))
        .unwrap_or_else(|| format!("harnessx-test-model-{}", std::process::id()))
}

/// `MODEL` and `BASE_URL` of `MODEL[@BASE_URL]`, split at the last `@` followed by
/// `http://` or `https://`.
fn split_base_url(value: &str) -> (&str, Option<&str>) {
    let at = ["@http://", "@https://"].iter().filter_map(|p| value.rfind(p)).max();
    match at {
        Some(at) => (&value[..at], Some(&value[at + 1..])),
        None => (value, None),
    }
}

/// A `--fallback-model` value: `MODEL` or `MODEL@BASE_URL` (split at the last `@`
/// followed by `http://` or `https://`, so a model name may hold an `@`).
fn fallback_spec(value: &str) -> Result<(&str, Option<&str>), CliError> {
    let (spec, url) = split_base_url(value);
    if spec.trim().is_empty() || spec == "test" || spec.starts_with("test:") {
        return Err(CliError::Usage(format!(
            "--fallback-model {value}: give a provider's model, openai:MODEL, anthropic:MODEL or gemini:MODEL, optionally @BASE_URL"
        )));
    }
    Ok((spec, url))
}

/// `model`, or a [`FallbackModel`](harnessx::model::FallbackModel) over it and the
/// `--fallback-model`s, in order.
fn with_fallbacks(
    model: Arc<dyn Model>,
    fallbacks: &[String],
    only_tool: Option<String>,
) -> Result<Arc<dyn Model>, CliError> {
    if fallbacks.is_empty() {
        return Ok(model);
    }
    let mut models = vec![model];
    for value in fallbacks {
        let (spec, url) = fallback_spec(value)?;
        models.push(ModelFlag::parse(spec, url)?.build(only_tool.clone(), None));
    }
    let model = harnessx::model::FallbackModel::new(models).map_err(CliError::usage)?;
    Ok(Arc::new(model))
}

/// The agent the flags describe, all but its MCP servers: the model, the tools, the
/// permissions, skills and knowledge. Starts nothing.
fn agent_builder(
    args: &AgentArgs,
    stream: bool,
    approvals: Approvals,
    replayed: Option<Arc<dyn Model>>,
) -> Result<(AgentBuilder, LoadedRules), CliError> {
    let model = ModelFlag::parse(&args.model, args.base_url.as_deref())?;
    if matches!(model, ModelFlag::Test) && args.replay.is_none() {
        test_model_notice();
    }
    for spec in &args.fallback_models {
        let (spec, url) = fallback_spec(spec)?;
        ModelFlag::parse(spec, url)?;
    }
    // File tools are contained under the current directory (or the run's own folder)
    // unless --base-path says where.
    let base_path = match (&args.base_path, &args.folder) {
        (None, Some(folder)) => BasePath::Default(folder.clone()),
        (flag, _) => BasePath::contained(flag.clone())?,
    };
    let tools = Tools {
        specs: &args.tools,
        default_specs: &["filesystem"],
        base_path,
        sandbox: &args.sandbox,
        web: &args.web,
    };
    let registry = tools.registry()?;
    let only_tool = match registry.tool_names().as_slice() {
        [only] if !args.mcp.given() && args.skills.is_empty() && args.knowledge.is_empty() => {
            Some(only.clone())
        }
        _ => None,
    };
    let model = with_fallbacks(
        model.build(only_tool.clone(), tools.base_path.dir().map(PathBuf::as_path)),
        &args.fallback_models,
        only_tool,
    )?;
    let model = on_tape(args, model, replayed)?;
    // The whole text of a capped result goes where the file tools can read it.
    let result_dir = match tools.base_path.dir() {
        Some(dir) if registry.contains("read_file") => {
            Some(harnessx::ResultDir::new(dir.join(RESULTS_DIR)).shown_as(RESULTS_DIR))
        }
        _ => None,
    };
    if args.limits.max_cost_usd.is_some()
        && args.price.is_none()
        && harnessx::agent::ModelPrice::builtin(&model.model_name()).is_none()
    {
        return Err(CliError::Usage(format!(
            "--max-cost-usd needs the price of the model {:?}, which is not among the well-known ones: give it with --price IN,OUT[,CACHED_IN] (US dollars per million tokens)",
            model.model_name()
        )));
    }
    let (manager, rules) =
        permissions(&args.permissions, approvals, tools.base_path.dir().map(PathBuf::as_path))?;
    // With no one at a terminal, `ask_user` is a question a durable run pauses for (the
    // reply comes with `answer`, the page of `harnessx serve`, or its API).
    let questions = registry.contains(harnessx::builtin::ask_user::ASK_USER_TOOL)
        && !(approvals == Approvals::Terminal && terminal::interactive());
    let mut builder =
        Agent::builder().model_arc(model).registry(registry).permissions(manager).config(AgentConfig {
            tools: harnessx::ToolPolicy {
                max_result_chars: Some(args.max_result_chars),
                ..Default::default()
            },
            context: harnessx::agent::ContextPolicy {
                window: args.context_window,
                ..harnessx::agent::ContextPolicy::default()
            },
            result_dir,
            limits: args.run_limits(),
            price: args.price,
            stream,
            tool_choice: args.tool_choice.clone(),
            parallel_tool_calls: args.parallel_tool_calls,
            reasoning: args.reasoning(),
            ..AgentConfig::default()
        });
    if questions {
        builder = builder.question_tool(harnessx::builtin::ask_user::ASK_USER_TOOL);
    }
    if let Some(prompt) = system_prompt(args)? {
        builder = builder.system_prompt(prompt);
    }
    // Command hooks run in the working folder, in order: the files', then the flags'.
    let here = match &args.folder {
        Some(folder) => folder.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let base = tools.base_path.dir().cloned().unwrap_or_else(|| here.clone());
    for hook in args.hooks.all()? {
        builder =
            builder.hook_with_timeout(hook.spec.hook(here.clone(), &base, hook.timeout()), hook.timeout());
    }
    for dir in &args.skills {
        builder = builder.skills(skill_source(dir, &tools.base_path));
    }
    if !args.knowledge.is_empty() {
        let mut source = KnowledgeSource::dirs(&args.knowledge);
        if let Some(file) = &args.knowledge_index {
            source = source.index_file(file);
        }
        builder = builder.knowledge(source);
    }
    Ok((builder, rules))
}

/// `model` as `--record` and `--replay` have it: recorded as cassettes, or standing
/// aside for the cassettes that answer with no network (`replayed` when they are read
/// already, else read now).
fn on_tape(
    args: &AgentArgs,
    model: Arc<dyn Model>,
    replayed: Option<Arc<dyn Model>>,
) -> Result<Arc<dyn Model>, CliError> {
    match (&args.record, &args.replay) {
        (Some(_), Some(_)) => Err(CliError::Usage(
            "--record and --replay: give one (a replayed exchange is recorded already)".into(),
        )),
        (None, Some(_)) => match replayed {
            Some(replayed) => Ok(replayed),
            None => Ok(replay_model(args)?.expect("--replay is given")),
        },
        (Some(dir), None) => Ok(Arc::new(harnessx::testing::RecordingModel::shared(model, dir.clone()))),
        (None, None) => Ok(model),
    }
}

/// Says once per process that the test model answers (not when it is only replayed).
fn test_model_notice() {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| errln!("{TEST_MODEL_NOTICE}"));
}

/// The cassettes of `--replay DIR`, read once, as the model that answers from them
/// (`None` without the flag): `eval` shares them between the agents of its cases.
pub(crate) fn replay_model(args: &AgentArgs) -> Result<Option<Arc<dyn Model>>, CliError> {
    let Some(dir) = &args.replay else { return Ok(None) };
    let model = harnessx::testing::ReplayModel::from_dir(dir)
        .map_err(|e| CliError::Usage(format!("--replay {}: {e}", dir.display())))?;
    Ok(Some(Arc::new(model)))
}

/// The model that grades `eval`'s answers: `spec` (`MODEL[@BASE_URL]`, as
/// `--fallback-model`; default: `--model` with `--base-url`), recorded with `--record`,
/// or `replayed` (the cassettes of `--replay`, which hold its exchanges too).
pub(crate) fn judge_model(
    args: &AgentArgs,
    spec: Option<&str>,
    replayed: Option<Arc<dyn Model>>,
) -> Result<Arc<dyn Model>, CliError> {
    let (spec, url) = match spec {
        Some(value) => split_base_url(value),
        None => (args.model.as_str(), args.base_url.as_deref()),
    };
    let model = ModelFlag::parse(spec, url)
        .map_err(|e| match e {
            CliError::Usage(m) => CliError::Usage(format!("--judge-model: {m}")),
            e => e,
        })?
        .build(None, None);
    on_tape(args, model, replayed)
}

/// The agent the flags describe, its MCP servers (`--mcp`, `--mcp-http`) connected:
/// close it with `Agent::close` to stop them. `stream`: model responses are streamed;
/// `approvals`: who approves what asks (never the terminal for a worker, whose runs wait
/// for `harnessx approve` instead).
pub(crate) async fn build_agent(
    args: &AgentArgs,
    stream: bool,
    approvals: Approvals,
) -> Result<Agent, CliError> {
    build_agent_with(args, stream, approvals, None).await
}

/// [`build_agent`], answered by `replayed` (from [`replay_model`]) under `--replay`
/// instead of reading the cassettes again.
pub(crate) async fn build_agent_with(
    args: &AgentArgs,
    stream: bool,
    approvals: Approvals,
    replayed: Option<Arc<dyn Model>>,
) -> Result<Agent, CliError> {
    let (mut builder, rules) = agent_builder(args, stream, approvals, replayed)?;
    // A server's questions mid-call go to the person at this terminal; with nobody here
    // (a worker, `serve`, a pipe), a durable run pauses for them, a plain one declines.
    let ask_here = match approvals {
        Approvals::Terminal | Approvals::All { on_terminal: true } => terminal::interactive(),
        Approvals::All { on_terminal: false } | Approvals::Nobody => false,
    };
    for (server, mut options) in args.mcp.servers_with_options()? {
        if ask_here {
            options.elicit = Some(crate::elicit::on_terminal());
        }
        builder = builder.mcp_with(server, options);
    }
    let agent = builder.connect().await.map_err(|e| match e {
        AgentError::Mcp(e) => mcp_error(e),
        e => CliError::usage(e),
    })?;
    // `--tool-choice NAME` names a tool the flags loaded, or nothing runs.
    if let Err(e) = agent.check_tool_choice() {
        agent.close().await;
        return Err(CliError::usage(e));
    }
    // The rules of the flags and files, now that every tool (MCP servers' too) is known.
    let manager = agent.permissions();
    if let Err(e) = rules.install(manager, agent.tools()) {
        agent.close().await;
        return Err(e);
    }
    // Tools that may change things (destructive, or not read-only, by their annotations;
    // MCP servers' tools too, read-only only when --mcp-trust trusts the server's word)
    // ask first, unless a rule names them alone (rules on their arguments come first,
    // and the rest of their calls ask). The manager is shared, so this holds for the
    // agent's.
    for def in agent.tools().list_tools() {
        if def.annotations.may_modify()
            && manager.override_for(&def.name).is_none()
            && !rules.names(&def.name)
        {
            manager.set_override(def.name, PermissionLevel::Ask);
        }
    }
    Ok(agent)
}

/// What `run --restate` asks of the cluster's workers: the configuration
/// ([`WorkerConfig`]) of the agent its flags describe, when any agent flag is given (none:
/// the run takes whatever the workers have). Computed from the flags alone: nothing is
/// started, no model is asked.
///
/// The configuration is one digest over every tool's schema, so with `--mcp` or
/// `--mcp-http` it cannot be known without starting those servers and listing their
/// tools; then no expectation is sent (the flags are still checked), and the run takes
/// the workers' configuration, which holds for the rest of the run as for any run.
pub(crate) fn expectation(args: &AgentArgs) -> Result<Option<WorkerConfig>, CliError> {
    // The price goes with the run (as its limits do), not into what the workers must be.
    if args.given().iter().all(|g| g.name == "--price") {
        return Ok(None);
    }
    checked(args, None)
}

/// The configuration of the agent the flags describe, checked as [`expectation`] checks
/// it (tools, rules, tool choice; MCP servers' flags only read), starting nothing:
/// `eval` checks each case's agent before any case runs.
pub(crate) fn checked(
    args: &AgentArgs,
    replayed: Option<Arc<dyn Model>>,
) -> Result<Option<WorkerConfig>, CliError> {
    let (builder, rules) = agent_builder(args, false, Approvals::Nobody, replayed)?;
    // Checked, not started.
    let servers = args.mcp.servers()?;
    let agent = builder.build().map_err(CliError::usage)?;
    if !servers.is_empty() {
        return Ok(None);
    }
    rules.install(agent.permissions(), agent.tools())?;
    agent.check_tool_choice().map_err(CliError::usage)?;
    Ok(Some(WorkerConfig::of(&agent)))
}

/// The system prompt `--system TEXT` or `--system-file FILE` gives (or a configuration
/// file's `system` / `system_file`, which arrive as those flags). A file is read each
/// time the agent is built, so `resume` and every worker read it again: the journal's
/// fingerprint covers the prompt, and a run resumed with another one is refused.
fn system_prompt(args: &AgentArgs) -> Result<Option<String>, CliError> {
    match (&args.system, &args.system_file) {
        (Some(text), _) => Ok(Some(text.clone())),
        (None, Some(file)) => crate::config::file::read_capped(file).map(Some).map_err(|e| match e {
            CliError::Usage(m) => CliError::Usage(format!("--system-file {m}")),
            other => other,
        }),
        (None, None) => Ok(None),
    }
}

/// The skills under `dir`, their files listed to the model by the path the file tools
/// know them by: relative to the base path when the folder is under it.
fn skill_source(dir: &std::path::Path, base_path: &BasePath) -> SkillSource {
    let source = SkillSource::dir(dir);
    let (BasePath::Given(base) | BasePath::Default(base)) = base_path else { return source };
    match (dir.canonicalize(), base.canonicalize()) {
        (Ok(dir), Ok(base)) => match dir.strip_prefix(&base) {
            Ok(under) => source.shown_as(under.to_string_lossy()),
            Err(_) => source,
        },
        _ => source,
    }
}
