//! MCP both ways for harnessx, over `rmcp`.
//!
//! - [`register_mcp`]: the tools of an MCP server registered in a [`ToolRegistry`], where
//!   they go through the same pipeline as any other tool (name repair, validation,
//!   permissions, ordering, timeouts). A server's `notifications/tools/list_changed`
//!   updates the registry; an agent sends the new set to the model from its next turn.
//! - [`serve_mcp`]: any registry served over MCP (stdio, any byte streams, streamable
//!   HTTP), every call through the same pipeline, ASK calls asked through elicitation.
//!
//! See `docs/mcp.md`.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    ResourceContents, Tool,
};
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RunningService, RxJsonRpcMessage, ServiceError, TxJsonRpcMessage};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::{Mutex, Notify};
use tracing::Instrument;
use tracing::field::Empty;

mod server;
pub use server::{McpServing, McpTransport, serve_mcp};

use harnessx_core::{
    PermissionLevel, ReplayPolicy, ToolAnnotations, ToolDefinition, ToolError, ToolHandler, ToolOutput,
    ToolRegistry, WeakToolRegistry,
};

/// The timeout of an MCP tool, in seconds (the spec's table: MCP tools get 300 s).
pub const MCP_TIMEOUT_SECONDS: f64 = 300.0;

/// Why an MCP server could not be used. One line each.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's process could not be started.
    #[error("could not start the MCP server `{command}`: {reason}")]
    Spawn {
        /// The command.
        command: String,
        /// What the OS said.
        reason: String,
    },
    /// The server did not complete the MCP handshake or the tool listing.
    #[error("the MCP server `{server}` {what}: {reason}")]
    Protocol {
        /// The server, as its command line.
        server: String,
        /// What failed (`did not initialize`, `could not list its tools`).
        what: &'static str,
        /// The error.
        reason: String,
    },
    /// The server's description is unusable (a header that HTTP cannot carry).
    #[error("the MCP server `{server}`: {reason}")]
    Config {
        /// The server's URL.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// A tool of the server has the name of a tool already in the registry: nothing of
    /// the server is registered.
    #[error(
        "the MCP server `{server}` has a tool named \"{name}\", which is already registered; give the server's tools a prefix (McpOptions::prefix) or leave one of the two out"
    )]
    Clash {
        /// The server.
        server: String,
        /// The name, as it would have been registered.
        name: String,
    },
    /// Serving a registry over MCP failed ([`serve_mcp`]): the client never completed
    /// the handshake, or the transport broke.
    #[error("serving MCP over {transport}: {reason}")]
    Serve {
        /// `stdio`, `io` or `HTTP`.
        transport: String,
        /// What went wrong.
        reason: String,
    },
    /// The registry refused a tool (a name it does not accept).
    #[error(transparent)]
    Registry(#[from] harnessx_core::RegistryError),
}

/// An MCP server to connect to.
#[derive(Debug, Clone)]
pub struct McpServer {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)> },
    Http { url: String, headers: Vec<(String, String)> },
}

impl McpServer {
    /// A server run as a child process, spoken to over its stdin and stdout.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
        env: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        Self {
            kind: Kind::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: env.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            },
        }
    }

    /// A server at `url`, spoken to over MCP's streamable HTTP, with `headers` on every
    /// request (an `Authorization` header, say).
    pub fn http(
        url: impl Into<String>,
        headers: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        Self {
            kind: Kind::Http {
                url: url.into(),
                headers: headers.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            },
        }
    }

    /// The command line or the URL, for messages.
    pub fn display(&self) -> String {
        match &self.kind {
            Kind::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Kind::Http { url, .. } => url.clone(),
        }
    }
}

