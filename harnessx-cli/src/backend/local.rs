//! Runs in a SQLite journal (`--durable FILE`), over `harnessx::durable::AgentRuntime`.
//!
//! A run is driven in this process, by the agent its flags make; `resume` builds that
//! agent again from the flags on its own command line, and the journal's fingerprint
//! (tools, model, system prompt) refuses another one. What the fingerprint does not
//! cover (`--base-path`, the permission flags, `--yes`) is the caller's to repeat, which
//! is why the printed `resume` command repeats every flag.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use harnessx::ApprovalDecision;
use harnessx::agent::budget::ModelPrice;
use harnessx::agent::{Agent, Output, RunLimits, RunResult, RunState, RunStatus};
use harnessx::durable::{
    AgentRuntime, DurableError, JournalEntry, ResumeOptions, RunRecord, RunReport, SqliteJournal,
    StartOptions,
};

use super::Backend;
use crate::error::CliError;
use crate::report::Next;

/// A journal file and the agent that drives its runs.
pub(crate) struct Local {
    runtime: AgentRuntime,
    path: PathBuf,
    /// The run's agent flags, for the printed `resume` command.
    flags: Vec<String>,
    /// The model's price the command line gives (--price): a run started here keeps it,
    /// and a resume makes it the run's from then on.
    price: Option<ModelPrice>,
}

/// The journal at `path`, created if missing (`run --durable FILE`; its folder must exist).
pub(crate) fn create(path: &Path) -> Result<SqliteJournal, CliError> {
    SqliteJournal::open(path).map_err(|e| CliError::Failed(format!("the journal at {}: {e}", path.display())))
}

/// The journal at `path`, which must exist: only `run` creates one.
pub(crate) fn existing(path: &Path) -> Result<SqliteJournal, CliError> {
    if !path.is_file() {
        return Err(CliError::Failed(format!("no journal at {}", path.display())));
    }
    create(path)
}

impl Local {
    /// Runs in `journal` (at `path`), driven by `agent` (made by `flags`). Without an
    /// agent (`approve`, `answer`, `runs`, which never ask one anything: no fingerprint
    /// check, no model) an empty one stands in.
    pub(crate) fn new(
        path: &Path,
        journal: SqliteJournal,
        agent: Option<Agent>,
        flags: Vec<String>,
    ) -> Result<Self, CliError> {
        let agent = match agent {
            Some(agent) => agent,
            None => Agent::builder().build().map_err(CliError::failed)?,
        };
        Ok(Self {
            runtime: AgentRuntime::new(agent, Arc::new(journal)),
            path: path.to_owned(),
            flags,
            price: None,
        })
    }

    /// A run started or resumed here has this model price (--price) as its own.
    pub(crate) fn with_price(mut self, price: Option<ModelPrice>) -> Self {
        self.price = price;
        self
    }

    /// Where the run stands after this process drove it: its journal's state, or failed
    /// with the agent's error (marking it failed in the journal is best effort; the error
    /// is what the caller needs to see).
    async fn settle(
        &self,
        run_id: &str,
        outcome: Result<RunResult, DurableError>,
    ) -> Result<RunState, CliError> {
        // Stops its MCP servers: nothing more runs in this process.
        self.runtime.agent().close().await;
        let failure = match outcome {
            Ok(_) => None,
            // The run is marked failed in the journal and can be resumed.
            Err(DurableError::Agent(e)) => Some(e.to_string()),
            // Nothing ran: a refused resume, an id in use, a journal that cannot be written.
            Err(e) => return Err(CliError::failed(e)),
        };
        let mut state = self.status(run_id).await?;
        if let Some(error) = failure {
            state.status = RunStatus::Failed;
            state.error = Some(error);
        }
        Ok(state)
    }

    fn state(&self, run_id: &str) -> Result<RunState, CliError> {
        Ok(self.runtime.status(run_id).map_err(CliError::failed)?.state)
    }
}

impl Backend for Local {
    fn start<'a>(
        &'a self,
        run_id: &'a str,
        prompt: &'a str,
        output: Option<Output>,
        limits: &'a RunLimits,
        _events: bool,
    ) -> BoxFuture<'a, Result<RunState, CliError>> {
        async move {
            errln!("harnessx: run id {run_id}");
            // The run's own limits and price, journaled with it: a resume keeps them.
            let limits = Some(limits.clone()).filter(|l| !l.is_empty());
            let options = StartOptions { output, limits, price: self.price };
            let outcome = self.runtime.start_with(run_id, prompt, options, None).await;
            self.settle(run_id, outcome).await
        }
        .boxed()
    }

    fn resume<'a>(
        &'a self,
        run_id: &'a str,
        changes: &'a RunLimits,
        _events: bool,
    ) -> BoxFuture<'a, Result<RunState, CliError>> {
        async move {
            // Journaled: the run's from now on (those not given keep the run's).
            let options = ResumeOptions { limits: changes.clone(), price: self.price };
            let outcome = self.runtime.resume_with(run_id, options, None).await;
            self.settle(run_id, outcome).await
        }
        .boxed()
    }

    fn approve<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<(), CliError>> {
        let recorded = self.runtime.approve(run_id, call_id, decision).map_err(CliError::failed);
        async move { recorded }.boxed()
    }

    fn answer<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), CliError>> {
        let recorded = self.runtime.answer(run_id, call_id, text).map_err(CliError::failed);
        async move { recorded }.boxed()
    }

    fn status<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunState, CliError>> {
        let state = self.state(run_id);
        async move { state }.boxed()
    }

    fn list(&self) -> Result<Vec<RunRecord>, CliError> {
        self.runtime.journal().list_runs().map_err(CliError::failed)
    }

    fn show(&self, run_id: &str) -> Result<(RunReport, Vec<JournalEntry>), CliError> {
        let report = self.runtime.status(run_id).map_err(CliError::failed)?;
        let entries = match self.runtime.journal().load_run(run_id).map_err(CliError::failed)? {
            Some((_, entries)) => entries,
            None => Vec::new(), // removed since `status` read it
        };
        Ok((report, entries))
    }

    fn next(&self) -> Next {
        Next::Journal { journal: self.path.clone(), flags: self.flags.clone() }
    }
}
