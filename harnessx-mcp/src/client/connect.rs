//! Reaching a server: its process started (stdio) or its URL (streamable HTTP), the MCP
//! handshake, and the listing of its tools.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::RunningService;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use super::changes::{Changes, Watched};
use super::endpoint::{Kind, McpServer};
use crate::McpError;

/// The client side of a connection: says who we are, passes the server's log messages
/// on to `tracing` and its progress notifications to the calls they are about.
#[derive(Clone)]
pub(super) struct Client {
    /// The server's command line or URL, for its log lines.
    server: Arc<str>,
    progress: Arc<Progress>,
    /// Who answers its questions, if anyone.
    elicit: Option<super::elicit::Elicitor>,
}

/// The calls of one server in flight: those whose progress someone follows, by the
/// progress token their request carried, and every call, to which the server's questions
/// are tied.
#[derive(Default)]
pub(super) struct Progress {
    routes: std::sync::Mutex<std::collections::HashMap<String, harnessx_core::ToolContext>>,
    calls: std::sync::Mutex<Vec<(u64, Arc<super::elicit::Asked>)>>,
    next: std::sync::atomic::AtomicU64,
}

/// A progress token as a key.
fn token_key(token: &rmcp::model::ProgressToken) -> String {
    match &token.0 {
        rmcp::model::NumberOrString::String(s) => s.to_string(),
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
    }
}

impl Progress {
    /// Sends the progress reported with `token` (the one rmcp gave the call's request) to
    /// `ctx`, until the guard drops (the call ended, timed out or was cancelled).
    pub(super) fn follow(
        self: &Arc<Self>,
        token: &rmcp::model::ProgressToken,
        ctx: harnessx_core::ToolContext,
    ) -> Followed {
        let token = token_key(token);
        self.routes().insert(token.clone(), ctx);
        Followed { progress: self.clone(), token }
    }

    /// Notes a call in flight on the server, until the guard drops.
    pub(super) fn begin(self: &Arc<Self>, ctx: harnessx_core::ToolContext) -> InFlight {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let asked = Arc::new(super::elicit::Asked::new(ctx));
        self.in_flight().push((id, asked.clone()));
        InFlight { progress: self.clone(), id, asked }
    }

    /// The call a server's question is about: its only call in flight (with several,
    /// nothing on the wire says which asked).
    fn only_call(&self) -> Option<Arc<super::elicit::Asked>> {
        match self.in_flight().as_slice() {
            [(_, asked)] => Some(asked.clone()),
            _ => None,
        }
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<super::elicit::Asked>)>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn routes(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, harnessx_core::ToolContext>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A followed call's token; dropping it stops following.
pub(super) struct Followed {
    progress: Arc<Progress>,
    token: String,
}

/// A call in flight; dropping it ends it.
pub(super) struct InFlight {
    progress: Arc<Progress>,
    id: u64,
    pub(super) asked: Arc<super::elicit::Asked>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.progress.in_flight().retain(|(id, _)| *id != self.id);
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.progress.routes().remove(&self.token);
    }
}

/// The most characters of a server's log message kept (a server may send anything).
const LOG_MAX_CHARS: usize = 4096;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        // Elicitation is always offered: with nobody to ask, a question is declined at
        // once, as MCP allows.
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().enable_elicitation_schema_validation().build(),
            Implementation::new("harnessx", env!("CARGO_PKG_VERSION")),
        )
    }

    /// A server's question mid-call: to whoever answers them (see `elicit`).
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let call = self.progress.only_call();
        super::elicit::answer(self.elicit.as_ref(), &self.server, request, call.as_deref()).await
    }

    /// A server's `notifications/progress` about a call whose progress someone follows:
    /// reported on the call's context (a `tool_progress` event); any other is ignored.
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let ctx = self.progress.routes().get(&token_key(&params.progress_token)).cloned();
        if let Some(ctx) = ctx {
            let message: Option<String> = params.message.map(|m| m.chars().take(LOG_MAX_CHARS).collect());
            ctx.progress(params.progress, params.total, message.as_deref());
        }
    }

    /// A server's `notifications/message`: a `tracing` event (target
    /// `harnessx_mcp::server_log`) at its level (`debug`; `info` and `notice`; `warning`;
    /// `error` and above), with the server, the logger and the message (its text, or its
    /// JSON), cut at 4,096 characters. (MCP deprecates server logging (SEP-2577); servers
    /// still send it, so it is read while rmcp reads it.)
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        use rmcp::model::LoggingLevel;
        let text = match &params.data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let message: String = text.chars().take(LOG_MAX_CHARS).collect();
        let server = &*self.server;
        let logger = params.logger.as_deref().unwrap_or_default();
        match params.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "harnessx_mcp::server_log", server, logger, "{message}");
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "harnessx_mcp::server_log", server, logger, "{message}");
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "harnessx_mcp::server_log", server, logger, "{message}");
            }
            _ => tracing::error!(target: "harnessx_mcp::server_log", server, logger, "{message}"),
        }
    }
}

