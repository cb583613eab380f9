//! Any [`ToolRegistry`] served over MCP: [`serve_mcp`].
//!
//! Every `tools/call` goes through the registry's one pipeline (name repair, argument
//! parsing, schema validation, permissions, serial turns, timeouts), planned with
//! [`ToolRegistry::plan_batch`] and run with [`ToolRegistry::run_planned`]. Permissions
//! are decided here, between the two, because only here is it known whom to ask: the
//! MCP client's user, through elicitation (see `approval.rs`).
//!
//! Every failure of a call — unknown tool, bad arguments, a refusal, a timeout, the
//! tool's own error — is a result with `isError: true` and the pipeline's one-line text,
//! never a JSON-RPC error: the client's model reads it and can correct itself.
//!
//! - `session.rs`: one MCP session (the `ServerHandler`): listing and calling tools;
//! - `approval.rs`: ASK, asked through elicitation, and the denial texts;
//! - `http.rs`: streamable HTTP, rmcp's tower service on hyper.

mod approval;
mod http;
mod session;

use std::net::SocketAddr;

use harnessx_core::{PermissionManager, ToolRegistry};
use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::McpError;
use session::{Session, Shared};

/// How [`serve_mcp`] reaches its client.
pub struct McpTransport {
    kind: TransportKind,
}

enum TransportKind {
    Stdio,
    Io(Box<dyn AsyncRead + Send + Unpin>, Box<dyn AsyncWrite + Send + Unpin>),
    Http(tokio::net::TcpListener),
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            TransportKind::Stdio => "stdio".to_owned(),
            TransportKind::Io(..) => "io".to_owned(),
            TransportKind::Http(listener) => format!("http {:?}", listener.local_addr().ok()),
        };
        f.debug_struct("McpTransport").field("kind", &kind).finish()
    }
}

impl McpTransport {
    /// One client on this process's standard input and output, as MCP hosts start
    /// servers. Nothing else may write to standard output. The server ends when the
    /// client closes standard input.
    pub fn stdio() -> Self {
        Self { kind: TransportKind::Stdio }
    }

    /// One client on any byte streams (a pipe, a socket, `tokio::io::duplex` in a test),
    /// framed as MCP's stdio transport is: one JSON-RPC message per line.
    pub fn io(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        Self { kind: TransportKind::Io(Box::new(read), Box::new(write)) }
    }

    /// MCP's streamable HTTP on `listener`, at any path (clients are given
    /// `http://ADDR/mcp`), any number of clients, each session with its own session
    /// grants. Bind port 0 and read [`McpServing::local_addr`] to let the OS choose.
    ///
    /// Requests must name a loopback host (`localhost`, `127.0.0.1`, `::1`) or the
    /// listener's own address in `Host`: rmcp's guard against DNS rebinding.
    pub fn http(listener: tokio::net::TcpListener) -> Self {
        Self { kind: TransportKind::Http(listener) }
    }
}

/// A server [`serve_mcp`] started: its address (over HTTP), a way to stop it, and its end.
#[derive(Debug)]
pub struct McpServing {
    addr: Option<SocketAddr>,
    stop: CancellationToken,
    task: JoinHandle<Result<(), McpError>>,
}

impl McpServing {
    /// The address it listens on (HTTP only).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The URL to give clients (HTTP only): `http://ADDR/mcp`.
    pub fn url(&self) -> Option<String> {
        self.addr.map(|addr| format!("http://{addr}/mcp"))
    }

    /// Asks the server to stop: sessions end, calls in flight are dropped, open HTTP
    /// connections get a few seconds to finish. [`wait`](Self::wait) returns once it has.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// A token that stops the server when cancelled (for a signal handler).
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Waits for the server to end: its client closed the connection (stdio, io), or
    /// [`stop`](Self::stop) was called. An error when the client never completed the
    /// MCP handshake or the server could not go on.
    pub async fn wait(self) -> Result<(), McpError> {
        match self.task.await {
            Ok(outcome) => outcome,
            Err(e) => Err(McpError::Serve { transport: "the server task".into(), reason: e.to_string() }),
        }
    }
}

