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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::journal::{JournalEntry, RunLock, RunRecord, RunStatus};
    use crate::memory::MemoryJournal;

    /// A journal that records how many entries each commit held, and can hold its first
    /// commit until told to go on, or refuse every commit.
    #[derive(Default)]
    struct Watched {
        inner: MemoryJournal,
        commits: Mutex<Vec<usize>>,
        /// Told when the first commit starts; that commit then waits for `go`.
        entered: Mutex<Option<mpsc::Sender<()>>>,
        go: Mutex<Option<mpsc::Receiver<()>>>,
        refuse: bool,
    }

    impl JournalStore for Watched {
        fn create_run(&self, run: &RunRecord) -> Result<(), JournalError> {
            self.inner.create_run(run)
        }
        fn load_run(&self, run_id: &str) -> Result<Option<(RunRecord, Vec<JournalEntry>)>, JournalError> {
            self.inner.load_run(run_id)
        }
        fn append(
            &self,
            run_id: &str,
            entries: &[Entry],
            status: Option<(RunStatus, Option<String>)>,
        ) -> Result<u64, JournalError> {
            if let Some(entered) = self.entered.lock().unwrap().take() {
                entered.send(()).unwrap();
                let go = self.go.lock().unwrap().take().unwrap();
                go.recv().unwrap();
            }
            self.commits.lock().unwrap().push(entries.len());
            if self.refuse {
                return Err(JournalError::Storage("disk full".into()));
            }
            self.inner.append(run_id, entries, status)
        }
        fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
            self.inner.list_runs()
        }
        fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError> {
            self.inner.lock_run(run_id)
        }
    }

    fn answer(call_id: &str) -> Entry {
        Entry::Answer { call_id: call_id.into(), text: "done".into() }
    }

    fn with_run(journal: Watched) -> Arc<Watched> {
        let record = RunRecord {
            run_id: "r".into(),
            prompt: "p".into(),
            prompt_parts: Default::default(),
            fingerprint: String::new(),
            fingerprint_summary: String::new(),
            status: RunStatus::Running,
            created_at_ms: 0,
            updated_at_ms: 0,
            output: None,
        };
        journal.create_run(&record).unwrap();
        Arc::new(journal)
    }

    fn committed(journal: &Watched) -> Vec<Entry> {
        journal.load_run("r").unwrap().unwrap().1.into_iter().map(|e| e.entry).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_finishes_during_a_commit_goes_into_the_next_one_together() {
        let (entered_tx, entered) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        let journal = with_run(Watched {
            entered: Mutex::new(Some(entered_tx)),
            go: Mutex::new(Some(go_rx)),
            ..Watched::default()
        });
        let writer = GroupCommit::new(journal.clone(), "r".into());
        writer.push(answer("c1"));
        // The first commit is being written: the next two wait, then go in one commit.
        entered.recv().unwrap();
        writer.push(answer("c2"));
        writer.push(answer("c3"));
        go.send(()).unwrap();
        writer.flush().await.unwrap();
        assert_eq!(*journal.commits.lock().unwrap(), [1, 2]);
        assert_eq!(committed(&journal), [answer("c1"), answer("c2"), answer("c3")], "in the order pushed");
    }

    #[test]
    fn outside_an_async_runtime_a_push_commits_before_it_returns() {
        let journal = with_run(Watched::default());
        let writer = GroupCommit::new(journal.clone(), "r".into());
        writer.push(answer("c1"));
        assert_eq!(committed(&journal), [answer("c1")]);
        let flushed = tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(writer.flush());
        assert_eq!(flushed, Ok(()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_commit_is_the_flushs_error_once() {
        let journal = with_run(Watched { refuse: true, ..Watched::default() });
        let writer = GroupCommit::new(journal.clone(), "r".into());
        writer.push(answer("c1"));
        assert_eq!(writer.flush().await, Err(JournalError::Storage("disk full".into())));
        // Reported once: the caller has it, and nothing is queued any more.
        assert_eq!(writer.flush().await, Ok(()));
        assert!(committed(&journal).is_empty());
    }

    #[tokio::test]
    async fn flushing_with_nothing_queued_returns_at_once() {
        let journal = with_run(Watched::default());
        let writer = GroupCommit::new(journal.clone(), "r".into());
        assert_eq!(writer.flush().await, Ok(()));
        assert!(journal.commits.lock().unwrap().is_empty());
    }
}
