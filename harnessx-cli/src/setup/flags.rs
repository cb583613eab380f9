//! The flags that say what a command's tools and agent are: `--tools`, `--base-path`,
//! the sandbox, web, permission and MCP flags, and the agent flags of `run`, `resume`
//! and `worker`. Only what the flags say; [`super`] builds from them.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use harnessx::PermissionLevel;
use harnessx::agent::ToolChoice;
use harnessx::agent::budget::{ModelPrice, RunLimits};
use harnessx::agent::model::{ReasoningConfig, ReasoningEffort};
use harnessx::mcp::{McpOptions, McpServer};

use crate::error::CliError;

/// The default of `--max-turns`.
pub(crate) const DEFAULT_MAX_TURNS: u32 = 50;

/// The default of `--max-result-chars`.
pub(crate) const DEFAULT_MAX_RESULT_CHARS: usize = harnessx::DEFAULT_MAX_RESULT_CHARS;

/// The smallest `--context-window` taken: below it no request with a system prompt and
/// tools fits.
pub(crate) const MIN_CONTEXT_WINDOW: u64 = 256;

/// A `--context-window` value (or a file's `context_window`), checked.
pub(crate) fn check_window(tokens: u64) -> Result<u64, CliError> {
    if tokens < MIN_CONTEXT_WINDOW {
        return Err(CliError::Usage(format!(
            "--context-window {tokens}: give the model's window in tokens, at least {MIN_CONTEXT_WINDOW} (e.g. 8192, 128000)"
        )));
    }
    Ok(tokens)
}

/// A file's `reasoning_budget`, checked as `--reasoning-budget` is.
pub(crate) fn check_reasoning_budget(tokens: u32) -> Result<u32, CliError> {
    if tokens == 0 {
        return Err(CliError::Usage(
            "reasoning_budget 0: give the most tokens to spend thinking, at least 1 (Anthropic takes 1024 and more; a smaller budget is raised to 1024)".into(),
        ));
    }
    Ok(tokens)
}

fn parse_window(text: &str) -> Result<u64, String> {
    let tokens: u64 =
        text.trim().parse().map_err(|_| format!("{text:?} is not a number of tokens (e.g. 8192)"))?;
    if tokens < MIN_CONTEXT_WINDOW {
        return Err(format!(
            "give the model's window in tokens, at least {MIN_CONTEXT_WINDOW} (e.g. 8192, 128000)"
        ));
    }
    Ok(tokens)
}

/// Where file tools may act.
#[derive(Debug, Clone, Args)]
pub(crate) struct ToolArgs {
    /// Built-in tools or bundles to load, comma-separated (e.g. `read_file,grep` or `filesystem`).
    #[arg(long, value_delimiter = ',', value_name = "SPEC")]
    pub(crate) tools: Vec<String>,
    /// Contain the filesystem tools under this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) base_path: Option<PathBuf>,
}

/// Where `run_bash` runs.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SandboxArgs {
    /// Where run_bash runs: `local` (host processes under your user; the default) or
    /// `bubblewrap` (Linux namespaces: read-only system, no network, a writable workspace
    /// that is --base-path or else the current directory, which the file tools then act on).
    #[arg(long, value_enum, value_name = "KIND")]
    pub(crate) sandbox: Option<SandboxKind>,
    /// With `--sandbox bubblewrap`: let commands use the network.
    #[arg(long)]
    pub(crate) sandbox_network: bool,
}

/// A sandbox as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SandboxKind {
    Local,
    Bubblewrap,
}

/// What `fetch_url` may reach besides public addresses (applies when the web bundle is
/// loaded).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct WebArgs {
    /// Let fetch_url reach every address, loopback and private ones included (by default
    /// it reaches public addresses only).
    #[arg(long)]
    pub(crate) web_allow_private: bool,
    /// Let fetch_url reach this host (`intranet.example`, `.example` for subdomains too) or
    /// address range (`10.0.0.0/8`, `127.0.0.1`) even when it is not public. Repeatable.
    #[arg(long = "web-allow", value_name = "HOST_OR_CIDR")]
    pub(crate) web_allow: Vec<String>,
}

impl WebArgs {
    /// Whether any `--web-*` flag is given.
    pub(crate) fn given(&self) -> bool {
        self.web_allow_private || !self.web_allow.is_empty()
    }
}

/// A reasoning effort as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