/// Which of a server's tools to register, and how.
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// Only these tools (by the server's names); all when `None`.
    pub include: Option<Vec<String>>,
    /// Not these (by the server's names).
    pub exclude: Vec<String>,
    /// Put before each name, to keep two servers' tools apart (`fs_` + `read_file`).
    pub prefix: Option<String>,
    /// The permission of every tool registered; omitted, they follow the manager.
    pub permission: Option<PermissionLevel>,
    /// Whether the server is trusted to describe its own tools (`false` by default).
    ///
    /// MCP's annotations are the server's own claims, and the specification says clients
    /// must consider them untrusted unless they come from trusted servers. So a hint that
    /// makes a call more careful always applies (`destructiveHint: true`, so a CLI run
    /// asks first), while the hints that relax something apply only when this is `true`:
    /// `readOnlyHint: true` (the tool runs concurrently, and a CLI run does not ask) and
    /// `idempotentHint: true` (the `idempotent` replay policy: re-run after a crash,
    /// retried). See [`register_mcp`].
    pub trust_hints: bool,
}

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
/// annotations (the CLI's asking, [`serve_mcp`] publishing them) sees an untrusted
/// server's tool as one that may change things.
pub async fn register_mcp(
    registry: &ToolRegistry,
    server: McpServer,
    options: McpOptions,
) -> Result<McpConnection, McpError> {
    let shown = server.display();
    let changed = Arc::new(Changes::default());
    let (service, pid) = connect(&server, &changed).await?;
    let tools = list_tools(&service).await.map_err(|reason| McpError::Protocol {
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
    });
    let chosen = link.choose(tools);
    let names: Vec<&str> = chosen.values().map(|(name, _)| name.as_str()).collect();
    registry.ensure_free(&names).map_err(|e| match e {
        harnessx_core::RegistryError::DuplicateTool { name } => {
            McpError::Clash { server: shown.clone(), name }
        }
        e => McpError::Registry(e),
    })?;
    for (name, tool) in chosen.values() {
        registry.register_tool(definition(tool, name, &link))?;
    }
    *link.registered() = chosen;
    tokio::spawn(refresh_task(Arc::downgrade(&link), changed));
    Ok(McpConnection { link })
}

/// Changes a server announced, and the wake-up of the task that applies them.
#[derive(Default)]
struct Changes {
    /// Counts the announcements (`tools/list_changed`, a restart).
    announced: std::sync::atomic::AtomicU64,
    notify: Notify,
}

impl Changes {
    fn announce(&self) {
        self.announced.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_one();
    }

    fn announced(&self) -> u64 {
        self.announced.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Keeps the registry in step with the server's tools: runs on each
/// `notifications/tools/list_changed` (and after a restart), until the connection is
/// closed or dropped, or the registry is.
async fn refresh_task(link: Weak<Link>, changed: Arc<Changes>) {
    loop {
        changed.notify.notified().await;
        let Some(link) = link.upgrade() else { return };
        if link.state.lock().await.closed || link.registry.upgrade().is_none() {
            return;
        }
        link.apply_changes().await;
    }
}

/// The client side of a connection: says who we are.
#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("harnessx", env!("CARGO_PKG_VERSION")),
        )
    }
}

type Service = RunningService<RoleClient, Client>;

/// How long a server has to list its tools. rmcp drops an answer it cannot parse without
/// a word (one nested past serde_json's 127 levels: a hostile server's deep
/// `inputSchema`), so without a limit the listing would wait forever.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

async fn list_tools(service: &Service) -> Result<Vec<Tool>, String> {
    match tokio::time::timeout(LIST_TIMEOUT, service.list_all_tools()).await {
        Ok(listed) => listed.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "no answer within {} s (an answer nested too deeply or otherwise unparsable is dropped unread)",
            LIST_TIMEOUT.as_secs()
        )),
    }
}

