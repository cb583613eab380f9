//! Durable runs on a Restate cluster (feature `restate`): the same recovery rules as
//! [`AgentRuntime`](crate::AgentRuntime), with Restate's journal instead of a SQLite
//! file, so that runs outlive the machine that started them.
//!
//! - A worker ([`serve`], `harnessx worker`) serves the agent's endpoint: the workflow
//!   `HarnessxRun` (one per run id) and the object `HarnessxTool` (one per call).
//!   [`register`] tells the cluster's admin API where it is.
//! - [`RestateRuntime`] starts, follows and answers runs from any process.
//!
//! See `docs/durable.md`, "On many machines".

mod client;
mod runs;
mod service;

use std::sync::Arc;
use std::time::Duration;

use harnessx_agent::Agent;
use harnessx_core::content::store::BlobStore;
use harnessx_infra::http_server::Ended;
use hyper::server::conn::http2;
use hyper_util::rt::TokioExecutor;
use restate_sdk::hyper::HyperEndpoint;

pub use client::{RestateRuntime, RunOptions, RunState, register};
pub use service::blobs::INLINE_MAX;
pub use service::{
    Answer, Approval, Executed, HarnessxRun, HarnessxTool, Invocation, LimitStop, RunInput, Unknown,
    WorkerConfig,
};

/// Serves the run workflow and the tool object for `agent` on `listener` until `stop`
/// completes, then lets open connections finish (at most 10 s). Every worker of a
/// cluster must serve the same tools, model and system prompt: a step reaching a worker
/// whose [`WorkerConfig`] differs from the one its run started with fails (and Restate
/// retries it) with an error naming both.
pub async fn serve(
    agent: Arc<Agent>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()>,
) {
    serve_with_blobs(agent, None, listener, stop).await;
}

/// [`serve`], keeping media larger than [`INLINE_MAX`] (a tool's 5 MB screenshot) in
/// `blobs`, a store every worker and client of the cluster shares (a
/// [`FolderBlobStore`](crate::FolderBlobStore) on a shared file system), and only a
/// reference to them in the run's journal. Without one (`None`, or [`serve`]) such a
/// medium fails its run with an error saying to configure one; a reference to a blob
/// the store does not have fails it with `blob sha256:… is missing from the blob store
/// at PATH`.
pub async fn serve_with_blobs(
    agent: Arc<Agent>,
    blobs: Option<Arc<dyn BlobStore>>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()>,
) {
    // The SDK's `HttpServer`, with TCP_NODELAY (the workspace's accept loop sets it): each
    // journaled step is a small HTTP/2 frame, and Nagle's algorithm held each one back (a
    // run took twice as long).
    let endpoint = HyperEndpoint::new(service::endpoint(agent, blobs));
    let ended =
        harnessx_infra::http_server::serve(listener, stop, Duration::from_secs(10), "Restate worker", |io| {
            http2::Builder::new(TokioExecutor::new()).serve_connection(io, endpoint.clone())
        })
        .await;
    if ended == Ended::StillOpen {
        tracing::warn!("connections still open 10 s after the worker was told to stop");
    }
}