/// A connection to a server, once the handshake is done.
pub(super) type Service = RunningService<RoleClient, Client>;

/// How long a server has to list its tools. rmcp drops an answer it cannot parse without
/// a word (one nested past serde_json's 127 levels: a hostile server's deep
/// `inputSchema`), so without a limit the listing would wait forever.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The server's tools, every page of them.
pub(super) async fn list_tools(service: &Service) -> Result<Vec<Tool>, String> {
    match tokio::time::timeout(LIST_TIMEOUT, service.list_all_tools()).await {
        Ok(listed) => listed.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "no answer within {} s (an answer nested too deeply or otherwise unparsable is dropped unread)",
            LIST_TIMEOUT.as_secs()
        )),
    }
}

/// Starts the server's process (or reaches its URL) and completes the MCP handshake.
pub(super) async fn connect(
    server: &McpServer,
    changed: &Arc<Changes>,
    progress: &Arc<Progress>,
    elicit: Option<&super::elicit::Elicitor>,
) -> Result<(Service, Option<u32>), McpError> {
    let client =
        Client { server: Arc::from(server.display()), progress: progress.clone(), elicit: elicit.cloned() };
    let shown = server.display();
    let handshake = |e: rmcp::service::ClientInitializeError| {
        if e.is_authorization_required() {
            return McpError::Auth {
                server: shown.clone(),
                reason: format!(
                    "it needs a login (it answered 401): run `harnessx mcp login {shown}`, then try again"
                ),
            };
        }
        McpError::Protocol { server: shown.clone(), what: "did not initialize", reason: e.to_string() }
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
            harnessx_infra::tls::install_default_provider();
            let mut map = std::collections::HashMap::new();
            for (name, value) in headers {
                let bad = |reason: String| McpError::Config { server: shown.clone(), reason };
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| bad(format!("header {name:?}: {e}")))?;
                let value = HeaderValue::from_str(value)
                    .map_err(|e| bad(format!("the value of header {name}: {e}")))?;
                map.insert(name, value);
            }
            let authorized = map.contains_key(&reqwest::header::AUTHORIZATION);
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
            let manager = match (&server.login, authorized) {
                (Some(store), false) => crate::auth::manager(store, url).await?,
                _ => None,
            };
            let service = match manager {
                Some(manager) => {
                    let client_with_login = AuthClient::new(reqwest::Client::default(), manager);
                    let transport = Watched {
                        inner: StreamableHttpClientTransport::with_client(client_with_login, config),
                        changed: changed.clone(),
                    };
                    client.serve(transport).await.map_err(handshake)?
                }
                None => {
                    let transport = Watched {
                        inner: StreamableHttpClientTransport::from_config(config),
                        changed: changed.clone(),
                    };
                    client.serve(transport).await.map_err(handshake)?
                }
            };
            Ok((service, None))
        }
    }
}