/// A transport that notes the server's `notifications/tools/list_changed` as it is read,
/// in order with the responses: a call whose response follows the announcement sees it
/// (rmcp runs notification handlers as tasks of their own, in no set order).
struct Watched<T> {
    inner: T,
    changed: Arc<Changes>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message
            && matches!(n.notification, ServerNotification::ToolListChangedNotification(_))
        {
            self.changed.announce();
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Starts the server's process (or reaches its URL) and completes the MCP handshake.
async fn connect(server: &McpServer, changed: &Arc<Changes>) -> Result<(Service, Option<u32>), McpError> {
    let client = Client;
    let shown = server.display();
    let handshake = |e: rmcp::service::ClientInitializeError| McpError::Protocol {
        server: shown.clone(),
        what: "did not initialize",
        reason: e.to_string(),
    };
    match &server.kind {
        Kind::Stdio { command, args, env } => {
            let command = tokio::process::Command::new(command).configure(|c| {
                c.args(args).envs(env.iter().map(|(k, v)| (k, v)));
            });
            let transport = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map(|(transport, _stderr)| transport)
                .map_err(|e| McpError::Spawn { command: shown.clone(), reason: e.to_string() })?;
            let pid = transport.id();
            let transport = Watched { inner: transport, changed: changed.clone() };
            let service = client.serve(transport).await.map_err(handshake)?;
            Ok((service, pid))
        }
        Kind::Http { url, headers } => {
            // reqwest is built without a bundled crypto provider; use ring unless the
            // application installed one of its own.
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            let mut map = std::collections::HashMap::new();
            for (name, value) in headers {
                let bad = |reason: String| McpError::Config { server: shown.clone(), reason };
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| bad(format!("header {name:?}: {e}")))?;
                let value = HeaderValue::from_str(value)
                    .map_err(|e| bad(format!("the value of header {name}: {e}")))?;
                map.insert(name, value);
            }
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
            let transport = Watched {
                inner: StreamableHttpClientTransport::from_config(config),
                changed: changed.clone(),
            };
            let service = client.serve(transport).await.map_err(handshake)?;
            Ok((service, None))
        }
    }
}

/// The first wait before restarting a server that died, doubled after each failed
/// restart up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A server and its current connection, shared by its tools' handlers.
struct Link {
    server: McpServer,
    shown: String,
    options: McpOptions,
    state: Mutex<LinkState>,
    /// The server's tools in the registry: the server's name -> (our name, its listing).
    registered: std::sync::Mutex<IndexMap<String, (String, Tool)>>,
    /// Announced on `tools/list_changed` and after a restart; notified on close and drop.
    changed: Arc<Changes>,
    /// Where the tools are registered.
    registry: WeakToolRegistry,
    /// The announcements applied so far (held while applying).
    applied: Mutex<u64>,
}

impl Drop for Link {
    fn drop(&mut self) {
        // Wakes the refresh task, which finds the link gone and ends.
        self.changed.notify.notify_one();
    }
}

struct LinkState {
    service: Option<Arc<Service>>,
    pid: Option<u32>,
    /// No restart before this.
    not_before: Option<Instant>,
    backoff: Duration,
    closed: bool,
}

impl LinkState {
    fn up(service: Service, pid: Option<u32>) -> Self {
        Self {
            service: Some(Arc::new(service)),
            pid,
            not_before: None,
            backoff: FIRST_BACKOFF,
            closed: false,
        }
    }
}

impl Link {
    /// The live connection, restarting the server if it died (at most once per backoff).
    async fn service(&self) -> Result<Arc<Service>, String> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(format!("the MCP server `{}` is closed", self.shown));
        }
        if let Some(service) = &state.service {
            if !service.is_transport_closed() {
                return Ok(service.clone());
            }
            state.service = None;
        }
        if let Some(wait) = state.not_before.map(|t| t.saturating_duration_since(Instant::now()))
            && !wait.is_zero()
        {
            return Err(format!(
                "the MCP server `{}` stopped; it is restarted in {:.1} s",
                self.shown,
                wait.as_secs_f64()
            ));
        }
        match connect(&self.server, &self.changed).await {
            Ok((service, pid)) => {
                let service = Arc::new(service);
                state.service = Some(service.clone());
                state.pid = pid;
                state.not_before = None;
                state.backoff = FIRST_BACKOFF;
                // The new process may offer other tools.
                self.changed.announce();
                Ok(service)
            }
            Err(e) => {
                state.not_before = Some(Instant::now() + state.backoff);
                state.backoff = (state.backoff * 2).min(MAX_BACKOFF);
                Err(format!("{e}; retried after {:.1} s", state.backoff.as_secs_f64() / 2.0))
            }
        }
    }

    fn registered(&self) -> std::sync::MutexGuard<'_, IndexMap<String, (String, Tool)>> {
        self.registered.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tools of `listed` that the options pick, by the server's name, with the name
    /// each is registered under.
    fn choose(&self, listed: Vec<Tool>) -> IndexMap<String, (String, Tool)> {
        let options = &self.options;
        let prefix = options.prefix.as_deref().unwrap_or_default();
        listed
            .into_iter()
            .filter(|t| options.include.as_ref().is_none_or(|only| only.iter().any(|n| n == t.name.as_ref())))
            .filter(|t| !options.exclude.iter().any(|n| n == t.name.as_ref()))
            .map(|t| (t.name.to_string(), (format!("{prefix}{}", t.name), t)))
            .collect()
    }

    /// Applies what was announced and not yet applied (once, however many callers wait).
    async fn apply_changes(self: &Arc<Self>) {
        let target = self.changed.announced();
        let mut applied = self.applied.lock().await;
        if *applied >= target {
            return;
        }
        let Some(registry) = self.registry.upgrade() else { return };
        if let Err(e) = self.refresh(&registry).await {
            tracing::warn!(server = %self.shown, error = %e, "could not refresh the MCP server's tools");
        }
        *applied = target;
    }

    /// After a call: when the server announced a change of its tools meanwhile (it
    /// usually does so before answering the call that caused it), applies it before the
    /// result is returned, so that the next model request has the new set.
    async fn settle(self: &Arc<Self>) {
        if self.changed.announced() > *self.applied.lock().await {
            self.apply_changes().await;
        }
    }

    /// Lists the server's tools again and brings the registry in step: tools gone are
    /// removed, new ones registered, changed ones replaced; the others are left as they
    /// are (so the tools' order, and a model's cached prompt prefix, stay put). A new
    /// tool whose name is taken by another tool is skipped with a warning.
    async fn refresh(self: &Arc<Self>, registry: &ToolRegistry) -> Result<(), String> {
        let service = {
            let state = self.state.lock().await;
            match &state.service {
                Some(service) if !service.is_transport_closed() => service.clone(),
                // Refreshed after the restart.
                _ => return Ok(()),
            }
        };
        let listed = list_tools(&service).await?;
        let wanted = self.choose(listed);
        let mut registered = self.registered();
        registered.retain(|remote, (name, tool)| {
            let keep = wanted.get(remote).is_some_and(|(_, new)| new == tool);
            if !keep {
                registry.remove_tool(name);
            }
            keep
        });
        for (remote, (name, tool)) in wanted {
            if registered.contains_key(&remote) {
                continue;
            }
            match registry.register_tool(definition(&tool, &name, self)) {
                Ok(_) => {
                    registered.insert(remote, (name, tool));
                }
                Err(e) => {
                    tracing::warn!(server = %self.shown, error = %e, "skipped a tool the MCP server added")
                }
            }
        }
        Ok(())
    }

    /// After a call failed on `service` because its transport closed: restart on the next call.
    async fn lost(&self, service: &Arc<Service>) {
        let mut state = self.state.lock().await;
        if state.service.as_ref().is_some_and(|s| Arc::ptr_eq(s, service)) {
            state.service = None;
            state.not_before = None;
        }
    }
}

