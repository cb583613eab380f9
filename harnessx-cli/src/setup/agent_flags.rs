//! The agent flags of `run`, `chat`, `resume`, `worker` and `config show`: the model,
//! the tools and what bounds the run. Each is declared once, with [`settings!`]: its
//! flag, its key in the configuration files, how `config show` shows it, and whether the
//! printed `resume` command repeats it as part of the agent or as a limit. Adding a
//! setting is adding one field here (and using it where the agent is built, in
//! [`super::agent_builder`]).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use harnessx::agent::ToolChoice;
use harnessx::agent::budget::{ModelPrice, RunLimits};
use harnessx::agent::model::{ReasoningConfig, ReasoningEffort};

use super::flags::{HookArgs, McpArgs, PermissionArgs, SandboxArgs, WebArgs};
use super::settings::{Declared, Given, Role, defaults, settings};
use crate::error::CliError;

/// The default of `--max-turns`: the library's, a run's turn limit when none is set.
pub(crate) const DEFAULT_MAX_TURNS: u32 = harnessx::agent::budget::DEFAULT_MAX_TURNS;

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

settings! {
    /// The flags that make the agent. `run`, `resume` and `worker` take them alike: a
    /// durable run is resumed by an agent built from the same flags (the journal refuses
    /// other tools or another model), and every worker of a cluster has the same.
    #[derive(Debug, Clone, Args)]
    pub(crate) struct AgentArgs in AgentFile {
        /// `test` (no network, the default), `openai:MODEL`, `openai-responses:MODEL` (OpenAI's
        /// Responses API), `anthropic:MODEL` or `gemini:MODEL`.
        #[arg(long, default_value = "test", value_name = "MODEL")]
        pub(crate) model: String => key "model",
        /// Base URL of an OpenAI-compatible, OpenAI Responses, Anthropic or Gemini API (e.g. a local vLLM, llama.cpp or Ollama server).
        #[arg(long, value_name = "URL")]
        pub(crate) base_url: Option<String> => key "base_url",
        /// A model to ask when the one before it is down (connection failure, HTTP 5xx, 429
        /// or 529, its retries spent); repeatable, tried in order after --model. `@URL` gives
        /// its base URL (e.g. `openai:llama@http://127.0.0.1:8080/v1`).
        #[arg(long = "fallback-model", value_name = "MODEL[@BASE_URL]")]
        pub(crate) fallback_models: Vec<String> => key "fallback_models",
        /// Record each model exchange as a cassette file in DIR (the request and the
        /// response; never a key or a header), for tests that replay them with --replay.
        #[arg(long, value_name = "DIR")]
        pub(crate) record: Option<PathBuf> => key "record",
        /// Answer from the cassettes in DIR (written by --record), with no network: a
        /// request none matches fails, naming the nearest and where it differs.
        #[arg(long, value_name = "DIR")]
        pub(crate) replay: Option<PathBuf> => key "replay",
        /// Built-in tools or bundles, comma-separated (default: filesystem).
        #[arg(long, value_delimiter = ',', value_name = "SPEC")]
        pub(crate) tools: Vec<String> => key "tools"
            // `tools = []` is no built-in tool, as `--tools ''` is.
            ; from_file = |_, tools: &Vec<String>| -> Result<Vec<String>, CliError> {
                Ok(if tools.is_empty() { vec![String::new()] } else { tools.clone() })
            }
            ; shown = |tools: &Vec<String>| match tools.as_slice() {
                [] => serde_json::json!(["filesystem"]),
                [only] if only.trim().is_empty() => serde_json::json!([]),
                tools => serde_json::json!(tools),
            },
        /// Contain the filesystem tools under this directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        pub(crate) base_path: Option<PathBuf> => key "base_path"
            ; shown = |dir: &Option<PathBuf>| {
                serde_json::json!(dir.as_ref().map_or_else(|| ".".into(), |p| p.display().to_string()))
            },
        /// Most model requests in the run. Reaching it ends the run with exit status 4 (a
        /// durable run pauses: resume it with a higher --max-turns).
        #[arg(long, default_value_t = DEFAULT_MAX_TURNS, value_name = "N")]
        pub(crate) max_turns: u32 => key "max_turns"; resume = limit,
        /// The most characters of a tool result the model gets (every tool: built-in, MCP or
        /// your own). A longer result keeps its head and tail around a line saying how much
        /// was cut; with the file tools, the whole text is saved under
        /// <base path>/.harnessx/results/ and that line names the file.
        #[arg(long, default_value_t = DEFAULT_MAX_RESULT_CHARS, value_name = "N")]
        pub(crate) max_result_chars: usize => key "max_result_chars",
        /// The model's context window in tokens (default: known for OpenAI and Anthropic
        /// models; otherwise learned from the server's first context-length error). Older
        /// turns are compacted before a request would pass 80% of it.
        #[arg(long, value_name = "N", value_parser = parse_window)]
        pub(crate) context_window: Option<u64> => key "context_window"; check = check_window,
        #[command(flatten)]
        pub(crate) limits: LimitArgs => group,
        /// The model's price in US dollars per million tokens: input, output and, optionally,
        /// input read from the prompt cache (default: the built-in price of well-known
        /// models, else none). Cache writes are priced as input.
        #[arg(long, value_name = "IN,OUT[,CACHED_IN]")]
        pub(crate) price: Option<ModelPrice> => key "price",
        /// Whether the model must call a tool: `auto` (it decides), `required` (it must call
        /// one), `none` (it must not) or a tool's name (that tool). After a turn with tool
        /// calls the run goes back to `auto`, so `required` cannot loop. Small local models
        /// often call tools only when required.
        #[arg(long, default_value_t = ToolChoice::Auto, value_name = "auto|required|none|NAME")]
        pub(crate) tool_choice: ToolChoice => key "tool_choice",
        /// `false` asks the model for at most one tool call per response, `true` allows
        /// several (default: the provider's own, which allows them).
        #[arg(long, value_name = "true|false", value_parser = clap::value_parser!(bool))]
        pub(crate) parallel_tool_calls: Option<bool> => key "parallel_tool_calls",
        /// How hard a reasoning model thinks before it answers: sent as OpenAI's
        /// `reasoning_effort`; for Anthropic it stands for a thinking budget (minimal 1024,
        /// low 2048, medium 8192, high 24576 tokens) unless --reasoning-budget gives one.
        #[arg(long, value_enum, value_name = "LEVEL")]
        pub(crate) reasoning_effort: Option<Effort> => key "reasoning_effort",
        /// The most tokens a reasoning model may spend thinking: Anthropic's extended
        /// thinking budget (at least 1024; the output limit is raised above it when needed);
        /// for OpenAI it stands for an effort (up to 2048 low, up to 8192 medium, above high)
        /// unless --reasoning-effort gives one.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        pub(crate) reasoning_budget: Option<u32> => key "reasoning_budget"; check = check_reasoning_budget,
        /// A folder of skills (each a folder with a `SKILL.md`), repeatable: the agent gets
        /// the `Skill` tool and a list of the skills in its system prompt.
        #[arg(long, value_name = "DIR")]
        pub(crate) skills: Vec<PathBuf> => key "skills",
        /// A folder of knowledge concepts (Markdown files with `id` and `title` front
        /// matter), repeatable: the agent gets `search_concepts`, `read_concept` and
        /// `get_neighbors`.
        #[arg(long, value_name = "DIR")]
        pub(crate) knowledge: Vec<PathBuf> => key "knowledge",
        /// Keep the knowledge index in this SQLite file (created if missing), so the next
        /// run re-reads only the concept files that changed.
        #[arg(long, value_name = "FILE", requires = "knowledge")]
        pub(crate) knowledge_index: Option<PathBuf> => key "knowledge_index",
        /// The system prompt.
        #[arg(long, value_name = "TEXT", conflicts_with = "system_file")]
        pub(crate) system: Option<String> => file "system",
        /// The system prompt, read from this file (UTF-8, at most 1 MiB).
        #[arg(long, value_name = "FILE")]
        pub(crate) system_file: Option<PathBuf> => file "system_file",
        /// With --restate (and on `worker`): a folder every worker and client of the cluster
        /// shares, where media over 64 KiB (an attached screenshot, a tool's image) are kept
        /// by their SHA-256 instead of in the cluster's journal. Without one, such media on
        /// a cluster are refused with a line saying so.
        #[arg(long, value_name = "DIR")]
        pub(crate) blob_store: Option<PathBuf> => key "blob_store",
        #[command(flatten)]
        pub(crate) hooks: HookArgs => group,
        /// Approve every tool call that would otherwise ask.
        #[arg(long, short = 'y')]
        pub(crate) yes: bool => none "a file that approved every call would do so for every run under it",
        #[command(flatten)]
        pub(crate) sandbox: SandboxArgs => group,
        #[command(flatten)]
        pub(crate) web: WebArgs => group,
        #[command(flatten)]
        pub(crate) permissions: PermissionArgs => group,
        #[command(flatten)]
        pub(crate) mcp: McpArgs => group,
        /// The settings the command line gave (their ids), even at their defaults: the
        /// `resume` command repeats them, so a configuration file cannot change them.
        #[arg(skip)]
        pub(crate) typed: Vec<String> => skip "no flag",
        /// The folder the run works in, in place of the current one: the file tools'
        /// base path unless --base-path gives one, where command hooks run (`eval`'s
        /// fresh folder per case). No flag.
        #[arg(skip)]
        pub(crate) folder: Option<PathBuf> => skip "no flag",
    }
}

