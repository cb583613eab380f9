//! The two Restate services a worker serves.
//!
//! - `HarnessxRun`, a workflow keyed by run id, drives the agent: each model request is
//!   a journaled `ctx.run`; each turn's calls fan out as invocations of `HarnessxTool`;
//!   ASK calls and `manual` calls with an unknown outcome wait on durable promises that
//!   its `approve` and `answer` handlers resolve, from any process.
//! - `HarnessxTool`, a virtual object keyed `"{run}/{call}"`, runs one call: it journals
//!   a start, then the execution. A start replayed with no execution journaled means an
//!   earlier attempt died mid-call: a `manual` tool is then not run again.
//!
//! `wire` holds what goes over the wire between them and their callers, `workflow` the
//! run, `feed` the run's `--json` events in its state, `tool` the call.

pub(crate) mod blobs;
mod feed;
mod tool;
mod wire;
mod workflow;

use std::sync::Arc;

use restate_sdk::prelude::*;

use harnessx_agent::Agent;
use harnessx_core::content::store::BlobStore;

pub use tool::HarnessxTool;
pub use wire::{Answer, Approval, Executed, Invocation, LimitStop, RunInput, Unknown, WorkerConfig};
pub use workflow::HarnessxRun;

/// What both services share: the agent, its configuration, and the blob store for media
/// too large for a journal entry (see `blobs`).
struct Shared {
    agent: Arc<Agent>,
    config: WorkerConfig,
    blobs: Option<Arc<dyn BlobStore>>,
}

fn terminal(e: impl std::fmt::Display) -> HandlerError {
    TerminalError::new(e.to_string()).into()
}

/// The endpoint serving both services over `agent`.
pub(crate) fn endpoint(agent: Arc<Agent>, blobs: Option<Arc<dyn BlobStore>>) -> Endpoint {
    let shared = Arc::new(Shared { config: WorkerConfig::of(&agent), agent, blobs });
    Endpoint::builder().bind(HarnessxRun(shared.clone())).bind(HarnessxTool(shared)).build()
}
