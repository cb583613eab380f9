//! Durable agent runs: every step journaled before it is acted on, recovery after a
//! crash that never repeats a `manual` tool, approvals that outlive the process.
//!
//! See `docs/durable.md`.

pub mod journal;
pub mod memory;
pub mod runtime;
pub mod sqlite;

pub use journal::{Entry, JournalEntry, JournalError, JournalStore, RunLock, RunRecord, RunStatus};
pub use memory::MemoryJournal;
pub use runtime::{AgentRuntime, DurableError, RunReport, arguments_hash};
pub use sqlite::{SqliteJournal, Synchronous};
#[cfg(feature = "restate")]
pub mod restate;