/// The harnessx definition of one MCP tool.
fn definition(tool: &Tool, name: &str, link: &Arc<Link>) -> ToolDefinition {
    let remote = tool.name.to_string();
    let description = tool.description.as_deref().unwrap_or_default().to_owned();
    let permission = link.options.permission;
    let annotations = annotations(tool, link.options.trust_hints);
    let link = link.clone();
    let handler = ToolHandler::from_async(move |args: Value, _ctx| {
        let (link, remote) = (link.clone(), remote.clone());
        async move {
            let service = link.service().await.map_err(ToolError::new)?;
            let mut params = CallToolRequestParams::new(remote.clone());
            if let Value::Object(map) = args {
                params = params.with_arguments(map);
            }
            // The request, a child of the call's `execute_tool` span (OpenTelemetry's MCP
            // conventions: `tools/call {tool}`, a client span).
            let span = tracing::info_span!(
                target: "harnessx_mcp::client",
                "mcp_request",
                "otel.name" = %format_args!("tools/call {remote}"),
                "otel.kind" = "client",
                "mcp.method.name" = "tools/call",
                "gen_ai.tool.name" = remote.as_str(),
                "error.type" = Empty,
                "otel.status_code" = Empty,
                "otel.status_description" = Empty,
            );
            let called = service.call_tool(params).instrument(span.clone()).await;
            let failed = match &called {
                Ok(result) if result.is_error == Some(true) => Some("tool_error"),
                Ok(_) => None,
                Err(_) => Some("mcp_error"),
            };
            if let Some(kind) = failed {
                span.record("error.type", kind);
                span.record("otel.status_code", "ERROR");
            }
            drop(span);
            match called {
                Ok(result) => {
                    link.settle().await;
                    output(result)
                }
                Err(e) => {
                    if matches!(e, ServiceError::TransportClosed) || service.is_transport_closed() {
                        link.lost(&service).await;
                        return Err(ToolError::new(format!(
                            "the MCP server `{}` stopped during {remote}; it is restarted on the next call",
                            link.shown
                        )));
                    }
                    Err(ToolError::new(format!("the MCP server `{}` failed on {remote}: {e}", link.shown)))
                }
            }
        }
    });
    let mut definition = ToolDefinition::new(name, description, schema(tool), handler)
        .with_timeout_seconds(MCP_TIMEOUT_SECONDS)
        .with_concurrent(annotations.read_only == Some(true))
        .with_replay_policy(if annotations.idempotent == Some(true) {
            ReplayPolicy::Idempotent
        } else {
            ReplayPolicy::Manual
        })
        .with_annotations(annotations);
    if let Some(level) = permission {
        definition = definition.with_permission(level);
    }
    definition
}

