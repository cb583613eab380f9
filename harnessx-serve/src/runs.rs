//! The runs this server drives: each in a task of its own, its events forwarded to the
//! run's event log as they come; a run that pauses leaves a `needs_input` event, one that
//! fails an `error` event. A cancelled run's task is stopped and the run marked failed.
//! On start, the runs the journal says were going on (a server killed mid-run) go on.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use harnessx_agent::{AgentEvent, Prompt, RunLimits, RunState, RunStatus};
use harnessx_durable::{
    AgentRuntime, DurableError, Entry, JournalStore, ResumeOptions, SqliteJournal, StartOptions,
};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use crate::events::EventLog;

/// What the journal says of a cancelled run.
pub(crate) const CANCELLED: &str = "cancelled";

/// How a run is driven now.
pub(crate) enum Drive {
    /// A new run on `prompt`, with its own limits.
    Start { prompt: Prompt, limits: Option<RunLimits> },
    /// A new turn of a conversation, after run `previous`.
    Continue { previous: String, prompt: Prompt },
    /// The run goes on (after an approval, an answer, higher limits, a restart).
    Resume { limits: RunLimits },
}

/// The runs of one journal this server drives.
pub(crate) struct Runs {
    pub(crate) runtime: AgentRuntime,
    pub(crate) journal: Arc<SqliteJournal>,
    pub(crate) log: Arc<EventLog>,
    /// The tasks of the runs going on now.
    tasks: Mutex<HashMap<String, JoinHandle<()>>>,
}

impl Runs {
    pub(crate) fn new(runtime: AgentRuntime, journal: Arc<SqliteJournal>) -> Arc<Self> {
        let log = Arc::new(EventLog::new(journal.clone()));
        Arc::new(Self { runtime, journal, log, tasks: Mutex::default() })
    }

    /// Whether run `run_id` is being driven by this server now.
    pub(crate) fn driving(&self, run_id: &str) -> bool {
        self.tasks().get(run_id).is_some_and(|t| !t.is_finished())
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drives run `run_id` in a task of its own. The drive is first polled here, so a new
    /// run's record is in the journal when this returns (the first thing a start does, before
    /// anything waits), and a start that fails at once (a run id taken) is the caller's error.
    pub(crate) async fn spawn(self: &Arc<Self>, run_id: String, drive: Drive) -> Result<(), DurableError> {
        if self.driving(&run_id) {
            return Err(harnessx_durable::JournalError::Busy(run_id).into());
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let runs = self.clone();
        let id = run_id.clone();
        let mut driving: Pin<Box<dyn Future<Output = Result<RunState, DurableError>> + Send>> =
            Box::pin(async move {
                match drive {
                    Drive::Start { prompt, limits } => {
                        let options = StartOptions { limits, ..StartOptions::default() };
                        runs.runtime.start_with(&id, prompt, options, Some(tx)).await
                    }
                    Drive::Continue { previous, prompt } => {
                        runs.runtime.continue_conversation(&id, &previous, prompt, Some(tx)).await
                    }
                    Drive::Resume { limits } => {
                        let options = ResumeOptions { limits, ..ResumeOptions::default() };
                        runs.runtime.resume_with(&id, options, Some(tx)).await
                    }
                }
            });
        // (A first poll with a waker that does nothing: the task polls it again at once,
        // with its own.)
        let first = driving.as_mut().poll(&mut Context::from_waker(futures_util::task::noop_waker_ref()));
        let first = match first {
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Ready(Ok(state)) => Some(state),
            Poll::Pending => None,
        };
        let runs = self.clone();
        let id = run_id.clone();
        let task = tokio::spawn(async move {
            let forward = tokio::spawn(forward(runs.log.clone(), id.clone(), rx));
            let outcome = match first {
                Some(state) => Ok(state),
                None => driving.await,
            };
            let _ = forward.await;
            runs.ended(&id, outcome).await;
        });
        self.tasks().insert(run_id, task);
        Ok(())
    }

    /// Says in the log how a drive ended, where its events did not: a pause, a failure.
    async fn ended(&self, run_id: &str, outcome: Result<RunState, DurableError>) {
        let event = match outcome {
            Ok(state) if state.status == RunStatus::NeedsInput => {
                json!({"type": "needs_input", "needs_input": state.needs_input})
            }
            Ok(_) => return,
            Err(e) => json!({"type": "error", "message": e.to_string()}),
        };
        if let Err(e) = self.log.append(run_id, vec![event]).await {
            tracing::warn!(run_id, error = %e, "the end of a run could not be written to its event log");
        }
    }

    /// Stops run `run_id`'s task, if it has one here, and marks the run failed
    /// (`cancelled`) unless it had ended. Its event log says so.
    pub(crate) async fn cancel(&self, run_id: &str) -> Result<(), DurableError> {
        let task = self.tasks().remove(run_id);
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
        let report = self.runtime.status(run_id)?;
        if matches!(report.state.status, RunStatus::Running | RunStatus::NeedsInput | RunStatus::LimitReached)
        {
            self.journal.append(
                run_id,
                &[Entry::Failed { error: CANCELLED.into() }],
                Some((RunStatus::Failed, Some(CANCELLED.into()))),
            )?;
            let event = json!({"type": "error", "message": CANCELLED});
            self.log.append(run_id, vec![event]).await?;
        }
        Ok(())
    }

    /// Drives again the runs the journal says were going on (the server that drove them
    /// was killed): each resumes from its journal, nothing journaled repeated.
    pub(crate) async fn recover(self: &Arc<Self>) -> Result<Vec<String>, DurableError> {
        let running: Vec<String> = self
            .journal
            .list_runs()?
            .into_iter()
            .filter(|r| r.status == RunStatus::Running)
            .map(|r| r.run_id)
            .collect();
        for run_id in &running {
            if let Err(e) = self.spawn(run_id.clone(), Drive::Resume { limits: RunLimits::default() }).await {
                tracing::warn!(run_id, error = %e, "a run that was going on could not be resumed");
            }
        }
        Ok(running)
    }

    /// Stops every run's task (the server is stopping; the journal keeps them running,
    /// and the next start goes on with them).
    pub(crate) fn stop_all(&self) {
        for (_, task) in self.tasks().drain() {
            task.abort();
        }
    }
}

/// Writes a drive's events to its log as they come, in batches (what is ready at once
/// goes in one transaction).
async fn forward(log: Arc<EventLog>, run_id: String, mut events: UnboundedReceiver<AgentEvent>) {
    while let Some(first) = events.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = events.try_recv() {
            batch.push(more);
        }
        let values: Vec<Value> = batch.iter().filter_map(|e| serde_json::to_value(e).ok()).collect();
        if let Err(e) = log.append(&run_id, values).await {
            tracing::warn!(run_id, error = %e, "events of a run could not be written to its log");
        }
    }
}
