//! The API over runs on a Restate cluster (`harnessx serve --restate URL`): the cluster's
//! workers drive the runs; this server starts them, answers what they wait for and
//! streams their events, which the workers keep in each run's state. It holds nothing of
//! its own: any number of servers can front one cluster, and a server killed and started
//! again finds every run where the cluster has it.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use harnessx_agent::{NeedsInputKind, Prompt, RunLimits, RunState, RunStatus};
use harnessx_core::ApprovalDecision;
use harnessx_durable::restate::{RestateRuntime, RunOptions, WorkerConfig};
use harnessx_durable::{DurableError, JournalError};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::events::is_last;

/// How long a stream waits between looks at a run that has nothing new: 100 ms,
/// doubling up to one second while nothing comes.
const FIRST_POLL: Duration = Duration::from_millis(100);
const LAST_POLL: Duration = Duration::from_secs(1);

/// The most runs `GET /v1/runs` shows from a cluster (newest first): each is a few
/// requests to the cluster.
const LISTED: usize = 200;

/// Runs on one Restate cluster.
pub(crate) struct Cluster {
    pub(crate) runtime: RestateRuntime,
    /// The configuration the workers must have (the server's agent flags'), when known.
    pub(crate) expect: Option<WorkerConfig>,
}

/// A cluster's run as the API shows it: its state, with its id.
fn summary(run_id: &str, state: &RunState) -> Value {
    let mut shown = serde_json::to_value(state).unwrap_or_else(|_| json!({}));
    if let Some(object) = shown.as_object_mut() {
        object.remove("messages");
        object.insert("run_id".into(), json!(run_id));
    }
    shown
}

impl Cluster {
    /// Starts run `run_id` on `prompt` with its own `limits`; it goes on on the workers.
    pub(crate) async fn start(
        &self,
        run_id: &str,
        prompt: &Prompt,
        limits: Option<&RunLimits>,
    ) -> Result<(), ApiError> {
        let options = RunOptions {
            expect: self.expect.as_ref(),
            limits,
            parts: Some(&prompt.parts),
            ..RunOptions::default()
        };
        self.runtime.submit_run(run_id, &prompt.text, options).await.map_err(|e| match e {
            DurableError::Journal(JournalError::RunExists(_)) => ApiError::conflict(format!(
                "a run with id {run_id:?} already exists on the cluster; start one with another id"
            )),
            e => e.into(),
        })
    }

    /// `GET /v1/runs`: the runs the cluster keeps (its admin API says which), newest first.
    pub(crate) async fn list(&self) -> Result<Value, ApiError> {
        let ids = self.runtime.run_ids().await.map_err(|e| ApiError::bad_request(e.to_string()))?;
        let mut shown = Vec::new();
        for run_id in ids.iter().take(LISTED) {
            match self.runtime.status(run_id).await {
                Ok(state) => shown.push(summary(run_id, &state)),
                Err(e) => tracing::warn!(run_id, error = %e, "a run on the cluster could not be read"),
            }
        }
        Ok(json!({ "runs": shown }))
    }

    /// `GET /v1/runs/{id}`.
    pub(crate) async fn show(&self, run_id: &str) -> Result<Value, ApiError> {
        let state = self.runtime.status(run_id).await?;
        Ok(summary(run_id, &state))
    }

    /// Checks that run `run_id` waits for `kind` of `call_id` (409 naming what it waits
    /// for otherwise), before the cluster is asked.
    async fn awaits(&self, run_id: &str, call_id: &str, kind: NeedsInputKind) -> Result<(), ApiError> {
        let state = self.runtime.status(run_id).await?;
        if state
            .needs_input
            .iter()
            .any(|n| n.call_id == call_id && n.kind.takes_answer() == kind.takes_answer())
        {
            return Ok(());
        }
        let what = kind.awaited();
        let waiting = match state.needs_input.as_slice() {
            [] => format!(" (it is {})", status_word(state.status)),
            needs => {
                let calls: Vec<String> =
                    needs.iter().map(|n| format!("{} of {} ({:?})", n.call_id, n.tool, n.kind)).collect();
                format!("; it waits for {}", calls.join(", "))
            }
        };
        Err(ApiError::conflict(format!(
            "run {run_id:?} is not waiting for {what} of call {call_id:?}{waiting}"
        )))
    }

    /// `POST /v1/runs/{id}/approvals/{call_id}`: the run goes on by itself on the workers.
    pub(crate) async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<Value, ApiError> {
        self.awaits(run_id, call_id, NeedsInputKind::Approval).await?;
        self.runtime.approve(run_id, call_id, decision).await?;
        self.went_on(run_id).await
    }

    /// `POST /v1/runs/{id}/answers/{call_id}`.
    pub(crate) async fn answer(&self, run_id: &str, call_id: &str, text: &str) -> Result<Value, ApiError> {
        self.awaits(run_id, call_id, NeedsInputKind::Outcome).await?;
        self.runtime.answer(run_id, call_id, text).await?;
        self.went_on(run_id).await
    }

