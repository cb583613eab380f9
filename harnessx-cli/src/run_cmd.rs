//! `harnessx run PROMPT`: an agent over a model, with tools, in the terminal; with
//! `--durable FILE` the same agent is driven by `durable_cmd` instead.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentError, AgentEvent, KnowledgeSource, SkillSource, ToolChoice};
use harnessx::model::{AnthropicModel, Model, OpenAiModel, TestModel};
use harnessx::{PermissionLevel, ToolRegistry};

use crate::CliError;
use crate::approve;
use crate::setup::{BasePath, McpArgs, PermissionArgs, SandboxArgs, WebArgs, load_tools, mcp_error};
use crate::{durable_cmd, restate_cmd};

/// Said on stderr when `run` uses the built-in test model, so nobody mistakes its canned
/// answers for a real model's.
pub(crate) const TEST_MODEL_NOTICE: &str = "harnessx: using the built-in test model (no network): it calls each tool once and reports what came back. Pick a real model with --model openai:MODEL or --model anthropic:MODEL (keys from OPENAI_API_KEY / ANTHROPIC_API_KEY), or --base-url URL --model openai:MODEL for a local OpenAI-compatible server.";

const DEFAULT_MAX_TURNS: u32 = 50;

/// The flags that make the agent. `run` and `resume` take them alike: a durable run is
/// resumed by an agent built from the same flags (the journal refuses other tools or
/// another model).
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// `test` (no network, the default), `openai:MODEL` or `anthropic:MODEL`.
    #[arg(long, default_value = "test", value_name = "MODEL")]
    model: String,
    /// Base URL of an OpenAI-compatible or Anthropic API (e.g. a local vLLM, llama.cpp or Ollama server).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Built-in tools or bundles, comma-separated (default: filesystem).
    #[arg(long, value_delimiter = ',', value_name = "SPEC")]
    tools: Vec<String>,
    /// Contain the filesystem tools under this directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    base_path: Option<PathBuf>,
    /// Most model requests in the run.
    #[arg(long, default_value_t = DEFAULT_MAX_TURNS, value_name = "N")]
    max_turns: u32,
    /// Whether the model must call a tool: `auto` (it decides), `required` (it must call
    /// one), `none` (it must not) or a tool's name (that tool). After a turn with tool
    /// calls the run goes back to `auto`, so `required` cannot loop. Small local models
    /// often call tools only when required.
    #[arg(long, default_value_t = ToolChoice::Auto, value_name = "auto|required|none|NAME")]
    tool_choice: ToolChoice,
    /// `false` asks the model for at most one tool call per response, `true` allows
    /// several (default: the provider's own, which allows them).
    #[arg(long, value_name = "true|false", value_parser = clap::value_parser!(bool))]
    parallel_tool_calls: Option<bool>,
    /// A folder of skills (each a folder with a `SKILL.md`), repeatable: the agent gets
    /// the `Skill` tool and a list of the skills in its system prompt.
    #[arg(long, value_name = "DIR")]
    skills: Vec<PathBuf>,
    /// A folder of knowledge concepts (Markdown files with `id` and `title` front
    /// matter), repeatable: the agent gets `search_concepts`, `read_concept` and
    /// `get_neighbors`.
    #[arg(long, value_name = "DIR")]
    knowledge: Vec<PathBuf>,
    /// Keep the knowledge index in this SQLite file (created if missing), so the next
    /// run re-reads only the concept files that changed.
    #[arg(long, value_name = "FILE", requires = "knowledge")]
    knowledge_index: Option<PathBuf>,
    /// Approve every tool call that would otherwise ask.
    #[arg(long, short = 'y')]
    yes: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    web: WebArgs,
    #[command(flatten)]
    permissions: PermissionArgs,
    #[command(flatten)]
    mcp: McpArgs,
}

