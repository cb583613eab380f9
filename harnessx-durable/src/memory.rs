//! [`MemoryJournal`]: journals kept in the process, for tests and for runs that need not
//! outlive it.
//!
//! It keeps the same promises as [`SqliteJournal`](crate::SqliteJournal) except the one
//! that needs a disk: seqs from 1 without gaps, an append is all or nothing, runs listed
//! newest first. Everything is lost when the last clone is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::journal::{Entry, JournalEntry, JournalError, JournalStore, RunLock, RunRecord, RunStatus};

/// Milliseconds since the Unix epoch (0 for a clock set before it): the journals' clock.
pub(crate) use harnessx_core::time::now_unix_ms as now_ms;

/// Journals in memory, media parts kept as they are (shared, not copied). Cloning it shares the runs (the clones are handles on one
/// journal), so two runtimes given clones see each other's writes.
///
/// ```
/// use harnessx_durable::{Entry, JournalStore, MemoryJournal, RunRecord, RunStatus};
///
/// let journal = MemoryJournal::new();
/// let run = RunRecord {
///     run_id: "r1".into(),
///     prompt: "hello".into(),
///     prompt_parts: Default::default(),
///     fingerprint: "f".into(),
///     fingerprint_summary: "tools: ; model: m".into(),
///     status: RunStatus::Running,
///     created_at_ms: 0,
///     updated_at_ms: 0,
///     output: None,
/// };
/// journal.create_run(&run).unwrap();
/// let other = journal.clone();
/// let last = other
///     .append("r1", &[Entry::Final { output: "hi".into() }], Some((RunStatus::Completed, Some("hi".into()))))
///     .unwrap();
/// assert_eq!(last, 1);
/// let (header, entries) = journal.load_run("r1").unwrap().unwrap();
/// assert_eq!(header.status, RunStatus::Completed);
/// assert_eq!(entries[0].seq, 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryJournal {
    runs: Arc<Mutex<HashMap<String, Run>>>,
    /// Runs a driver holds (see `JournalStore::lock_run`).
    locked: Arc<Mutex<std::collections::HashSet<String>>>,
}

/// Releases a run of a [`MemoryJournal`] when dropped.
struct MemoryLock {
    locked: Arc<Mutex<std::collections::HashSet<String>>>,
    run_id: String,
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        self.locked.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.run_id);
    }
}

/// One run: its header and its entries in seq order (entry `i` has seq `i + 1`).
#[derive(Debug)]
struct Run {
    header: RunRecord,
    entries: Vec<JournalEntry>,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, Run>> {
        // Nothing below can panic half-way through a change, so a poisoned lock still
        // guards consistent data.
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl JournalStore for MemoryJournal {
    fn create_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        let mut runs = self.runs();
        if runs.contains_key(&run.run_id) {
            return Err(JournalError::RunExists(run.run_id.clone()));
        }
        runs.insert(run.run_id.clone(), Run { header: run.clone(), entries: Vec::new() });
        Ok(())
    }

    fn load_run(&self, run_id: &str) -> Result<Option<(RunRecord, Vec<JournalEntry>)>, JournalError> {
        Ok(self.runs().get(run_id).map(|run| (run.header.clone(), run.entries.clone())))
    }

    fn append(
        &self,
        run_id: &str,
        entries: &[Entry],
        status: Option<(RunStatus, Option<String>)>,
    ) -> Result<u64, JournalError> {
        let mut runs = self.runs();
        let run = runs.get_mut(run_id).ok_or_else(|| JournalError::NoSuchRun(run_id.to_owned()))?;
        let at_ms = now_ms();
        let first = run.entries.len() as u64 + 1;
        run.entries.extend(entries.iter().zip(first..).map(|(entry, seq)| JournalEntry {
            seq,
            at_ms,
            entry: entry.clone(),
        }));
        run.header.updated_at_ms = at_ms;
        if let Some((status, output)) = status {
            run.header.status = status;
            run.header.output = output;
        }
        Ok(run.entries.len() as u64)
    }

    fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError> {
        if !self.locked.lock().unwrap_or_else(|e| e.into_inner()).insert(run_id.to_owned()) {
            return Err(JournalError::Busy(run_id.to_owned()));
        }
        Ok(Box::new(MemoryLock { locked: self.locked.clone(), run_id: run_id.to_owned() }))
    }

    fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
        let mut headers: Vec<RunRecord> = self
            .runs()
            .values()
            .map(|run| RunRecord { prompt_parts: Default::default(), ..run.header.clone() })
            .collect();
        // Newest first; runs created in the same millisecond by id, descending (as the
        // SQLite journal orders them).
        headers.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| b.run_id.cmp(&a.run_id)));
        Ok(headers)
    }
}
