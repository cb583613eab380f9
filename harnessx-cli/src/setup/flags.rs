//! The flags that say where a command's tools act: `--tools`, `--base-path`, the
//! sandbox, web, permission, hook and MCP flags (`tools`, `mcp serve`, and within the agent
//! flags of [`super::agent_flags`]). Only what the flags say; [`super`] builds from them.
//! The groups the agent flags take are declared with [`settings!`], so their keys in the
//! configuration files and their place on the resume line are said with each flag.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use harnessx::PermissionLevel;
use harnessx::hooks::ToolHooks;
use harnessx::mcp::{McpOptions, McpServer};

// The agent flags live in their own file; the commands name them from here.
pub(crate) use super::agent_flags::{AgentArgs, AgentFile};
use super::settings::settings;
pub(crate) use super::settings::value_name;
use crate::config::hooks::Configured;
use crate::error::CliError;

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

settings! {
    /// Where `run_bash` runs.
    #[derive(Debug, Clone, Default, Args)]
    pub(crate) struct SandboxArgs in SandboxFile {
        /// Where run_bash runs: `local` (host processes under your user; the default) or
        /// `bubblewrap` (Linux namespaces: read-only system, no network, a writable workspace
        /// that is --base-path or else the current directory, which the file tools then act on).
        #[arg(long, value_enum, value_name = "KIND")]
        pub(crate) sandbox: Option<SandboxKind> => key "sandbox"
            ; shown = |kind: &Option<SandboxKind>| serde_json::json!(kind.map_or_else(|| "local".into(), value_name)),
        /// With `--sandbox bubblewrap`: let commands use the network.
        #[arg(long)]
        pub(crate) sandbox_network: bool => key "sandbox_network",
    }
}

/// A sandbox as a flag value (and as a file spells it: `sandbox = "bubblewrap"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SandboxKind {
    Local,
    Bubblewrap,
}

settings! {
    /// What `fetch_url` may reach besides public addresses (applies when the web bundle is
    /// loaded).
    #[derive(Debug, Clone, Default, Args)]
    pub(crate) struct WebArgs in WebFile {
        /// Let fetch_url reach every address, loopback and private ones included (by default
        /// it reaches public addresses only).
        #[arg(long)]
        pub(crate) web_allow_private: bool => key "web_allow_private",
        /// Let fetch_url reach this host (`intranet.example`, `.example` for subdomains too) or
        /// address range (`10.0.0.0/8`, `127.0.0.1`) even when it is not public. Repeatable.
        #[arg(long = "web-allow", value_name = "HOST_OR_CIDR")]
        pub(crate) web_allow: Vec<String> => key "web_allow",
    }
}

impl WebArgs {
    /// Whether any `--web-*` flag is given.
    pub(crate) fn given(&self) -> bool {
        self.web_allow_private || !self.web_allow.is_empty()
    }
}

/// A permission level as a flag value (and as a file spells it: `default = "ask"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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

settings! {
    /// Permission flags. A RULE is `NAME` (every call of the tool) or `NAME(PATTERN)`:
    /// `run_bash(git status *)` (a command's words; `run_bash(ls*)` a character prefix,
    /// `run_bash(ls)` exact, as in Claude Code) or
    /// `write_file(path=src/**)` (a glob on an argument). Deny rules win over ask rules, ask
    /// over allow; see docs/permissions.md.
    #[derive(Debug, Clone, Default, Args)]
    pub(crate) struct PermissionArgs in PermissionFile {
        /// The level of tools without their own permission.
        #[arg(long, value_enum, value_name = "LEVEL")]
        pub(crate) default_permission: Option<Level> => table "permissions.default",
        /// Run the calls this rule matches without asking (`NAME` or `NAME(PATTERN)`;
        /// repeatable).
        #[arg(long = "allow", value_name = "RULE")]
        pub(crate) allow: Vec<String> => table "permissions.allow",
        /// Ask before the calls this rule matches, every time (repeatable).
        #[arg(long = "ask", value_name = "RULE")]
        pub(crate) ask: Vec<String> => table "permissions.ask",
        /// Refuse the calls this rule matches (repeatable).
        #[arg(long = "deny", value_name = "RULE")]
        pub(crate) deny: Vec<String> => table "permissions.deny",
        /// Read `allow`, `ask` and `deny` lists of rules from this TOML file (besides the
        /// project's .harnessx/permissions.toml and the user's, which are always read).
        #[arg(long = "permissions", value_name = "FILE")]
        pub(crate) permissions_file: Option<PathBuf>
            => none "a configuration file holds its rules in its own [permissions] table",
        /// The `[permissions]` lists of the configuration files: where each list is (`FILE:LINE`),
        /// its level and its rules. Read like the project's rules file: rules on tools this
        /// invocation did not load are left out. No flag.
        #[arg(skip)]
        pub(crate) configured: Vec<(String, PermissionLevel, Vec<String>)> => skip "no flag",
    }
}