impl AgentArgs {
    /// These flags as a command line gives them, for the `resume` command the CLI
    /// prints: it must build the same agent. Defaults are left out.
    pub(crate) fn to_flags(&self) -> Vec<String> {
        let mut flags: Vec<String> = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            flags.push(name.to_owned());
            flags.extend(value);
        };
        if self.model != "test" {
            flag("--model", Some(self.model.clone()));
        }
        if let Some(url) = &self.base_url {
            flag("--base-url", Some(url.clone()));
        }
        if !self.tools.is_empty() {
            flag("--tools", Some(self.tools.join(",")));
        }
        if let Some(dir) = &self.base_path {
            flag("--base-path", Some(dir.display().to_string()));
        }
        if self.max_turns != DEFAULT_MAX_TURNS {
            flag("--max-turns", Some(self.max_turns.to_string()));
        }
        if !self.tool_choice.is_auto() {
            flag("--tool-choice", Some(self.tool_choice.to_string()));
        }
        if let Some(parallel) = self.parallel_tool_calls {
            flag("--parallel-tool-calls", Some(parallel.to_string()));
        }
        for dir in &self.skills {
            flag("--skills", Some(dir.display().to_string()));
        }
        for dir in &self.knowledge {
            flag("--knowledge", Some(dir.display().to_string()));
        }
        if let Some(file) = &self.knowledge_index {
            flag("--knowledge-index", Some(file.display().to_string()));
        }
        if self.yes {
            flag("--yes", None);
        }
        if let Some(kind) = self.sandbox.sandbox {
            flag("--sandbox", Some(value_name(kind)));
        }
        if self.sandbox.sandbox_network {
            flag("--sandbox-network", None);
        }
        if self.web.web_allow_private {
            flag("--web-allow-private", None);
        }
        for host in &self.web.web_allow {
            flag("--web-allow", Some(host.clone()));
        }
        if let Some(level) = self.permissions.default_permission {
            flag("--default-permission", Some(value_name(level)));
        }
        for name in &self.permissions.allow {
            flag("--allow", Some(name.clone()));
        }
        for name in &self.permissions.deny {
            flag("--deny", Some(name.clone()));
        }
        flags.extend(self.mcp.to_flags());
        flags
    }
}

/// A flag value as clap spells it.
fn value_name(value: impl ValueEnum) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What to ask the agent.
    prompt: String,
    #[command(flatten)]
    agent: AgentArgs,
    /// Print one JSON event per line instead of text (with --durable: one JSON object
    /// with run_id, status, output and needs_input).
    #[arg(long)]
    json: bool,
    /// Make one complete (non-streaming) model request per turn (a durable run always
    /// does).
    #[arg(long)]
    no_stream: bool,
    /// Journal the run in this SQLite file (created if missing; its folder must exist), so
    /// it can be resumed after a crash or a pause: see `harnessx resume`. Without a
    /// terminal and without --yes, a call that asks pauses the run (exit status 3)
    /// instead of being denied.
    #[arg(long, value_name = "FILE")]
    durable: Option<PathBuf>,
    /// Start the run on a Restate cluster, at its ingress URL (e.g. http://127.0.0.1:8080),
    /// and follow it. The cluster's workers (`harnessx worker`) run it with their own
    /// agent; agent flags given here (--tools, --model, ...) only say what they must
    /// have: a run that lands on workers with other tools, model or system prompt fails.
    #[arg(long, value_name = "URL", conflicts_with = "durable")]
    restate: Option<String>,
    /// With --restate: the cluster's admin API, asked why a run is stuck (a worker with
    /// other tools, say) while it follows the run.
    #[arg(long, value_name = "URL", requires = "restate")]
    restate_admin: Option<String>,
    /// The durable run's id (default: run-MILLIS-PID). Needs --durable or --restate.
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
}

/// The model a `--model` spec names, checked; made with [`ModelFlag::build`] once the
/// tools are loaded.
enum ModelFlag {
    Test,
    OpenAi(OpenAiModel),
    Anthropic(AnthropicModel),
}

