//! [`GroupCommit`]: call results committed as they finish, several to a commit.

use std::sync::{Arc, Mutex};

use crate::journal::{Entry, JournalError, JournalStore};

/// Commits call results as they finish, off the async threads: whatever finished while
/// the previous commit was being written goes into the next one (group commit).
pub(super) struct GroupCommit {
    journal: Arc<dyn JournalStore>,
    run_id: String,
    state: Mutex<Pending>,
    idle: tokio::sync::Notify,
}

#[derive(Default)]
struct Pending {
    queue: Vec<Entry>,
    busy: bool,
    error: Option<JournalError>,
}

impl GroupCommit {
    pub(super) fn new(journal: Arc<dyn JournalStore>, run_id: String) -> Arc<Self> {
        Arc::new(Self { journal, run_id, state: Mutex::default(), idle: tokio::sync::Notify::new() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues an entry; starts a committer when none is running.
    pub(super) fn push(self: &Arc<Self>, entry: Entry) {
        let start = {
            let mut state = self.lock();
            state.queue.push(entry);
            !std::mem::replace(&mut state.busy, true)
        };
        if start {
            let me = self.clone();
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn_blocking(move || me.drain())),
                Err(_) => me.drain(),
            }
        }
    }

    fn drain(&self) {
        loop {
            let entries = {
                let mut state = self.lock();
                if state.queue.is_empty() {
                    state.busy = false;
                    drop(state);
                    self.idle.notify_waiters();
                    return;
                }
                std::mem::take(&mut state.queue)
            };
            if let Err(e) = self.journal.append(&self.run_id, &entries, None) {
                self.lock().error.get_or_insert(e);
            }
        }
    }

    /// Waits until everything queued is committed.
    pub(super) async fn flush(&self) -> Result<(), JournalError> {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if !state.busy && state.queue.is_empty() {
                    return state.error.take().map_or(Ok(()), Err);
                }
            }
            notified.await;
        }
    }
}
