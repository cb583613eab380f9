//! One `tools/call` to the server: the request under its span, a restart noted when the
//! server stopped, the registry settled before the result returns.

use std::sync::Arc;

use harnessx_core::{ToolContext, ToolError, ToolOutput};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest,
    ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::service::ServiceError;
use serde_json::Value;
use tracing::Instrument;
use tracing::field::Empty;

use super::link::Link;
use super::output::output;

/// `tools/call` for a call whose progress someone follows: sent as rmcp's `call_tool`
/// sends it (its request cancelled at the server if the call is dropped, by a timeout
/// say), its progress notifications, by the token rmcp gave the request, reported on
/// `ctx` as they come. (A server that answers with MCP's `input_required` gets an error:
/// this client fulfils no input requests.)
async fn followed(
    service: &super::connect::Service,
    link: &Link,
    params: CallToolRequestParams,
    ctx: ToolContext,
) -> Result<CallToolResult, ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = service.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
    let _followed = link.progress.follow(&handle.progress_token, ctx);
    let mut abandoned = Abandoned { peer: Some(handle.peer.clone()), id: handle.id.clone() };
    let answered = handle.await_response().await;
    abandoned.peer = None;
    match answered? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Cancels a request at the server when the call waiting for it is dropped first.
struct Abandoned {
    peer: Option<rmcp::Peer<rmcp::RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take() {
            let cancelled =
                CancelledNotificationParam::new(Some(self.id.clone()), Some("the call ended".into()));
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = peer.notify_cancelled(cancelled).await;
                });
            }
        }
    }
}

/// Calls the server's tool `remote` with `args`, as the handler of its definition.
pub(super) async fn call(
    link: Arc<Link>,
    remote: String,
    args: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
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
    let can_pause = ctx.can_pause();
    let in_flight = link.progress.begin(ctx.clone());
    let called = if ctx.reports_progress() {
        followed(&service, &link, params, ctx).instrument(span.clone()).await
    } else {
        service.call_tool(params).instrument(span.clone()).await
    };
    // It paused on the server's question: whatever the server made of the cancel, the
    // run waits for the answer and runs the call again.
    let paused = in_flight.asked.take_pause();
    drop(in_flight);
    if let Some(pause) = paused {
        drop(span);
        return Err(ToolError::paused(pause));
    }
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
            if e.is_authorization_required() {
                // Its token was refused and could not be refreshed (or it never had one).
                let reason = format!(
                    "the MCP server `{shown}` needs a login again (it refused the token, and it could not be refreshed): run `harnessx mcp login {shown}`",
                    shown = link.shown
                );
                // A durable run waits for the login and runs the call again on resume.
                if can_pause {
                    return Err(ToolError::paused(harnessx_core::Pause::new(
                        harnessx_core::PauseKind::Auth,
                        reason,
                    )));
                }
                return Err(ToolError::new(reason));
            }
            Err(ToolError::new(format!("the MCP server `{}` failed on {remote}: {e}", link.shown)))
        }
    }
}