settings! {
    /// The limits of a run besides `--max-turns` (see docs/budgets.md). A run that reaches
    /// one ends with exit status 4; a durable one pauses, and `resume` with a higher limit
    /// continues it.
    #[derive(Debug, Clone, Default, Args)]
    pub(crate) struct LimitArgs in LimitFile {
        /// Most tool calls in the run: in a response whose calls would pass it, the calls up
        /// to it run, the others get an error result, and no further model request is sent.
        #[arg(long, value_name = "N")]
        pub(crate) max_tool_calls: Option<u64> => key "max_tool_calls"; resume = limit,
        /// Most input plus output tokens in the run, checked after each model response; a
        /// request whose input alone would pass what is left is not sent.
        #[arg(long, value_name = "N")]
        pub(crate) max_tokens: Option<u64> => key "max_tokens"; resume = limit,
        /// Most US dollars the run may cost, checked after each model response. Needs the
        /// model's price (--price, or a well-known model's built-in one).
        #[arg(long, value_name = "X", value_parser = parse_usd)]
        pub(crate) max_cost_usd: Option<f64> => key "max_cost_usd"; resume = limit
            ; check = |usd: f64| parse_usd(&usd.to_string()).map_err(CliError::Usage),
    }
}

/// A dollar amount: a finite number, 0 or more.
pub(crate) fn parse_usd(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd >= 0.0 => Ok(usd),
        _ => Err(format!("{text:?} is not an amount of US dollars (a number, 0 or more, e.g. 0.50)")),
    }
}

