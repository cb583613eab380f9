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
mod service;

use std::sync::Arc;

use harnessx_agent::Agent;
use restate_sdk::http_server::HttpServer;

pub use client::{RestateRuntime, RunState, register};
pub use service::{Answer, Approval, Executed, HarnessxRun, HarnessxTool, Invocation, Unknown, WorkerConfig};

/// Serves the run workflow and the tool object for `agent` on `listener` until `stop`
/// completes. Every worker of a cluster must serve the same tools, model and system
/// prompt: a step reaching a worker whose [`WorkerConfig`] differs from the one its run
/// started with fails (and Restate retries it) with an error naming both.
pub async fn serve(
    agent: Arc<Agent>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()>,
) {
    HttpServer::new(service::endpoint(agent)).serve_with_cancel(listener, stop).await;
}
