//! Streamable HTTP: rmcp's tower service (sessions, SSE, the Host guard) on hyper's
//! HTTP/1.1 connections, with an accept loop that stops on a token. No web framework:
//! the service answers every path, so there is nothing to route.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::session::{Session, Shared};
use crate::McpError;

/// How long open connections may take to finish once the server is told to stop.
const DRAIN: Duration = Duration::from_secs(5);

/// Accepts connections on `listener` until `stop` is cancelled.
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
    let service = StreamableHttpService::new(
        move || Ok(Session::new(shared.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let service = TowerToHyperService::new(service);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, remote) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors, say: wait a little rather than spin.
                        tracing::warn!("accepting an MCP connection: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Each message is a small request or SSE event; do not hold them back.
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!("TCP_NODELAY on {remote}: {e}");
                }
                let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service.clone());
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!("serving MCP to {remote}: {e}");
                    }
                });
            }
            () = stop.cancelled() => break,
        }
    }
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::debug!("MCP connections still open {} s after the server was told to stop", DRAIN.as_secs());
    }
    Ok(())
}