    /// `{"run_id", "status"}` after an answer: `needs_input` while more answers are awaited.
    async fn went_on(&self, run_id: &str) -> Result<Value, ApiError> {
        let state = self.runtime.status(run_id).await?;
        let status = if state.status == RunStatus::NeedsInput { "needs_input" } else { "running" };
        Ok(json!({ "run_id": run_id, "status": status }))
    }

    /// `POST /v1/runs/{id}/resume`: a run stopped at a limit goes on under `limits` (the
    /// fields set replace the run's); any other run goes on by itself on a cluster, or
    /// has ended.
    pub(crate) async fn resume(&self, run_id: &str, limits: RunLimits) -> Result<Value, ApiError> {
        let state = self.runtime.status(run_id).await?;
        match state.status {
            RunStatus::LimitReached => {
                self.runtime.raise(run_id, &limits).await?;
                Ok(json!({ "run_id": run_id, "status": "running" }))
            }
            RunStatus::Running => Err(ApiError::conflict(format!(
                "run {run_id:?} is going on already (on the cluster's workers)"
            ))),
            RunStatus::NeedsInput => Err(ApiError::conflict(format!(
                "run {run_id:?} waits for input; approve or answer its calls and it goes on by itself"
            ))),
            RunStatus::Failed => Err(ApiError::conflict(format!(
                "run {run_id:?} failed on the cluster, where a failed run cannot be resumed; start a new run"
            ))),
            _ => Err(ApiError::conflict(format!("run {run_id:?} has ended; start a new run"))),
        }
    }

    /// `POST /v1/runs/{id}/cancel`: through the cluster's admin API; answers the run as
    /// it stands once the cancellation took (a few seconds at most).
    pub(crate) async fn cancel(&self, run_id: &str) -> Result<Value, ApiError> {
        self.runtime.status(run_id).await?;
        self.runtime.cancel(run_id).await.map_err(|e| ApiError::bad_request(e.to_string()))?;
        let mut state = self.runtime.status(run_id).await?;
        for _ in 0..50 {
            if !matches!(state.status, RunStatus::Running | RunStatus::NeedsInput | RunStatus::LimitReached) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            state = self.runtime.status(run_id).await?;
        }
        Ok(summary(run_id, &state))
    }

    /// `GET /v1/runs/{id}/events`: the run's events from number `from`, then those the
    /// workers add, until the run ends, fails or pauses. A run that failed ends with an
    /// `error` event numbered after its last (it has no more).
    pub(crate) async fn events(
        self: &std::sync::Arc<Self>,
        run_id: String,
        from: u64,
    ) -> Result<Response, ApiError> {
        self.runtime.status(&run_id).await?;
        let cluster = self.clone();
        // State: the next event's number, events read and not yet sent, whether the last
        // sent ends the stream, how many looks found nothing.
        let stream = futures_util::stream::unfold(
            (from, Vec::<String>::new().into_iter(), false, 0u32),
            move |(mut next, mut pending, ended, mut idle)| {
                let cluster = cluster.clone();
                let run_id = run_id.clone();
                async move {
                    loop {
                        if let Some(data) = pending.next() {
                            let seq = next;
                            next += 1;
                            let last = is_last(&data);
                            let event = Event::default().id(seq.to_string()).data(data);
                            return Some((Ok::<_, Infallible>(event), (next, pending, last, 0)));
                        }
                        if ended {
                            // Nothing came after an end: one more look, then the stream ends.
                            match cluster.runtime.feed(&run_id, next).await {
                                Ok(rows) if !rows.is_empty() => {
                                    pending = rows.into_iter();
                                    continue;
                                }
                                _ => return None,
                            }
                        }
                        let rows = match cluster.runtime.feed(&run_id, next).await {
                            Ok(rows) => rows,
                            Err(e) => {
                                let error = json!({"type": "error", "message": e.to_string()});
                                let event = Event::default().data(error.to_string());
                                return Some((Ok(event), (next, pending, true, idle)));
                            }
                        };
                        if !rows.is_empty() {
                            pending = rows.into_iter();
                            continue;
                        }
                        // Nothing new: has the run failed (its events end with no `error`
                        // of their own)?
                        match cluster.runtime.status(&run_id).await {
                            Ok(state) if state.status == RunStatus::Failed => {
                                let message = state.error.unwrap_or_else(|| "the run failed".into());
                                let error = json!({"type": "error", "message": message});
                                let event = Event::default().id(next.to_string()).data(error.to_string());
                                return Some((Ok(event), (next + 1, pending, true, idle)));
                            }
                            // Ended with no event to say so (started by workers that kept
                            // none): nothing will come.
                            Ok(state)
                                if matches!(state.status, RunStatus::Completed | RunStatus::Blocked) =>
                            {
                                return None;
                            }
                            _ => {}
                        }
                        let pause = FIRST_POLL.saturating_mul(1 << idle.min(4)).min(LAST_POLL);
                        idle = idle.saturating_add(1);
                        tokio::time::sleep(pause).await;
                    }
                }
            },
        );
        Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
    }
}

/// A status as a word, for errors.
fn status_word(status: RunStatus) -> String {
    serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}
