//! `harnessx mcp serve`: built-in tools served over MCP, on stdio or streamable HTTP.
//!
//! Over stdio, standard output carries nothing but the protocol; every line for a person
//! goes to standard error.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use harnessx::mcp::{McpTransport, serve_mcp};
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
    Serve(ServeArgs),
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
        McpCommand::Serve(args) => serve(args).await,
    }
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
    let server = serve_mcp(registry, manager, transport).await.map_err(CliError::failed)?;
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