/// Serves the tools of `registry` over MCP until the client goes away or
/// [`McpServing::stop`] is called. Returns once the server is listening (HTTP) or
/// waiting for its client's handshake (stdio, io).
///
/// Each call goes through the registry's pipeline, with `permissions` deciding:
/// - ALLOW runs, DENY is refused (`Permission denied`);
/// - ASK is decided by `permissions`' own approval callback when it has one; else the
///   client's user is asked through MCP elicitation when the client supports it (with
///   "allow for this session" in the form); else the call is refused with a line saying
///   why and how to allow it.
///
/// Session grants from elicitation belong to the MCP session (one per HTTP session, one
/// for stdio); the manager's own overrides and grants apply to every session.
///
/// Hooks set on `registry` ([`ToolRegistry::set_hooks`](harnessx_core::ToolRegistry::set_hooks))
/// see every call before its permission is decided and its result after: a hook's
/// refusal (or a hook that fails) is an error result with its one line, a rewrite runs
/// the call with the hook's arguments (the rules checked on them again), a post hook's
/// replacement is the result the client gets.
///
/// ```no_run
/// use harnessx_core::{PermissionLevel, PermissionManager, ToolRegistry};
/// use harnessx_mcp::{McpTransport, serve_mcp};
///
/// # async fn demo(registry: ToolRegistry) -> Result<(), harnessx_mcp::McpError> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
/// let permissions = PermissionManager::new(PermissionLevel::Ask);
/// let server = serve_mcp(registry, permissions, McpTransport::http(listener)).await?;
/// println!("MCP at {}", server.url().unwrap_or_default());
/// server.wait().await
/// # }
/// ```
pub async fn serve_mcp(
    registry: ToolRegistry,
    permissions: PermissionManager,
    transport: McpTransport,
) -> Result<McpServing, McpError> {
    serve_mcp_with_prompts(registry, permissions, transport, None).await
}

/// Prompts a server offers beside its tools ([`serve_mcp_with_prompts`]): the agent's
/// skills, say (`harnessx mcp serve --skills DIR`).
pub trait PromptSource: Send + Sync {
    /// The prompts offered.
    fn prompts(&self) -> Vec<crate::McpPrompt>;

    /// Prompt `name` filled in with `arguments`; `Err`: one line for the client (an
    /// unknown prompt, a missing argument, a file that cannot be read).
    fn prompt(
        &self,
        name: &str,
        arguments: &[(String, String)],
    ) -> Result<Vec<crate::McpPromptMessage>, String>;
}

/// [`serve_mcp`], offering `prompts` too (MCP's `prompts/list` and `prompts/get`).
pub async fn serve_mcp_with_prompts(
    registry: ToolRegistry,
    permissions: PermissionManager,
    transport: McpTransport,
    prompts: Option<std::sync::Arc<dyn PromptSource>>,
) -> Result<McpServing, McpError> {
    let shared = Shared::new(registry, permissions, prompts);
    let stop = CancellationToken::new();
    let (addr, task) = match transport.kind {
        TransportKind::Stdio => (
            None,
            tokio::spawn(serve_stream(Session::new(shared), rmcp::transport::stdio(), stop.clone(), "stdio")),
        ),
        TransportKind::Io(read, write) => {
            (None, tokio::spawn(serve_stream(Session::new(shared), (read, write), stop.clone(), "io")))
        }
        TransportKind::Http(listener) => {
            let addr = listener
                .local_addr()
                .map_err(|e| McpError::Serve { transport: "HTTP".into(), reason: e.to_string() })?;
            (Some(addr), tokio::spawn(http::serve(listener, addr, shared, stop.clone())))
        }
    };
    Ok(McpServing { addr, stop, task })
}

/// One session on a byte stream, until the client closes it or `stop` is cancelled.
async fn serve_stream<T, E, A>(
    session: Session,
    transport: T,
    stop: CancellationToken,
    shown: &'static str,
) -> Result<(), McpError>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let failed = |reason: String| McpError::Serve { transport: shown.into(), reason };
    let running = match session.serve_with_ct(transport, stop.child_token()).await {
        Ok(running) => running,
        // Stopped before the client's handshake: not a failure.
        Err(_) if stop.is_cancelled() => return Ok(()),
        Err(e) => return Err(failed(format!("the client did not complete the MCP handshake: {e}"))),
    };
    running.waiting().await.map_err(|e| failed(e.to_string()))?;
    Ok(())
}