impl From<Effort> for ReasoningEffort {
    fn from(e: Effort) -> Self {
        match e {
            Effort::Minimal => ReasoningEffort::Minimal,
            Effort::Low => ReasoningEffort::Low,
            Effort::Medium => ReasoningEffort::Medium,
            Effort::High => ReasoningEffort::High,
        }
    }
}

impl From<ReasoningEffort> for Effort {
    fn from(e: ReasoningEffort) -> Self {
        match e {
            ReasoningEffort::Minimal => Effort::Minimal,
            ReasoningEffort::Low => Effort::Low,
            ReasoningEffort::Medium => Effort::Medium,
            ReasoningEffort::High => Effort::High,
        }
    }
}

/// A permission level as a flag value.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Level {
    Allow,
    Ask,
    Deny,
}

impl From<Level> for PermissionLevel {
    fn from(l: Level) -> Self {
        match l {
            Level::Allow => PermissionLevel::Allow,
            Level::Ask => PermissionLevel::Ask,
            Level::Deny => PermissionLevel::Deny,
        }
    }
}

/// Permission flags. A RULE is `NAME` (every call of the tool) or `NAME(PATTERN)`:
/// `run_bash(git status *)` (a command's words; `run_bash(ls*)` a character prefix,
/// `run_bash(ls)` exact, as in Claude Code) or
/// `write_file(path=src/**)` (a glob on an argument). Deny rules win over ask rules, ask
/// over allow; see docs/permissions.md.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PermissionArgs {
    /// The level of tools without their own permission.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub(crate) default_permission: Option<Level>,
    /// Run the calls this rule matches without asking (`NAME` or `NAME(PATTERN)`;
    /// repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub(crate) allow: Vec<String>,
    /// Ask before the calls this rule matches, every time (repeatable).
    #[arg(long = "ask", value_name = "RULE")]
    pub(crate) ask: Vec<String>,
    /// Refuse the calls this rule matches (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub(crate) deny: Vec<String>,
    /// Read `allow`, `ask` and `deny` lists of rules from this TOML file (besides the
    /// project's .harnessx/permissions.toml and the user's, which are always read).
    #[arg(long = "permissions", value_name = "FILE")]
    pub(crate) permissions_file: Option<PathBuf>,
    /// The `[permissions]` lists of the configuration files: where each list is (`FILE:LINE`),
    /// its level and its rules. Read like the project's rules file: rules on tools this
    /// invocation did not load are left out. No flag.
    #[arg(skip)]
    pub(crate) configured: Vec<(String, PermissionLevel, Vec<String>)>,
}

/// Tools from MCP servers (`run`, `resume`, `worker`, `tools list`, `tools call`).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct McpArgs {
    /// Take the tools of this MCP server, started as a command line split as a shell
    /// would (`--mcp 'node server.js stdio'`; `env NAME=VALUE ...` sets its environment).
    /// Repeatable. Tool names must not clash with other tools.
    #[arg(long = "mcp", value_name = "COMMAND")]
    pub(crate) mcp: Vec<String>,
    /// Take the tools of the MCP server at this streamable HTTP URL. Repeatable.
    #[arg(long = "mcp-http", value_name = "URL")]
    pub(crate) mcp_http: Vec<String>,
    /// Trust these servers' descriptions of their tools: a tool claiming `readOnlyHint`
    /// then runs concurrently (and `run` does not ask before it), one claiming
    /// `idempotentHint` is re-run after a crash. Without it only the hints that make a
    /// call more careful (`destructiveHint`) apply, as MCP says of untrusted servers.
    #[arg(long = "mcp-trust")]
    pub(crate) mcp_trust: bool,
    /// Servers from a configuration file's `[mcp_servers]` (or `[mcpServers]`) table, by
    /// name; no flag (`--mcp` and `--mcp-http` replace them).
    #[arg(skip)]
    pub(crate) configured: Vec<(String, McpServer)>,
}

impl McpArgs {
    /// Whether any server is given.
    pub(crate) fn given(&self) -> bool {
        !self.mcp.is_empty() || !self.mcp_http.is_empty() || !self.configured.is_empty()
    }

