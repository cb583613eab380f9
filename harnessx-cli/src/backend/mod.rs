//! Where durable runs live: any [`DurableRuns`] of `harnessx::durable`, a SQLite journal
//! ([`local`], `--durable FILE`) or a Restate cluster ([`restate`], `--restate URL`),
//! with what the command line adds to it ([`Backend`]). `run`, `resume`, `approve` and
//! `answer` talk to it; `runs` reads a journal ([`place::Place::journal`]); what they
//! print is [`report`](crate::report)'s.

pub(crate) mod local;
pub(crate) mod place;
pub(crate) mod restate;

use std::sync::Arc;

use harnessx::ApprovalDecision;
use harnessx::agent::{Agent, RunState};
use harnessx::durable::{DurableRuns, ResumeOptions, StartOptions};

use crate::error::CliError;
use crate::report::Next;

/// A place where durable runs live: the durable crate's one trait, [`DurableRuns`],
/// whose every answer about a run is the one [`RunState`]; `start` and `resume` return
/// once the run completed, failed, stopped at a limit or stopped to wait for input.
/// Besides, how the printed commands that continue a run name the place, and the agent
/// that drives a journal's runs in this process (closed once a run stops here).
pub(crate) struct Backend {
    runs: Box<dyn DurableRuns>,
    next: Next,
    /// The agent driving runs here (a journal's), if any: closing it stops its MCP servers.
    agent: Option<Arc<Agent>>,
    /// Where `run` says the run is (` on URL` for a cluster), after its id.
    shown_as: String,
}

impl Backend {
    /// Starts run `run_id` on `prompt` with `options` (a typed run's output, the run's
    /// own limits and price, where its steps are said).
    pub(crate) async fn start(
        &self,
        run_id: &str,
        prompt: harnessx::agent::Prompt,
        options: StartOptions,
    ) -> Result<RunState, CliError> {
        errln!("harnessx: run id {run_id}{}", self.shown_as);
        let started = self.runs.start_prompt(run_id, prompt, options).await;
        self.stopped(started).await
    }

    /// Continues run `run_id` (after a pause, a crash, a failure or a limit), or follows
    /// it where it goes on by itself, with the changes `options` makes to its limits and
    /// price (the flags of `resume`).
    pub(crate) async fn resume(&self, run_id: &str, options: ResumeOptions) -> Result<RunState, CliError> {
        let resumed = self.runs.resume(run_id, options).await;
        self.stopped(resumed).await
    }

    /// Records a decision on a call the run waits to have approved.
    pub(crate) async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), CliError> {
        self.runs.approve(run_id, call_id, decision).await.map(drop).map_err(CliError::failed)
    }

    /// Records what happened to a call whose outcome was unknown.
    pub(crate) async fn answer(&self, run_id: &str, call_id: &str, text: &str) -> Result<(), CliError> {
        self.runs.answer(run_id, call_id, text).await.map(drop).map_err(|e| match e {
            // An answer that does not fit the server's schema: bad input, exit 2.
            harnessx::durable::DurableError::BadAnswer(line) => CliError::usage(line),
            e => CliError::failed(e),
        })
    }

    /// How the printed commands that continue a run name this place.
    pub(crate) fn next(&self) -> Next {
        self.next.clone()
    }

    /// Whether runs here go on on a cluster's workers.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.next, Next::Cluster { .. })
    }

    /// Where a run stands once it stopped in this process: nothing more runs here, so the
    /// agent's MCP servers stop.
    async fn stopped(
        &self,
        outcome: Result<RunState, harnessx::durable::DurableError>,
    ) -> Result<RunState, CliError> {
        if let Some(agent) = &self.agent {
            agent.close().await;
        }
        outcome.map_err(CliError::failed)
    }
}