impl AgentArgs {
    /// The flags of `role` that differ from their defaults (and, with `typed`, those the
    /// command line gave), in the order of `--help`, each with its value as a command line
    /// gives it.
    fn flags_of(&self, role: Role, typed: bool) -> Vec<Given> {
        let (defaults, command) = defaults::<Self>();
        let typed = if typed { self.typed.as_slice() } else { &[] };
        let mut out = Vec::new();
        Declared::flags(self, &defaults, &command, role, typed, &mut out);
        out
    }

    /// The agent flags that differ from their defaults: what the agent is, beyond the
    /// defaults (the limits are not part of it).
    pub(crate) fn given(&self) -> Vec<Given> {
        self.flags_of(Role::Agent, false)
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
    /// prints: it must build the same agent, under the same limits. Defaults are left
    /// out, unless the command line gave them (a configuration file would otherwise
    /// change them).
    pub(crate) fn to_flags(&self) -> Vec<String> {
        self.flags_of(Role::Agent, true)
            .into_iter()
            .chain(self.flags_of(Role::Limit, true))
            .flat_map(|g| std::iter::once(g.name).chain(g.value))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::setup::settings::{Decl, Key};

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        agent: AgentArgs,
    }

    fn parse(flags: &[&str]) -> AgentArgs {
        Flags::try_parse_from(std::iter::once("harnessx").chain(flags.iter().copied())).unwrap().agent
    }

    /// Every agent flag, each given a value other than its default.
    fn every_flag_given() -> Vec<&'static str> {
        vec![
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
            "--record",
            "tapes",
            "--replay",
            "old tapes",
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
            "--blob-store",
            "shared blobs",
            "--hook",
            "pre_tool_use:write_file(path=src/**)=./check.sh",
            "--hook",
            "post_tool_use:*=./redact.sh 'a b'",
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
            "--mcp-resources",
        ]
    }