    /// The servers, in the order given (stdio ones first; a configuration file's first,
    /// by name). Nothing is started.
    pub(crate) fn servers(&self) -> Result<Vec<McpServer>, CliError> {
        if self.mcp_trust && !self.given() {
            return Err(CliError::Usage(
                "--mcp-trust applies to the servers of --mcp and --mcp-http, and none is given".into(),
            ));
        }
        let mut servers: Vec<McpServer> = self.configured.iter().map(|(_, server)| server.clone()).collect();
        for line in &self.mcp {
            let words = shlex::split(line).ok_or_else(|| {
                CliError::Usage(format!("--mcp {line:?}: unbalanced quotes or a trailing backslash"))
            })?;
            let Some((command, args)) = words.split_first() else {
                return Err(CliError::Usage(
                    "--mcp needs a command line, e.g. --mcp 'node server.js'".into(),
                ));
            };
            servers.push(McpServer::stdio(command.clone(), args.to_vec(), Vec::<(String, String)>::new()));
        }
        for url in &self.mcp_http {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(CliError::Usage(format!("--mcp-http {url:?}: give an http:// or https:// URL")));
            }
            servers.push(McpServer::http(url.clone(), Vec::<(String, String)>::new()));
        }
        Ok(servers)
    }

    /// How each server's tools are registered: trusted with `--mcp-trust`.
    pub(crate) fn options(&self) -> McpOptions {
        McpOptions { trust_hints: self.mcp_trust, ..McpOptions::default() }
    }
}

/// The flags that make the agent. `run`, `resume` and `worker` take them alike: a
/// durable run is resumed by an agent built from the same flags (the journal refuses
/// other tools or another model), and every worker of a cluster has the same.
#[derive(Debug, Args)]
pub(crate) struct AgentArgs {
    /// `test` (no network, the default), `openai:MODEL`, `openai-responses:MODEL` (OpenAI's
    /// Responses API), `anthropic:MODEL` or `gemini:MODEL`.
    #[arg(long, default_value = "test", value_name = "MODEL")]
    pub(crate) model: String,
    /// Base URL of an OpenAI-compatible, OpenAI Responses, Anthropic or Gemini API (e.g. a local vLLM, llama.cpp or Ollama server).
    #[arg(long, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// A model to ask when the one before it is down (connection failure, HTTP 5xx, 429
    /// or 529, its retries spent); repeatable, tried in order after --model. `@URL` gives
    /// its base URL (e.g. `openai:llama@http://127.0.0.1:8080/v1`).
    #[arg(long = "fallback-model", value_name = "MODEL[@BASE_URL]")]
    pub(crate) fallback_models: Vec<String>,
    /// Built-in tools or bundles, comma-separated (default: filesystem).
    #[arg(long, value_delimiter = ',', value_name = "SPEC")]
    pub(crate) tools: Vec<String>,
    /// Contain the filesystem tools under this directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) base_path: Option<PathBuf>,
    /// Most model requests in the run. Reaching it ends the run with exit status 4 (a
    /// durable run pauses: resume it with a higher --max-turns).
    #[arg(long, default_value_t = DEFAULT_MAX_TURNS, value_name = "N")]
    pub(crate) max_turns: u32,
    /// The most characters of a tool result the model gets (every tool: built-in, MCP or
    /// your own). A longer result keeps its head and tail around a line saying how much
    /// was cut; with the file tools, the whole text is saved under
    /// <base path>/.harnessx/results/ and that line names the file.
    #[arg(long, default_value_t = DEFAULT_MAX_RESULT_CHARS, value_name = "N")]
    pub(crate) max_result_chars: usize,
    /// The model's context window in tokens (default: known for OpenAI and Anthropic
    /// models; otherwise learned from the server's first context-length error). Older
    /// turns are compacted before a request would pass 80% of it.
    #[arg(long, value_name = "N", value_parser = parse_window)]
    pub(crate) context_window: Option<u64>,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    /// The model's price in US dollars per million tokens: input, output and, optionally,
    /// input read from the prompt cache (default: the built-in price of well-known
    /// models, else none). Cache writes are priced as input.
    #[arg(long, value_name = "IN,OUT[,CACHED_IN]")]
    pub(crate) price: Option<ModelPrice>,
    /// Whether the model must call a tool: `auto` (it decides), `required` (it must call
    /// one), `none` (it must not) or a tool's name (that tool). After a turn with tool
    /// calls the run goes back to `auto`, so `required` cannot loop. Small local models
    /// often call tools only when required.
    #[arg(long, default_value_t = ToolChoice::Auto, value_name = "auto|required|none|NAME")]
    pub(crate) tool_choice: ToolChoice,
    /// `false` asks the model for at most one tool call per response, `true` allows
    /// several (default: the provider's own, which allows them).
    #[arg(long, value_name = "true|false", value_parser = clap::value_parser!(bool))]
    pub(crate) parallel_tool_calls: Option<bool>,
    /// How hard a reasoning model thinks before it answers: sent as OpenAI's
    /// `reasoning_effort`; for Anthropic it stands for a thinking budget (minimal 1024,
    /// low 2048, medium 8192, high 24576 tokens) unless --reasoning-budget gives one.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub(crate) reasoning_effort: Option<Effort>,
    /// The most tokens a reasoning model may spend thinking: Anthropic's extended
    /// thinking budget (at least 1024; the output limit is raised above it when needed);
    /// for OpenAI it stands for an effort (up to 2048 low, up to 8192 medium, above high)
    /// unless --reasoning-effort gives one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) reasoning_budget: Option<u32>,
    /// A folder of skills (each a folder with a `SKILL.md`), repeatable: the agent gets
    /// the `Skill` tool and a list of the skills in its system prompt.
    #[arg(long, value_name = "DIR")]
    pub(crate) skills: Vec<PathBuf>,
    /// A folder of knowledge concepts (Markdown files with `id` and `title` front
    /// matter), repeatable: the agent gets `search_concepts`, `read_concept` and
    /// `get_neighbors`.
    #[arg(long, value_name = "DIR")]
    pub(crate) knowledge: Vec<PathBuf>,
    /// Keep the knowledge index in this SQLite file (created if missing), so the next
    /// run re-reads only the concept files that changed.
    #[arg(long, value_name = "FILE", requires = "knowledge")]
    pub(crate) knowledge_index: Option<PathBuf>,
    /// The system prompt.
    #[arg(long, value_name = "TEXT", conflicts_with = "system_file")]
    pub(crate) system: Option<String>,
    /// The system prompt, read from this file (UTF-8, at most 1 MiB).
    #[arg(long, value_name = "FILE")]
    pub(crate) system_file: Option<PathBuf>,
    /// Approve every tool call that would otherwise ask.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    #[command(flatten)]
    pub(crate) sandbox: SandboxArgs,
    #[command(flatten)]
    pub(crate) web: WebArgs,
    #[command(flatten)]
    pub(crate) permissions: PermissionArgs,
    #[command(flatten)]
    pub(crate) mcp: McpArgs,
}