settings! {
    /// Command hooks (`run`, `chat`, `resume`, `worker`, `tools call`, `mcp serve`): the
    /// flags', and the configuration files' `[[hooks.EVENT]]` tables before them.
    #[derive(Debug, Clone, Default, Args)]
    pub(crate) struct HookArgs in HookFile {
        /// A command hook, `EVENT:MATCHER=COMMAND` (repeatable): EVENT `pre_tool_use` or
        /// `post_tool_use`, MATCHER a tool name, a rule like `write_file(path=src/**)` or
        /// `*`, COMMAND run with `sh -c` with the call as JSON on stdin; or `EVENT=COMMAND`
        /// for EVENT `user_prompt`, `model_response` or `run_end` (see docs/hooks.md).
        /// Runs after the configuration files' hooks, which it does not replace.
        #[arg(long = "hook", value_name = "EVENT:MATCHER=COMMAND", value_parser = parse_hook)]
        pub(crate) hooks: Vec<String> => table "hooks",
        /// The hooks of the configuration files' `[[hooks.EVENT]]` tables, in the order they
        /// run (the project's, then the user's); no flag (`--hook` adds to them).
        #[arg(skip)]
        pub(crate) configured: Vec<Configured> => skip "no flag",
    }
}

/// `--hook EVENT:MATCHER=COMMAND`, checked: the event, and the matcher, which ends at the
/// first `=` outside parentheses (so `write_file(path=src/**)` is one matcher).
fn parse_hook(text: &str) -> Result<String, String> {
    crate::hooks::HookSpec::parse(text).map(|_| text.to_owned())
}

impl HookArgs {
    /// Every hook, in the order they run: the files', then the flags'.
    pub(crate) fn all(&self) -> Result<Vec<Configured>, CliError> {
        let flags: Result<Vec<Configured>, CliError> =
            self.hooks.iter().map(|t| Configured::flag(t)).collect();
        Ok(self.configured.iter().cloned().chain(flags?).collect())
    }

    /// The hooks of a registry's direct calls (`tools call`, `mcp serve`), each run in the
    /// working folder under its timeout; matchers read paths relative to `base` (the file
    /// tools' base path, else the working folder), as `--allow` does.
    pub(crate) fn tool_hooks(&self, base: Option<&Path>) -> Result<ToolHooks, CliError> {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let base = base.map_or_else(|| here.clone(), Path::to_path_buf);
        let mut hooks = ToolHooks::new();
        for hook in self.all()? {
            hooks = hooks.with_timeout(hook.spec.hook(here.clone(), &base, hook.timeout()), hook.timeout());
        }
        Ok(hooks)
    }
}

