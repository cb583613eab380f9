//! Streamable HTTP: rmcp's service (sessions, SSE, the Host guard) on hyper's HTTP/1.1
//! connections, accepted by the workspace's one accept loop (`harnessx_infra::http_server`),
//! which stops on a token. No web framework: the service answers every path, so there is
//! nothing to route.
//!
//! One answer is ours rather than rmcp's: the `DELETE` that ends a session (see
//! [`end_session`]).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use harnessx_infra::http_server::Ended;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::{Method, Request, Response, StatusCode};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio_util::sync::CancellationToken;

use super::session::{Session, Shared};
use crate::McpError;

/// How long open connections may take to finish once the server is told to stop.
const DRAIN: Duration = Duration::from_secs(5);

/// Serves MCP on `listener` until `stop` is cancelled.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> Result<(), McpError> {
    // rmcp's defaults (loopback names only, against DNS rebinding), plus the address
    // the listener is on, so a client given that address is let in.
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    if !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(stop.child_token());
    // The factory runs once per MCP session: each gets its own session grants.
    let sessions = Arc::new(LocalSessionManager::default());
    let service =
        StreamableHttpService::new(move || Ok(Session::new(shared.clone())), sessions.clone(), config);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (service, sessions) = (service.clone(), sessions.clone());
        async move {
            Ok::<_, Infallible>(if request.method() == Method::DELETE {
                end_session(&service, &sessions, request).await
            } else {
                service.handle(request).await
            })
        }
    });
    let ended = harnessx_infra::http_server::serve(listener, stop.cancelled(), DRAIN, "MCP", |io| {
        http1::Builder::new().serve_connection(io, service.clone())
    })
    .await;
    if ended == Ended::StillOpen {
        tracing::debug!("MCP connections still open {} s after the server was told to stop", DRAIN.as_secs());
    }
    Ok(())
}

type Service = StreamableHttpService<Session, LocalSessionManager>;

/// A client's `DELETE` of its session, answered as MCP's reference servers (the
/// TypeScript and Python SDKs) answer it: `200 OK` when the session was there and is now
/// ended, `404 Not Found` when there is no such session (never was, or already ended:
/// the spec's answer for a session the server does not know). rmcp answers both with
/// `202 Accepted`, which the official Python client reports on every close as `Session
/// termination failed: 202` (it takes 200 and 204).
///
/// rmcp still decides everything else (the Host guard, a missing session header, the
/// protocol version, a `405` for a client that has no sessions): only its success is
/// rewritten.
async fn end_session(
    service: &Service,
    sessions: &LocalSessionManager,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let session =
        request.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()).map(Arc::<str>::from);
    let existed = match &session {
        Some(id) => sessions.has_session(id).await.unwrap_or(true),
        None => false,
    };
    let mut response = service.handle(request).await;
    if response.status() == StatusCode::ACCEPTED {
        if existed {
            *response.status_mut() = StatusCode::OK;
        } else {
            // The words rmcp answers a POST or GET for an unknown session with.
            response = Response::builder()
                .status(StatusCode::NOT_FOUND)
                .body(Full::new(Bytes::from_static(b"Not Found: Session not found")).boxed())
                .expect("a status and a body make a valid response");
        }
    }
    response
}