/// The limits of a run besides `--max-turns` (see docs/budgets.md). A run that reaches
/// one ends with exit status 4; a durable one pauses, and `resume` with a higher limit
/// continues it.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct LimitArgs {
    /// Most tool calls in the run: in a response whose calls would pass it, the calls up
    /// to it run, the others get an error result, and no further model request is sent.
    #[arg(long, value_name = "N")]
    pub(crate) max_tool_calls: Option<u64>,
    /// Most input plus output tokens in the run, checked after each model response; a
    /// request whose input alone would pass what is left is not sent.
    #[arg(long, value_name = "N")]
    pub(crate) max_tokens: Option<u64>,
    /// Most US dollars the run may cost, checked after each model response. Needs the
    /// model's price (--price, or a well-known model's built-in one).
    #[arg(long, value_name = "X", value_parser = parse_usd)]
    pub(crate) max_cost_usd: Option<f64>,
}

/// A dollar amount: a finite number, 0 or more.
pub(crate) fn parse_usd(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
        _ => Err(format!("{text:?} is not an amount of US dollars (a number, 0 or more, e.g. 0.50)")),
    }
}

/// One agent flag that differs from its default: its name and its value, if it takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    pub(crate) name: &'static str,
    pub(crate) value: Option<String>,
}

