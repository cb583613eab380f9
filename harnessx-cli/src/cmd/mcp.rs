//! `harnessx mcp serve`: built-in tools served over MCP, on stdio or streamable HTTP;
//! `harnessx mcp login|logout|status`: logins to MCP servers behind OAuth.
//!
//! Over stdio, standard output carries nothing but the protocol; every line for a person
//! goes to standard error.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use harnessx::mcp::McpTransport;
use serde_json::json;

use crate::error::CliError;
use crate::output::Stdout;
use crate::setup::flags::{HookArgs, PermissionArgs, SandboxArgs, ToolArgs, WebArgs};
use crate::setup::{Approvals, BasePath, Tools, permissions};
use crate::shutdown::Shutdown;

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Serve built-in tools to an MCP client (a desktop app, an IDE, another agent).
    ///
    /// Every call goes through the same pipeline as under `run` (validation, hooks,
    /// permissions, timeouts); a failed call is a result with isError set, never a
    /// protocol error.
    /// Tools are allowed unless --default-permission, --allow or --deny say otherwise:
    /// the client's host asks its user before calls (the tools' annotations say which
    /// ones change things). ASK tools are asked through the client (MCP elicitation),
    /// and denied when the client cannot ask.
    Serve(Box<ServeArgs>),
    /// Log in to an MCP server behind OAuth: finds its authorization server, registers
    /// a client (or uses --client-id), prints the URL to open on one stderr line starting
    /// `Open: ` (and opens a browser unless --no-browser), waits for the redirect on
    /// 127.0.0.1, and keeps the tokens in the user's data folder (one file per server,
    /// mode 0600). `--mcp-http URL` and `[mcp_servers.NAME] url` use them from then on.
    Login(LoginArgs),
    /// Forget the login of an MCP server.
    Logout(LogoutArgs),
    /// The MCP servers logged in to, and when their tokens expire.
    Status(StatusArgs),
    /// The prompts of MCP servers, `SERVER/NAME ARGUMENTS  description` (what
    /// `run --mcp-prompt` takes).
    Prompts(PromptsArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PromptsArgs {
    #[command(flatten)]
    mcp: crate::setup::flags::McpArgs,
    /// One JSON line per server: {"server", "prompts": [{"name", "description", "arguments"}]}.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The server's MCP URL (https://, or http:// on this machine).
    url: String,
    /// A client id registered with the authorization server beforehand (default: the
    /// server's dynamic client registration).
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// A scope to ask for (repeatable; default: those the server advertises).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// Do not open a browser: open the `Open: ` URL yourself.
    #[arg(long)]
    no_browser: bool,
    /// How long to wait for the redirect, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    timeout: u64,
    /// An origin (`https://host`) besides the server's own where its protected-resource
    /// metadata may be (repeatable); metadata elsewhere is refused.
    #[arg(long = "allow-metadata-origin", value_name = "ORIGIN")]
    metadata_origins: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct LogoutArgs {
    /// The server's MCP URL.
    url: String,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Print `{"servers": [{"origin", "url", "expires_at", "refreshable", "scopes"}]}`.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    tools: ToolArgs,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    web: WebArgs,
    #[command(flatten)]
    permissions: PermissionArgs,
    #[command(flatten)]
    pub(crate) hooks: HookArgs,
    /// Serve MCP's streamable HTTP on this address (`127.0.0.1:8080`; port 0 picks a
    /// free one) instead of stdio. Clients connect to http://ADDR/mcp.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    http: Option<SocketAddr>,
    /// With --http: print `{"url": ...}` as one JSON line on standard output once
    /// listening.
    #[arg(long)]
    json: bool,
    /// Offer the skills in this folder as MCP prompts (each skill's name, description
    /// and instructions). Repeatable.
    #[arg(long = "skills", value_name = "DIR")]
    skills: Vec<std::path::PathBuf>,
}

/// `HOST:PORT`, resolved to the first address it names.
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let usage =
        || format!("expected HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free port), got {text:?}");
    let mut addrs = text.to_socket_addrs().map_err(|e| format!("{} ({e})", usage()))?;
    addrs.next().ok_or_else(usage)
}

pub(crate) async fn run(command: McpCommand) -> Result<ExitCode, CliError> {
    match command {
        McpCommand::Serve(args) => serve(*args).await,
        McpCommand::Login(args) => login(args).await,
        McpCommand::Logout(args) => logout(&args),
        McpCommand::Status(args) => status(&args),
        McpCommand::Prompts(args) => {
            for line in crate::setup::mcp_prompt::list(&args.mcp, args.json).await? {
                outln!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn store() -> Result<harnessx::mcp::auth::TokenStore, CliError> {
    harnessx::mcp::auth::TokenStore::user().map_err(|e| CliError::Failed(e.to_string()))
}

async fn login(args: LoginArgs) -> Result<ExitCode, CliError> {
    if !(args.url.starts_with("http://") || args.url.starts_with("https://")) {
        return Err(CliError::Usage(format!(
            "mcp login {:?}: give the server's http:// or https:// URL",
            args.url
        )));
    }
    let store = store()?;
    let options = harnessx::mcp::auth::LoginOptions {
        client_id: args.client_id.clone(),
        scopes: args.scopes.clone(),
        timeout: std::time::Duration::from_secs(args.timeout),
        metadata_origins: args.metadata_origins.clone(),
    };
    let browser = !args.no_browser;
    let login = harnessx::mcp::auth::login(&store, &args.url, &options, |url| {
        errln!("Open: {url}");
        if browser {
            open_in_browser(url);
        }
    })
    .await
    .map_err(|e| CliError::Failed(e.to_string()))?;
    errln!(
        "harnessx: logged in to {} ({}); the login is kept in {}",
        login.origin,
        expiry(&login),
        store.dir().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` in the desktop's browser, if there is one (`xdg-open`); the `Open: ` line
/// is there either way.
fn open_in_browser(url: &str) {
    let _ = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// When a login's token expires, in words.
fn expiry(login: &harnessx::mcp::auth::Login) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let renews = if login.refreshable { ", renewed by its refresh token" } else { "" };
    match login.expires_at {
        None => format!("its token has no expiry{renews}"),
        Some(at) if at <= now => format!("its token expired{renews}"),
        Some(at) => {
            let left = at - now;
            let shown = if left >= 3600 {
                format!("{} h", left / 3600)
            } else {
                format!("{} min", left.div_ceil(60))
            };
            format!("its token expires in {shown}{renews}")
        }
    }
}

fn logout(args: &LogoutArgs) -> Result<ExitCode, CliError> {
    let store = store()?;
    let removed = store.remove(&args.url).map_err(|e| CliError::Failed(e.to_string()))?;
    if removed {
        errln!("harnessx: logged out of {}", args.url);
    } else {
        errln!("harnessx: no login was kept for {}", args.url);
    }
    Ok(ExitCode::SUCCESS)
}

fn status(args: &StatusArgs) -> Result<ExitCode, CliError> {
    let store = store()?;
    let logins = store.logins().map_err(|e| CliError::Failed(e.to_string()))?;
    if args.json {
        let servers: Vec<serde_json::Value> = logins
            .iter()
            .map(|l| {
                json!({"origin": l.origin, "url": l.url, "expires_at": l.expires_at,
                       "refreshable": l.refreshable, "scopes": l.scopes})
            })
            .collect();
        outln!("{}", json!({ "servers": servers }));
        return Ok(ExitCode::SUCCESS);
    }
    if logins.is_empty() {
        errln!("harnessx: no MCP server logged in to (`harnessx mcp login URL`)");
    }
    for login in &logins {
        outln!("{}  {}", login.url, expiry(login));
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: ServeArgs) -> Result<ExitCode, CliError> {
    if args.tools.tools.is_empty() {
        return Err(CliError::Usage(
            "mcp serve needs --tools SPEC (e.g. --tools filesystem, or read_file,grep); `harnessx tools list` shows the names".into(),
        ));
    }
    if args.json && args.http.is_none() {
        return Err(CliError::Usage(
            "--json applies to --http (over stdio, standard output carries the protocol)".into(),
        ));
    }
    // File tools are contained under the current directory unless --base-path says where
    // (as under `run`). Hosts often start servers in `/`: give --base-path.
    let base_path = BasePath::contained(args.tools.base_path.clone())?;
    let base = base_path.dir().cloned();
    let registry = Tools {
        specs: &args.tools.tools,
        default_specs: &[],
        base_path,
        sandbox: &args.sandbox,
        web: &args.web,
    }
    .registry()?;
    if registry.is_empty() {
        return Err(CliError::Usage("--tools names no tool; `harnessx tools list` shows the names".into()));
    }
    // ALLOW unless the flags say otherwise: the MCP host asks its user before a call
    // (MCP requires it to), and reads the annotations we publish to know which tools
    // change things. `--default-permission ask` makes this server ask too.
    // ASK calls are asked through the client (MCP elicitation).
    let (manager, rules) = permissions(&args.permissions, Approvals::Nobody, base.as_deref())?;
    rules.install(&manager, &registry)?;
    // The configuration files' hooks and the flags' see every call: a refusal is an
    // error result with the hook's line.
    registry.set_hooks(args.hooks.tool_hooks(base.as_deref())?);
    let transport = match args.http {
        None => McpTransport::stdio(),
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| CliError::Usage(format!("--http {addr}: cannot listen there: {e}")))?;
            McpTransport::http(listener)
        }
    };
    // Before the first answer: a client may stop the server as soon as it has one.
    let shutdown = Shutdown::listen();
    let prompts: Option<std::sync::Arc<dyn harnessx::mcp::PromptSource>> = if args.skills.is_empty() {
        None
    } else {
        let sources = args.skills.iter().map(harnessx::agent::SkillSource::dir);
        let skills = harnessx::agent::SkillPrompts::load(sources).map_err(CliError::usage)?;
        Some(std::sync::Arc::new(skills))
    };
    let server = harnessx::mcp::serve_mcp_with_prompts(registry, manager, transport, prompts)
        .await
        .map_err(CliError::failed)?;
    if let (Some(url), Some(addr)) = (server.url(), server.local_addr()) {
        errln!("harnessx: serving MCP at {url}");
        if !addr.ip().is_loopback() {
            errln!(
                "harnessx: warning: {addr} is not a loopback address and MCP's HTTP has no authentication here; whoever reaches it can call these tools"
            );
        }
        if args.json {
            Stdout::default().write(format_args!("{}\n", json!({"url": url})))?;
        }
    }
    let stop = server.stop_token();
    tokio::spawn(async move {
        shutdown.wait().await;
        stop.cancel();
    });
    server.wait().await.map_err(CliError::failed)?;
    Ok(ExitCode::SUCCESS)
}