settings! {
    /// Tools from MCP servers (`run`, `resume`, `worker`, `tools list`, `tools call`).
    #[derive(Debug, Clone, Default, Args)]
    pub(crate) struct McpArgs in McpFile {
        /// Take the tools of this MCP server, started as a command line split as a shell
        /// would (`--mcp 'node server.js stdio'`; `env NAME=VALUE ...` sets its environment).
        /// Repeatable. Tool names must not clash with other tools.
        #[arg(long = "mcp", value_name = "COMMAND")]
        pub(crate) mcp: Vec<String> => table "mcp_servers",
        /// Take the tools of the MCP server at this streamable HTTP URL. Repeatable.
        #[arg(long = "mcp-http", value_name = "URL")]
        pub(crate) mcp_http: Vec<String> => table "mcp_servers",
        /// Trust these servers' descriptions of their tools: a tool claiming `readOnlyHint`
        /// then runs concurrently (and `run` does not ask before it), one claiming
        /// `idempotentHint` is re-run after a crash. Without it only the hints that make a
        /// call more careful (`destructiveHint`) apply, as MCP says of untrusted servers.
        #[arg(long = "mcp-trust")]
        pub(crate) mcp_trust: bool => key "mcp_trust",
        /// Offer each server's resources to the model as two tools, `list_resources` and
        /// `read_resource` (a configuration file's server NAME: `NAME_list_resources`, ...;
        /// with several servers on the command line: `mcp1_list_resources`, ...).
        #[arg(long = "mcp-resources")]
        pub(crate) mcp_resources: bool => key "mcp_resources",
        /// Servers from a configuration file's `[mcp_servers]` (or `[mcpServers]`) table, by
        /// name; no flag (`--mcp` and `--mcp-http` replace them).
        #[arg(skip)]
        pub(crate) configured: Vec<(String, McpServer)> => skip "no flag",
    }
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
        // A server over HTTP uses the login `harnessx mcp login` kept for it, if any.
        if let Ok(store) = harnessx::mcp::auth::TokenStore::user() {
            servers = servers.into_iter().map(|s| s.logged_in(store.clone())).collect();
        }
        Ok(servers)
    }

    /// How each server's tools are registered: trusted with `--mcp-trust`.
    pub(crate) fn options(&self) -> McpOptions {
        McpOptions { trust_hints: self.mcp_trust, ..McpOptions::default() }
    }

    /// The servers ([`servers`](Self::servers)) each with how its tools are registered:
    /// with `--mcp-resources`, its resource tools named after it (a configured server's
    /// name; `mcpN_` for the N-th of several servers, none for the only one).
    pub(crate) fn servers_with_options(&self) -> Result<Vec<(McpServer, McpOptions)>, CliError> {
        let servers = self.servers()?;
        let count = servers.len();
        Ok(servers
            .into_iter()
            .enumerate()
            .map(|(i, server)| {
                let mut options = self.options();
                if self.mcp_resources {
                    let prefix = match self.configured.get(i) {
                        Some((name, _)) => format!("{name}_"),
                        None if count == 1 => String::new(),
                        None => format!("mcp{}_", i + 1),
                    };
                    options.resources = Some(prefix);
                }
                (server, options)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_servers_resource_tools_are_named_after_it() {
        let prefixes = |args: &McpArgs| -> Vec<Option<String>> {
            args.servers_with_options().unwrap().into_iter().map(|(_, o)| o.resources).collect()
        };
        let one = McpArgs { mcp: vec!["a".into()], mcp_resources: true, ..McpArgs::default() };
        assert_eq!(prefixes(&one), [Some(String::new())]);
        let configured = vec![(
            "docs".to_owned(),
            McpServer::stdio("d", Vec::<String>::new(), Vec::<(String, String)>::new()),
        )];
        let several = McpArgs {
            mcp: vec!["a".into()],
            mcp_http: vec!["http://127.0.0.1:9/mcp".into()],
            configured,
            mcp_resources: true,
            ..McpArgs::default()
        };
        assert_eq!(prefixes(&several), [Some("docs_".into()), Some("mcp2_".into()), Some("mcp3_".into())]);
        let off = McpArgs { mcp: vec!["a".into()], ..McpArgs::default() };
        assert_eq!(prefixes(&off), [None]);
    }
}
