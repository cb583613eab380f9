//! What `tools` and `run` share: loading tools from `--tools` specs, and the permission
//! flags.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use harnessx::builtin::sandbox::{BubblewrapSandbox, LocalSandbox};
use harnessx::catalog::{self, BuiltinItem, BuiltinOptions};
use harnessx::mcp::{McpConnection, McpError, McpOptions, McpServer, register_mcp};
use harnessx::{PermissionLevel, PermissionManager, Sandbox, ToolRegistry};

use crate::CliError;

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
#[derive(Debug, Clone, Args)]
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
    fn given(&self) -> bool {
        self.web_allow_private || !self.web_allow.is_empty()
    }
}

/// A sandbox as a flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SandboxKind {
    Local,
    Bubblewrap,
}

impl SandboxArgs {
    /// Builds the chosen sandbox and binds it on `registry` (before any tool is loaded, so
    /// `run_bash` and the file tools see it). Returns whether the sandbox took the base
    /// path as its workspace.
    pub(crate) fn bind(&self, registry: &ToolRegistry, base_path: &BasePath) -> Result<bool, CliError> {
        if self.sandbox_network && self.sandbox != Some(SandboxKind::Bubblewrap) {
            return Err(CliError::Usage("--sandbox-network needs --sandbox bubblewrap".into()));
        }
        let here =
            || std::env::current_dir().map_err(|e| CliError::Failed(format!("the current directory: {e}")));
        let (sandbox, took_base_path): (Arc<dyn Sandbox>, bool) = match self.sandbox {
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
                    .network(self.sandbox_network)
                    .build()
                    .map_err(CliError::failed)?;
                (Arc::new(sandbox), true)
            }
        };
        registry.bind_sandbox(sandbox);
        Ok(took_base_path)
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

/// Permission flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct PermissionArgs {
    /// The level of tools without their own permission.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub(crate) default_permission: Option<Level>,
    /// Allow this tool (an override; repeatable).
    #[arg(long = "allow", value_name = "NAME")]
    pub(crate) allow: Vec<String>,
    /// Deny this tool (an override; repeatable).
    #[arg(long = "deny", value_name = "NAME")]
    pub(crate) deny: Vec<String>,
}

impl PermissionArgs {
    /// A manager with the flags applied over `default`.
    pub(crate) fn manager(&self, default: PermissionLevel) -> PermissionManager {
        let mut manager = PermissionManager::new(self.default_permission.map(Into::into).unwrap_or(default));
        for name in &self.allow {
            manager = manager.with_override(name.clone(), PermissionLevel::Allow);
        }
        for name in &self.deny {
            manager = manager.with_override(name.clone(), PermissionLevel::Deny);
        }
        manager
    }
}

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
    /// The flag's value, or `default` when the flag is absent.
    pub(crate) fn from_flag(flag: Option<PathBuf>, default: impl FnOnce() -> Option<PathBuf>) -> Self {
        match (flag, default()) {
            (Some(dir), _) => Self::Given(dir),
            (None, Some(dir)) => Self::Default(dir),
            (None, None) => Self::Host,
        }
    }

    pub(crate) fn dir(&self) -> Option<&PathBuf> {
        match self {
            Self::Given(dir) | Self::Default(dir) => Some(dir),
            Self::Host => None,
        }
    }
}

/// Loads the specs (default `default_specs`) into `registry`, passing the base path to
/// the bundles that take it, and the `--web-*` flags to the web bundle.
/// `base_path_used`: a sandbox already took it as its workspace.
pub(crate) fn load_tools(
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
}

impl McpArgs {
    /// Whether any server is given.
    pub(crate) fn given(&self) -> bool {
        !self.mcp.is_empty() || !self.mcp_http.is_empty()
    }

    /// The servers, in the order given (stdio ones first).
    pub(crate) fn servers(&self) -> Result<Vec<McpServer>, CliError> {
        if self.mcp_trust && !self.given() {
            return Err(CliError::Usage(
                "--mcp-trust applies to the servers of --mcp and --mcp-http, and none is given".into(),
            ));
        }
        let mut servers = Vec::new();
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

    /// Connects every server and registers its tools in `registry`. A server that fails
    /// stops the ones already connected.
    pub(crate) async fn connect(&self, registry: &ToolRegistry) -> Result<Vec<McpConnection>, CliError> {
        let mut connections = Vec::new();
        for server in self.servers()? {
            match register_mcp(registry, server, self.options()).await {
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

    /// How each server's tools are registered: trusted with `--mcp-trust`.
    pub(crate) fn options(&self) -> McpOptions {
        McpOptions { trust_hints: self.mcp_trust, ..McpOptions::default() }
    }

    /// These flags as a command line gives them.
    pub(crate) fn to_flags(&self) -> Vec<String> {
        let mcp = self.mcp.iter().flat_map(|c| ["--mcp".to_owned(), c.clone()]);
        let http = self.mcp_http.iter().flat_map(|u| ["--mcp-http".to_owned(), u.clone()]);
        let trust = self.mcp_trust.then(|| "--mcp-trust".to_owned());
        mcp.chain(http).chain(trust).collect()
    }
}

/// An MCP server that cannot be started, or whose tool names clash, is a usage error;
/// one that started and failed the handshake or listing is a failure.
pub(crate) fn mcp_error(e: McpError) -> CliError {
    match e {
        McpError::Protocol { .. } => CliError::failed(e),
        McpError::Clash { server, name } => CliError::Usage(format!(
            "the MCP server `{server}` has a tool named \"{name}\", which is already registered: pick the built-in tools with --tools (--tools '' for none), or leave one of the servers out"
        )),
        _ => CliError::usage(e),
    }
}
