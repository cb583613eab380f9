//! The integration tests of `harnessx-durable`, one binary with a module per area;
//! `common` holds the shared helpers.
//!
//! Several areas run this binary again as a child process, selected by the test's path
//! (`crash_matrix::child`, `journal_stores::child`, `restate_failover::worker`) and an
//! environment variable of their own: a child that crashes, or many writers at once, each
//! need a process. In an ordinary run those child tests do nothing.

mod authorizer;
mod budgets;
mod common;
mod content_blobs;
mod context;
mod conversation;
mod crash_matrix;
mod decisions;
mod durable_spans;
mod fallback;
mod fork;
mod hook_decisions;
mod hooks;
mod journal_stores;
mod output;
mod pauses;
#[cfg(feature = "restate")]
mod restate_failover;
#[cfg(feature = "restate")]
mod restate_hooks;
#[cfg(feature = "restate")]
mod restate_runs;
mod runtime;
mod tool_choice;