impl ModelFlag {
    fn parse(spec: &str, base_url: Option<&str>) -> Result<Self, CliError> {
        let (provider, name) = spec.split_once(':').unwrap_or((spec, ""));
        let name = name.trim();
        match provider {
            "test" if name.is_empty() => {
                if base_url.is_some() {
                    return Err(CliError::Usage("--base-url needs an openai: or anthropic: model".into()));
                }
                errln!("{TEST_MODEL_NOTICE}");
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
            "anthropic" if !name.is_empty() => {
                let mut model = AnthropicModel::new(name);
                if let Some(url) = base_url {
                    model = model.base_url(url);
                }
                Ok(Self::Anthropic(model))
            }
            _ => Err(CliError::Usage(format!(
                "unknown model \"{spec}\": use test, openai:MODEL or anthropic:MODEL (e.g. openai:gpt-4o)"
            ))),
        }
    }

    /// The model. `only_tool` is the one tool the flags loaded, if they loaded exactly
    /// one: an OpenAI-compatible server that refuses `--tool-choice required` gets it
    /// named instead (the planning tools are offered beside it).
    fn build(self, only_tool: Option<String>) -> Arc<dyn Model> {
        match self {
            Self::Test => Arc::new(TestModel::new()),
            Self::OpenAi(model) => match only_tool {
                Some(tool) => Arc::new(model.required_fallback(tool)),
                None => Arc::new(model),
            },
            Self::Anthropic(model) => Arc::new(model),
        }
    }
}

/// The agent the flags describe, its MCP servers (`--mcp`, `--mcp-http`) connected:
/// close it with `Agent::close` to stop them.
pub(crate) async fn build_agent(args: &AgentArgs, stream: bool) -> Result<Agent, CliError> {
    build_agent_for(args, stream, approve::interactive()).await
}

/// [`build_agent`], with ASK calls asked on the terminal only when `on_terminal` (never
/// for a worker, whose runs wait for `harnessx approve` instead).
pub(crate) async fn build_agent_for(
    args: &AgentArgs,
    stream: bool,
    on_terminal: bool,
) -> Result<Agent, CliError> {
    let model = ModelFlag::parse(&args.model, args.base_url.as_deref())?;
    let registry = ToolRegistry::new();
    // File tools are contained under the current directory unless --base-path says where.
    let base_path = BasePath::from_flag(args.base_path.clone(), || std::env::current_dir().ok());
    if let BasePath::Host = base_path {
        return Err(CliError::Usage(
            "the current directory cannot be read, so it cannot contain the file tools; pass --base-path DIR"
                .into(),
        ));
    }
    let took_base_path = args.sandbox.bind(&registry, &base_path)?;
    load_tools(&registry, &args.tools, &["filesystem"], &base_path, took_base_path, &args.web)?;
    let only_tool = match registry.tool_names().as_slice() {
        [only] if !args.mcp.given() && args.skills.is_empty() && args.knowledge.is_empty() => {
            Some(only.clone())
        }
        _ => None,
    };
    let model = model.build(only_tool);
    let mut manager = args.permissions.manager(PermissionLevel::Allow);
    manager = if args.yes {
        approve::approve_all(manager)
    } else if on_terminal {
        approve::prompt_on_terminal(manager)
    } else {
        // No one to approve, so no callback: a plain run denies ASK calls, a durable run
        // pauses on them (needs_input) until `harnessx approve` decides.
        manager
    };
    let mut builder =
        Agent::builder().model_arc(model).registry(registry).permissions(manager).config(AgentConfig {
            max_turns: args.max_turns,
            stream,
            tool_choice: args.tool_choice.clone(),
            parallel_tool_calls: args.parallel_tool_calls,
            ..AgentConfig::default()
        });
    for dir in &args.skills {
        builder = builder.skills(skill_source(dir, &base_path));
    }
    if !args.knowledge.is_empty() {
        let mut source = KnowledgeSource::dirs(&args.knowledge);
        if let Some(file) = &args.knowledge_index {
            source = source.index_file(file);
        }
        builder = builder.knowledge(source);
    }
    for server in args.mcp.servers()? {
        builder = builder.mcp_with(server, args.mcp.options());
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
    // Tools that may change things (destructive, or not read-only, by their annotations;
    // MCP servers' tools too, read-only only when --mcp-trust trusts the server's word)
    // ask first, unless a flag named them. The manager is shared, so this holds for the
    // agent's.
    let manager = agent.permissions();
    for def in agent.tools().list_tools() {
        if def.annotations.may_modify() && manager.override_for(&def.name).is_none() {
            manager.set_override(def.name, PermissionLevel::Ask);
        }
    }
    Ok(agent)
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

pub(crate) async fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    if let Some(ingress) = &args.restate {
        let cluster = restate_cmd::Cluster::new(
            ingress,
            args.restate_admin.as_deref(),
            Some(&args.agent),
            restate_cmd::Flags::Expected,
        )
        .await?;
        return cluster.start(args.run_id, &args.prompt, args.json).await;
    }
    if args.run_id.is_some() && args.durable.is_none() {
        return Err(CliError::Usage("--run-id needs --durable FILE or --restate URL".into()));
    }
    if let Some(journal) = &args.durable {
        let agent = build_agent(&args.agent, true).await?;
        return durable_cmd::start(agent, &args.agent, journal, args.run_id, &args.prompt, args.json).await;
    }
    let agent = build_agent(&args.agent, !args.no_stream).await?;
    let mut events = agent.run_stream(args.prompt);
    let mut failed = false;
    let mut printed_text = false;
    let mut progress = approve::Progress::default();
    let mut stdout = std::io::stdout();
    while let Some(event) = events.next().await {
        if matches!(event, AgentEvent::Error { .. }) {
            failed = true;
        }
        if args.json {
            let line = serde_json::to_string(&event).map_err(CliError::failed)?;
            let _ = writeln!(stdout, "{line}");
            continue;
        }
        match event {
            AgentEvent::TextDelta { text } => {
                printed_text = true;
                let _ = write!(stdout, "{text}");
                let _ = stdout.flush();
            }
            AgentEvent::ToolCallStart { name, arguments, .. } => {
                progress.line(format!("→ {name} {}", one_line(&arguments, 120)));
            }
            AgentEvent::ToolCallEnd { name, is_error, content, .. } => {
                let mark = if is_error { "✗" } else { "✓" };
                progress.line(format!("{mark} {name}: {}", one_line(&content, 120)));
            }
            AgentEvent::RunEnd { output, .. } => {
                progress.flush();
                // Without streaming, the answer arrives whole here.
                if !printed_text {
                    let _ = write!(stdout, "{output}");
                }
                let _ = writeln!(stdout);
            }
            AgentEvent::ModelRequest { .. } => printed_text = false,
            AgentEvent::Error { message } => {
                progress.flush();
                errln!("harnessx: the run failed: {message}");
            }
            _ => {}
        }
    }
    agent.close().await;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// `s` on one line, cut to `max` characters.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { flat.chars().take(max).collect::<String>() + "…" } else { flat }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        agent: AgentArgs,
    }

    fn parse(flags: &[&str]) -> AgentArgs {
        Flags::try_parse_from(std::iter::once("harnessx").chain(flags.iter().copied())).unwrap().agent
    }

    #[test]
    fn to_flags_gives_back_the_same_agent_flags() {
        let every = [
            "--model",
            "openai:gpt-4o",
            "--base-url",
            "http://localhost:1",
            "--tools",
            "read_file,write_file",
            "--base-path",
            "some dir",
            "--max-turns",
            "7",
            "--tool-choice",
            "read_file",
            "--parallel-tool-calls",
            "false",
            "--skills",
            "skills",
            "--skills",
            "more skills",
            "--knowledge",
            "concepts",
            "--knowledge-index",
            "index.db",
            "--yes",
            "--sandbox",
            "bubblewrap",
            "--sandbox-network",
            "--web-allow-private",
            "--web-allow",
            "10.0.0.0/8",
            "--web-allow",
            "intra",
            "--default-permission",
            "ask",
            "--allow",
            "grep",
            "--deny",
            "delete",
            "--mcp",
            "node 'my server.js'",
            "--mcp-http",
            "http://127.0.0.1:1/mcp",
            "--mcp-trust",
        ];
        for flags in [&every[..], &[], &["--tools", "write_file"], &["--tool-choice", "required"]] {
            let args = parse(flags);
            let again = args.to_flags();
            let again: Vec<&str> = again.iter().map(String::as_str).collect();
            assert_eq!(format!("{:?}", parse(&again)), format!("{args:?}"), "{flags:?} -> {again:?}");
        }
        assert!(parse(&[]).to_flags().is_empty(), "defaults are left out");
    }
}