impl AgentArgs {
    /// The flags that differ from their defaults, in the order of `--help`, each with its
    /// value as a command line gives it.
    pub(crate) fn given(&self) -> Vec<Given> {
        let mut given: Vec<Given> = Vec::new();
        let mut flag = |name: &'static str, value: Option<String>| given.push(Given { name, value });
        if self.model != "test" {
            flag("--model", Some(self.model.clone()));
        }
        if let Some(url) = &self.base_url {
            flag("--base-url", Some(url.clone()));
        }
        for model in &self.fallback_models {
            flag("--fallback-model", Some(model.clone()));
        }
        if !self.tools.is_empty() {
            flag("--tools", Some(self.tools.join(",")));
        }
        if let Some(dir) = &self.base_path {
            flag("--base-path", Some(dir.display().to_string()));
        }
        if self.max_result_chars != DEFAULT_MAX_RESULT_CHARS {
            flag("--max-result-chars", Some(self.max_result_chars.to_string()));
        }
        if let Some(window) = self.context_window {
            flag("--context-window", Some(window.to_string()));
        }
        if !self.tool_choice.is_auto() {
            flag("--tool-choice", Some(self.tool_choice.to_string()));
        }
        if let Some(parallel) = self.parallel_tool_calls {
            flag("--parallel-tool-calls", Some(parallel.to_string()));
        }
        if let Some(effort) = self.reasoning_effort {
            flag("--reasoning-effort", Some(value_name(effort)));
        }
        if let Some(budget) = self.reasoning_budget {
            flag("--reasoning-budget", Some(budget.to_string()));
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
        if let Some(text) = &self.system {
            flag("--system", Some(text.clone()));
        }
        if let Some(file) = &self.system_file {
            flag("--system-file", Some(file.display().to_string()));
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
        for rule in &self.permissions.ask {
            flag("--ask", Some(rule.clone()));
        }
        for name in &self.permissions.deny {
            flag("--deny", Some(name.clone()));
        }
        if let Some(file) = &self.permissions.permissions_file {
            flag("--permissions", Some(file.display().to_string()));
        }
        for command in &self.mcp.mcp {
            flag("--mcp", Some(command.clone()));
        }
        for url in &self.mcp.mcp_http {
            flag("--mcp-http", Some(url.clone()));
        }
        if self.mcp.mcp_trust {
            flag("--mcp-trust", None);
        }
        if let Some(price) = &self.price {
            let text = format!("{},{},{}", price.input, price.output, price.cached_input);
            flag("--price", Some(text));
        }
        given
    }

    /// The limit flags that differ from their defaults (`--max-turns`, `--max-tool-calls`,
    /// `--max-tokens`, `--max-cost-usd`): not part of what the agent is, so a run on a
    /// cluster takes them from whoever starts or resumes it.
    pub(crate) fn limit_flags(&self) -> Vec<Given> {
        let mut given = Vec::new();
        let mut flag = |name: &'static str, value: String| given.push(Given { name, value: Some(value) });
        if self.max_turns != DEFAULT_MAX_TURNS {
            flag("--max-turns", self.max_turns.to_string());
        }
        if let Some(n) = self.limits.max_tool_calls {
            flag("--max-tool-calls", n.to_string());
        }
        if let Some(n) = self.limits.max_tokens {
            flag("--max-tokens", n.to_string());
        }
        if let Some(usd) = self.limits.max_cost_usd {
            flag("--max-cost-usd", usd.to_string());
        }
        given
    }

    /// The reasoning `--reasoning-effort` and `--reasoning-budget` ask for; `None`
    /// without either (nothing sent).
    pub(crate) fn reasoning(&self) -> Option<ReasoningConfig> {
        (self.reasoning_effort.is_some() || self.reasoning_budget.is_some()).then(|| ReasoningConfig {
            effort: self.reasoning_effort.map(ReasoningEffort::from),
            budget_tokens: self.reasoning_budget,
        })
    }

    /// The run's limits as the flags give them (`--max-turns` always set).
    pub(crate) fn run_limits(&self) -> RunLimits {
        RunLimits { max_turns: Some(self.max_turns), ..self.limit_changes() }
    }

    /// The limits the flags set, and only those (`--max-turns` when not the default):
    /// what `run --restate` and `resume --restate` send the cluster.
    pub(crate) fn limit_changes(&self) -> RunLimits {
        RunLimits {
            max_turns: (self.max_turns != DEFAULT_MAX_TURNS).then_some(self.max_turns),
            max_tool_calls: self.limits.max_tool_calls,
            max_tokens: self.limits.max_tokens,
            max_cost_usd: self.limits.max_cost_usd,
            ..RunLimits::default()
        }
    }

    /// These flags as a command line gives them, for the `resume` command the CLI
    /// prints: it must build the same agent, under the same limits. Defaults are left out.
    pub(crate) fn to_flags(&self) -> Vec<String> {
        self.given()
            .into_iter()
            .chain(self.limit_flags())
            .flat_map(|g| std::iter::once(g.name.to_owned()).chain(g.value))
            .collect()
    }
}

/// A flag value as clap spells it.
pub(crate) fn value_name(value: impl ValueEnum) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
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
            "--fallback-model",
            "anthropic:claude-sonnet-4-5",
            "--fallback-model",
            "openai:qwen3@http://localhost:2/v1",
            "--tools",
            "read_file,write_file",
            "--base-path",
            "some dir",
            "--max-turns",
            "7",
            "--max-result-chars",
            "1000",
            "--context-window",
            "8192",
            "--max-tool-calls",
            "3",
            "--max-tokens",
            "1000",
            "--max-cost-usd",
            "0.25",
            "--price",
            "2.5,10,1.25",
            "--tool-choice",
            "read_file",
            "--parallel-tool-calls",
            "false",
            "--reasoning-effort",
            "minimal",
            "--reasoning-budget",
            "3000",
            "--skills",
            "skills",
            "--skills",
            "more skills",
            "--knowledge",
            "concepts",
            "--knowledge-index",
            "index.db",
            "--system-file",
            "prompt.md",
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
            "--ask",
            "run_bash(git push*)",
            "--deny",
            "delete",
            "--permissions",
            "rules.toml",
            "--mcp",
            "node 'my server.js'",
            "--mcp-http",
            "http://127.0.0.1:1/mcp",
            "--mcp-trust",
        ];
        let system: &[&str] = &["--system", "Be brief.\nAnswer in French."];
        for flags in [&every[..], &[], &["--tools", "write_file"], &["--tool-choice", "required"], system] {
            let args = parse(flags);
            let again = args.to_flags();
            let again: Vec<&str> = again.iter().map(String::as_str).collect();
            assert_eq!(format!("{:?}", parse(&again)), format!("{args:?}"), "{flags:?} -> {again:?}");
        }
        assert!(parse(&[]).to_flags().is_empty(), "defaults are left out");
        assert!(parse(&[]).given().is_empty(), "defaults are left out");
    }

    #[test]
    fn the_first_given_flag_is_named_by_its_flag() {
        let first = |flags: &[&str]| parse(flags).given().first().map(|g| g.name);
        assert_eq!(first(&["--tools", "read_file"]), Some("--tools"));
        assert_eq!(first(&["--yes", "--model", "openai:x"]), Some("--model"));
        assert_eq!(first(&["--mcp-trust"]), Some("--mcp-trust"));
        // A value equal to the default is no flag given.
        assert_eq!(first(&["--max-turns", "50", "--tool-choice", "auto"]), None);
        // Limits are not what the agent is.
        assert_eq!(first(&["--max-turns", "3", "--max-tool-calls", "2"]), None);
        assert_eq!(parse(&["--max-turns", "3", "--max-tool-calls", "2"]).limit_flags().len(), 2);
    }

    #[test]
    fn limit_flags_refuse_what_is_not_a_limit() {
        for bad in [
            &["--max-cost-usd", "-1"][..],
            &["--max-cost-usd", "NaN"],
            &["--max-cost-usd", "inf"],
            &["--max-tool-calls", "-1"],
            &["--max-tokens", "1.5"],
            &["--price", "1"],
            &["--price", "1,x"],
            &["--reasoning-effort", "extreme"],
            &["--reasoning-budget", "0"],
            &["--reasoning-budget", "-5"],
        ] {
            let args = std::iter::once("harnessx").chain(bad.iter().copied());
            assert!(Flags::try_parse_from(args).is_err(), "{bad:?}");
        }
        let changes = parse(&["--max-tool-calls", "5"]).limit_changes();
        assert_eq!((changes.max_turns, changes.max_tool_calls), (None, Some(5)));
        assert_eq!(parse(&[]).run_limits().max_turns, Some(DEFAULT_MAX_TURNS));
    }

    #[test]
    fn reasoning_flags_fill_the_reasoning_config() {
        assert_eq!(parse(&[]).reasoning(), None);
        let effort = parse(&["--reasoning-effort", "high"]).reasoning();
        assert_eq!(
            effort,
            Some(ReasoningConfig { effort: Some(ReasoningEffort::High), budget_tokens: None })
        );
        let both = parse(&["--reasoning-budget", "4000", "--reasoning-effort", "low"]).reasoning();
        assert_eq!(
            both,
            Some(ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: Some(4000) })
        );
    }
}
