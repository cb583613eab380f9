//! Where durable runs live, behind one trait: [`Backend`], with a SQLite journal
//! ([`local`], `--durable FILE`) and a Restate cluster ([`restate`], `--restate URL`).
//! `run`, `resume`, `approve`, `answer` and `runs` talk to it; what they print is
//! [`report`](crate::report)'s.

pub(crate) mod local;
pub(crate) mod place;
pub(crate) mod restate;

use futures_util::future::BoxFuture;
use harnessx::ApprovalDecision;
use harnessx::agent::{Output, RunLimits, RunState};
use harnessx::durable::{JournalEntry, RunRecord, RunReport};

use crate::error::CliError;
use crate::report::Next;

/// A place where durable runs live. Every answer about a run is the one
/// [`RunState`]; `start` and `resume` return once the run completed, failed or stopped
/// to wait for input (or, on a backend where a run can be left running, once it is).
pub(crate) trait Backend {
    /// Starts run `run_id` on `prompt`; with `output`, a typed run (`--output-schema`);
    /// `limits`: the run's own (those set). `events`: say the run's steps on stderr as
    /// they happen, where the backend has them.
    fn start<'a>(
        &'a self,
        run_id: &'a str,
        prompt: &'a str,
        output: Option<Output>,
        limits: &'a RunLimits,
        events: bool,
    ) -> BoxFuture<'a, Result<RunState, CliError>>;

    /// Continues run `run_id` (after a pause, a crash, a failure or a limit), or follows
    /// it where it goes on by itself. `changes`: the limits the command line sets (a
    /// journal's run is driven by an agent built with them already; a cluster's run
    /// stopped at a limit is given them).
    fn resume<'a>(
        &'a self,
        run_id: &'a str,
        changes: &'a RunLimits,
        events: bool,
    ) -> BoxFuture<'a, Result<RunState, CliError>>;

    /// Records a decision on a call the run waits to have approved.
    fn approve<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<(), CliError>>;

    /// Records what happened to a call whose outcome was unknown.
    fn answer<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), CliError>>;

    /// Where run `run_id` stands now.
    fn status<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunState, CliError>>;

    /// The runs' headers, newest first (`runs list`).
    fn list(&self) -> Result<Vec<RunRecord>, CliError>;

    /// A run's report and its journal (`runs show`).
    fn show(&self, run_id: &str) -> Result<(RunReport, Vec<JournalEntry>), CliError>;

    /// How the printed commands that continue a run name this place.
    fn next(&self) -> Next;
}
