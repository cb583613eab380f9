//! [`DurableRuns`]: the durable operations (start, status, resume, approve, answer,
//! list) as one trait, implemented by [`AgentRuntime`](crate::AgentRuntime) (a journal:
//! SQLite or in memory) and, with the feature `restate`, by
//! `restate::RestateRuntime` (a cluster); and what a run is started or resumed with
//! besides its prompt.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use harnessx_agent::budget::{ModelPrice, RunLimits};
use harnessx_agent::output::Output;
use harnessx_agent::{Prompt, RunState};
use harnessx_core::ApprovalDecision;

use crate::DurableError;

/// One line per step of a run followed from outside (`turn 1: calls read (c1)`,
/// `retrying: ...`), as a backend whose runs are driven elsewhere has them (Restate's
/// workers). A run driven in this process (a journal's) says nothing here: its
/// [`AgentEvent`](harnessx_agent::AgentEvent)s are
/// [`AgentRuntime::start_with_events`](crate::AgentRuntime::start_with_events)'s.
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// Durable runs, wherever they live: every answer about a run is the one [`RunState`]
/// (status, answer or error, usage, what it waits for). `start` and `resume` return once
/// the run completed, failed, stopped at a limit or stopped to wait for input; a run
/// that failed is a [`RunState`] with [`RunStatus::Failed`](harnessx_agent::RunStatus::Failed)
/// and its error, and can be resumed. An `Err` means the operation was refused or could
/// not reach the runs (an id in use, a completed run, a run started by another agent, a
/// call the run does not wait on, a journal or cluster that cannot be reached).
///
/// The trait is object safe: `Box<dyn DurableRuns>` is any backend.
pub trait DurableRuns: Send + Sync {
    /// Starts run `run_id` (new) on `prompt`, its text and the media attached to it
    /// (kept with the run, so a resume sends the same bytes), with what `options` says
    /// besides.
    fn start_prompt<'a>(
        &'a self,
        run_id: &'a str,
        prompt: Prompt,
        options: StartOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>>;

    /// [`start_prompt`](Self::start_prompt) on a prompt of text alone.
    fn start<'a>(
        &'a self,
        run_id: &'a str,
        prompt: &'a str,
        options: StartOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        self.start_prompt(run_id, prompt.into(), options)
    }

    /// Continues run `run_id` after a pause, a crash, a failure or a limit (on a backend
    /// where a run goes on by itself once answered, follows it), with the changes
    /// `options` makes to its limits and price.
    fn resume<'a>(
        &'a self,
        run_id: &'a str,
        options: ResumeOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>>;

    /// Where run `run_id` stands now.
    fn status<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunState, DurableError>>;

    /// Records a decision on a call the run waits to have approved; returns where the
    /// run stands then (a journal's run goes on at its next `resume`, a cluster's by
    /// itself).
    fn approve<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<RunState, DurableError>>;

    /// Records whether a `manual` call whose outcome was unknown took effect (`text`
    /// becomes its result for the model); returns where the run stands then.
    fn answer<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<RunState, DurableError>>;

    /// Every run, newest first, as it stands.
    fn list(&self) -> BoxFuture<'_, Result<Vec<RunState>, DurableError>>;
}

/// What a run brings besides its prompt. The limits and price are the run's own: journaled
/// with it (SQLite) or carried by it (Restate), they hold on every resume, whichever
/// agent or worker drives it.
#[derive(Clone, Default)]
pub struct StartOptions {
    /// What a typed run must answer (`None`: free text). See
    /// [`AgentRuntime::start_with_output`](crate::AgentRuntime::start_with_output).
    pub output: Option<Output>,
    /// The run's limits: those set replace the agent's
    /// ([`AgentConfig::limits`](harnessx_agent::AgentConfig::limits)).
    pub limits: Option<RunLimits>,
    /// The model's price in place of the agent's, for the run's cost and a cost limit.
    pub price: Option<ModelPrice>,
    /// Where the steps of a run followed from outside are said (see [`Progress`]).
    pub progress: Option<Progress>,
}

impl std::fmt::Debug for StartOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartOptions")
            .field("output", &self.output.as_ref().map(|_| "Output"))
            .field("limits", &self.limits)
            .field("price", &self.price)
            .field("progress", &self.progress.as_ref().map(|_| "Progress"))
            .finish()
    }
}

/// What a resume changes: higher (or other) limits, those set replacing the run's, and
/// another model price. Both are the run's from then on; nothing set keeps what it had.
#[derive(Clone, Default)]
pub struct ResumeOptions {
    /// The limits set replace the run's (see [`RunLimits::with`]).
    pub limits: RunLimits,
    /// The model's price from now on, in place of the run's.
    pub price: Option<ModelPrice>,
    /// Where the steps of a run followed from outside are said (see [`Progress`]).
    pub progress: Option<Progress>,
}

impl ResumeOptions {
    /// Whether it changes nothing of the run's limits and price.
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.price.is_none()
    }
}

impl std::fmt::Debug for ResumeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeOptions")
            .field("limits", &self.limits)
            .field("price", &self.price)
            .field("progress", &self.progress.as_ref().map(|_| "Progress"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_changes_nothing_unless_it_sets_a_limit_or_a_price() {
        assert!(ResumeOptions::default().is_empty());
        let progress: Progress = Arc::new(|_: &str| {});
        assert!(ResumeOptions { progress: Some(progress), ..ResumeOptions::default() }.is_empty());
        let limits = RunLimits { max_tokens: Some(10), ..RunLimits::default() };
        assert!(!ResumeOptions { limits, ..ResumeOptions::default() }.is_empty());
        assert!(
            !ResumeOptions { price: Some(ModelPrice::new(1.0, 1.0)), ..ResumeOptions::default() }.is_empty()
        );
    }

    #[test]
    fn options_show_what_they_carry_in_debug() {
        let options = StartOptions { limits: Some(RunLimits::default()), ..StartOptions::default() };
        let shown = format!("{options:?}");
        assert!(shown.contains("limits: Some(") && shown.contains("output: None"), "{shown}");
    }
}