    #[test]
    fn to_flags_gives_back_the_same_agent_flags() {
        let every = every_flag_given();
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
        let first = |flags: &[&str]| parse(flags).given().first().map(|g| g.name.clone());
        assert_eq!(first(&["--tools", "read_file"]).as_deref(), Some("--tools"));
        assert_eq!(first(&["--yes", "--model", "openai:x"]).as_deref(), Some("--model"));
        assert_eq!(first(&["--mcp-trust"]).as_deref(), Some("--mcp-trust"));
        assert_eq!(first(&["--fallback-model", "openai:x"]).as_deref(), Some("--fallback-model"));
        // A value equal to the default is no flag given.
        assert_eq!(first(&["--max-turns", "50", "--tool-choice", "auto"]), None);
        // Limits are not what the agent is; the resume line gives them after the agent's.
        let limits = ["--max-turns", "3", "--max-tool-calls", "2"];
        assert_eq!(first(&limits), None);
        let flags = parse(&["--max-tool-calls", "2", "--tools", "a,b", "--max-turns", "3"]).to_flags();
        assert_eq!(flags, ["--tools", "a,b", "--max-turns", "3", "--max-tool-calls", "2"]);
    }

    /// Every flag of the agent flags (clap's own list) with its declaration, so none is
    /// left out of the configuration files or the resume line.
    fn every_flag() -> Vec<(Decl, String)> {
        let (_, command) = defaults::<AgentArgs>();
        let mut declared = Vec::new();
        AgentArgs::declared(&mut declared);
        let ids: Vec<&str> = command.get_arguments().map(|a| a.get_id().as_str()).collect();
        let declared_ids: Vec<&str> = declared.iter().map(|d| d.id).collect();
        assert_eq!(ids, declared_ids, "every agent flag is declared with settings!, in --help's order");
        declared
            .into_iter()
            .map(|d| {
                let arg = command.get_arguments().find(|a| a.get_id() == d.id).unwrap();
                (d, format!("--{}", arg.get_long().unwrap()))
            })
            .collect()
    }

    #[test]
    fn every_agent_flag_has_a_config_key_or_says_why_not() {
        for (decl, flag) in every_flag() {
            match decl.key {
                Key::Named(key) => assert!(!key.is_empty(), "{flag}"),
                Key::None(why) => assert!(why.len() > 20, "{flag}: say why no file sets it"),
            }
        }
        let without: Vec<String> =
            every_flag().into_iter().filter(|(d, _)| matches!(d.key, Key::None(_))).map(|(_, f)| f).collect();
        assert_eq!(without, ["--yes", "--permissions"], "a new flag without a key is a choice to make here");
    }

    #[test]
    fn every_agent_flag_is_on_the_resume_line() {
        // `--system` and `--system-file` conflict: the second command line gives the first.
        let lines = [every_flag_given(), vec!["--system", "Be brief."]];
        for (decl, flag) in every_flag() {
            let given = lines.iter().find(|line| line.contains(&flag.as_str()));
            let given = given.unwrap_or_else(|| panic!("{flag} is missing from every_flag_given()"));
            let resume = parse(given).to_flags();
            assert!(resume.contains(&flag), "{flag} is not on the resume line: {resume:?}");
            let agent = parse(given).given().iter().any(|g| g.name == flag);
            assert_eq!(agent, decl.role == Role::Agent, "{flag}: part of the agent, or a limit");
        }
        // A limit is taken from whoever starts or resumes a cluster's run; the rest of the
        // flags are what its workers must be.
        let limits: Vec<String> =
            every_flag().into_iter().filter(|(d, _)| d.role == Role::Limit).map(|(_, f)| f).collect();
        assert_eq!(limits, ["--max-turns", "--max-tool-calls", "--max-tokens", "--max-cost-usd"]);
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
