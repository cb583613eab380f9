#![doc = include_str!("../README.md")]

pub mod blob_store;
pub mod journal;
pub mod memory;
pub mod runs;
pub mod runtime;
pub mod sqlite;

pub use blob_store::FolderBlobStore;
pub use journal::{Entry, JournalEntry, JournalError, JournalStore, RunLock, RunRecord, RunStatus};
pub use memory::MemoryJournal;
pub use runs::{DurableRuns, Progress, ResumeOptions, StartOptions};
pub use runtime::{AgentRuntime, DurableError, ForkedFrom, RunReport, arguments_hash};
pub use sqlite::{SqliteJournal, Synchronous};
#[cfg(feature = "restate")]
pub mod restate;