/// The annotations harnessx acts on for `tool`: all of the server's hints when it is
/// trusted, else only those that ask for care (the side MCP's defaults take when a hint
/// is missing: not read-only, destructive, not idempotent, open world), so that nothing
/// an untrusted server says makes a call less careful.
fn annotations(tool: &Tool, trusted: bool) -> ToolAnnotations {
    let Some(hints) = &tool.annotations else { return ToolAnnotations::new() };
    let keep = |hint: Option<bool>, careful: bool| hint.filter(|&value| trusted || value == careful);
    let mut annotations = ToolAnnotations::new();
    annotations.read_only = keep(hints.read_only_hint, false);
    annotations.destructive = keep(hints.destructive_hint, true);
    annotations.idempotent = keep(hints.idempotent_hint, false);
    annotations.open_world = keep(hints.open_world_hint, true);
    annotations
}

/// The tool's input schema as an object schema (MCP requires `"type": "object"`; a
/// server that leaves out `properties` gets an empty set).
fn schema(tool: &Tool) -> Value {
    let mut schema = tool.input_schema.as_ref().clone();
    schema.entry("type").or_insert_with(|| Value::String("object".into()));
    schema.entry("properties").or_insert_with(|| Value::Object(serde_json::Map::new()));
    Value::Object(schema)
}

/// What the model reads of a result: text blocks joined, other blocks described (never
/// dropped silently), structured content kept; `isError` makes it an error result.
fn output(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        return Err(ToolError::new(if text.is_empty() { "the tool failed".to_owned() } else { text }));
    }
    Ok(ToolOutput { content: text, structured_content: result.structured_content })
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!("[image: {}, {} bytes of base64]", image.mime_type, image.data.len())
        }
        ContentBlock::Audio(audio) => {
            format!("[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len())
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => format!(
                "[resource {uri}: {}, {} bytes of base64]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            ),
            _ => "[a resource of a kind this client does not know]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        #[allow(unreachable_patterns)]
        _ => "[content of a kind this client does not know]".to_owned(),
    }
}
