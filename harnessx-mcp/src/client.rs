//! Tools from MCP servers: [`register_mcp`].
//!
//! A server's tools are registered in a [`ToolRegistry`] as tools like any other, so each
//! call goes through the registry's one pipeline. A [`Link`](link::Link) per server holds
//! the live connection, which its tools' handlers share; it restarts a server that died
//! and keeps the registry in step with the server's list of tools.
//!
//! - `endpoint.rs`: [`McpServer`], a command line or a URL;
//! - `options.rs`: [`McpOptions`], which tools and how;
//! - `connect.rs`: starting the process or reaching the URL, the handshake, the listing;
//! - `changes.rs`: the server's `tools/list_changed`, noted as it is read;
//! - `link.rs`: the live connection, restarted with backoff when the server dies;
//! - `refresh.rs`: the registry kept in step with the server's tools;
//! - `definition.rs`: the harnessx definition of an MCP tool (annotations, trust);
//! - `call.rs`: one `tools/call`, with its span; `output.rs`: its result as the model
//!   reads it.

mod call;
mod changes;
mod connect;
mod definition;
mod elicit;
mod endpoint;
mod link;
mod options;
mod output;
mod prompts;
mod refresh;
mod resources;

use std::sync::Arc;

use harnessx_core::ToolRegistry;
use indexmap::IndexMap;
use tokio::sync::Mutex;

pub use elicit::{ElicitAnswer, Elicitation, Elicitor};
pub use endpoint::McpServer;
pub use options::McpOptions;
pub use prompts::{McpPrompt, McpPromptMessage, McpRole};

use crate::McpError;
use changes::Changes;
use definition::definition;
use link::{Link, LinkState};

/// The timeout of an MCP tool, in seconds (the spec's table: MCP tools get 300 s).
pub const MCP_TIMEOUT_SECONDS: f64 = 300.0;

/// A connected server whose tools are in a registry. Close it with [`close`](Self::close);
/// dropping every handle to it (the connection and the registry's tools) also stops the
/// server's process.
pub struct McpConnection {
    link: Arc<Link>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("server", &self.link.shown)
            .field("names", &self.tool_names())
            .finish()
    }
}

impl McpConnection {
    /// The names the server's tools are registered under now (a `tools/list_changed`
    /// from the server updates them), in the server's order.
    pub fn tool_names(&self) -> Vec<String> {
        self.link.registered().values().map(|(name, _)| name.clone()).collect()
    }

    /// The prompts the server offers (MCP's `prompts/list`, every page).
    pub async fn prompts(&self) -> Result<Vec<McpPrompt>, McpError> {
        prompts::list(&self.link).await
    }

    /// The prompt `name` filled in with `arguments` (MCP's `prompts/get`): its messages,
    /// as text and media parts.
    pub async fn prompt(
        &self,
        name: &str,
        arguments: &[(String, String)],
    ) -> Result<Vec<McpPromptMessage>, McpError> {
        prompts::get(&self.link, name, arguments).await
    }

    /// The server's command line or URL.
    pub fn server(&self) -> &str {
        &self.link.shown
    }

    /// The process id of the server's current process, while it is connected.
    pub async fn pid(&self) -> Option<u32> {
        let state = self.link.state.lock().await;
        state.service.as_ref().filter(|s| !s.is_transport_closed()).and(state.pid)
    }

    /// Closes the connection and stops the server's process (stdin closed, then
    /// SIGTERM, then SIGKILL, as MCP's stdio shutdown says). Its tools then answer with
    /// an error result.
    pub async fn close(self) {
        let service = {
            let mut state = self.link.state.lock().await;
            state.closed = true;
            state.service.take()
        };
        // Ends the refresh task.
        self.link.changed.notify.notify_one();
        if let Some(service) = service {
            match Arc::try_unwrap(service) {
                Ok(service) => {
                    let _ = service.cancel().await;
                }
                // A call in flight holds it; its end drops the last handle, which stops
                // the process.
                Err(shared) => shared.cancellation_token().cancel(),
            }
        }
    }
}

/// Starts `server`, lists its tools and registers them in `registry` (see
/// [`McpOptions`]). Each is a tool like any other, its timeout [`MCP_TIMEOUT_SECONDS`],
/// with MCP's annotations mapped as far as the server is trusted:
///
/// - always: a hint that asks for care is kept (`destructiveHint: true`, so a CLI run
///   asks; `readOnlyHint: false`, `idempotentHint: false`, `openWorldHint: true`);
/// - only with [`McpOptions::trust_hints`]: the hints that relax something are kept too;
///   `readOnlyHint: true` makes the tool concurrent (and a CLI run does not ask),
///   `idempotentHint: true` gives the `idempotent` replay policy.
///
/// Otherwise a tool runs alone (not concurrently) and its replay policy is `manual`: after
/// a crash a durable run stops with `needs_input` rather than run it again, and it is
/// never retried. So an untrusted server's tool is always that.
///
/// What the definition carries is what harnessx acts on, so every policy that reads
/// annotations (the CLI's asking, [`serve_mcp`](crate::serve_mcp) publishing them) sees an
/// untrusted server's tool as one that may change things.
pub async fn register_mcp(
    registry: &ToolRegistry,
    server: McpServer,
    options: McpOptions,
) -> Result<McpConnection, McpError> {
    let shown = server.display();
    let changed = Arc::new(Changes::default());
    let progress = Arc::new(connect::Progress::default());
    let (service, pid) = connect::connect(&server, &changed, &progress, options.elicit.as_ref()).await?;
    let tools = connect::list_tools(&service).await.map_err(|reason| McpError::Protocol {
        server: shown.clone(),
        what: "could not list its tools",
        reason,
    })?;
    let link = Arc::new(Link {
        server,
        shown: shown.clone(),
        options,
        state: Mutex::new(LinkState::up(service, pid)),
        registered: std::sync::Mutex::new(IndexMap::new()),
        changed: changed.clone(),
        registry: registry.downgrade(),
        applied: Mutex::new(0),
        progress,
    });
    let chosen = link.choose(tools);
    let offered = match &link.options.resources {
        Some(prefix) => resources::definitions(&link, prefix),
        None => Vec::new(),
    };
    let names: Vec<&str> = chosen
        .values()
        .map(|(name, _)| name.as_str())
        .chain(offered.iter().map(|d| d.name.as_str()))
        .collect();
    registry.ensure_free(&names).map_err(|e| match e {
        harnessx_core::RegistryError::DuplicateTool { name } => {
            McpError::Clash { server: shown.clone(), name }
        }
        e => McpError::Registry(e),
    })?;
    for (name, tool) in chosen.values() {
        registry.register_tool(definition(tool, name, &link))?;
    }
    for offered in offered {
        registry.register_tool(offered)?;
    }
    *link.registered() = chosen;
    tokio::spawn(refresh::refresh_task(Arc::downgrade(&link), changed));
    Ok(McpConnection { link })
}
