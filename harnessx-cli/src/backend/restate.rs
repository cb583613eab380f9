//! Runs on a Restate cluster (`--restate URL`), over `harnessx::durable::restate`: the
//! cluster's workers (`harnessx worker`) drive them with their own agent; this starts,
//! follows and answers them. A waiting run goes on by itself once answered; `resume`
//! only follows it.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use harnessx::ApprovalDecision;
use harnessx::agent::budget::ModelPrice;
use harnessx::agent::{AgentConfig, Output, RunLimits, RunState};
use harnessx::durable::restate::{RestateRuntime, RunOptions, WorkerConfig};
use harnessx::durable::{JournalEntry, RunRecord, RunReport};

use super::Backend;
use crate::error::CliError;
use crate::report::Next;

/// A cluster, at its ingress (and, to say why a run is stuck, its admin API).
pub(crate) struct Restate {
    runtime: RestateRuntime,
    ingress: String,
    /// What a run started here asks of the workers, when the flags said.
    expect: Option<WorkerConfig>,
    /// The limits a run started here has in place of the workers' (those set).
    limits: Option<RunLimits>,
    /// The model's price a run started here has in place of the workers'.
    price: Option<ModelPrice>,
}

impl Restate {
    /// The cluster at `ingress` (and `admin`); runs started here ask for workers with
    /// the configuration `expect`, when given.
    pub(crate) fn new(
        ingress: &str,
        admin: Option<&str>,
        expect: Option<WorkerConfig>,
    ) -> Result<Self, CliError> {
        let mut runtime = RestateRuntime::new(ingress).map_err(CliError::usage)?;
        if let Some(admin) = admin {
            runtime = runtime.with_admin(admin).map_err(CliError::usage)?;
        }
        Ok(Self { runtime, ingress: ingress.to_owned(), expect, limits: None, price: None })
    }

    /// Runs started here have these limits in place of the workers' agent's (those set).
    pub(crate) fn with_limits(mut self, limits: Option<RunLimits>) -> Self {
        self.limits = limits;
        self
    }

    /// Runs started here have this model price in place of the workers' agent's.
    pub(crate) fn with_price(mut self, price: Option<ModelPrice>) -> Self {
        self.price = price;
        self
    }

    /// Follows the run until it completes, fails or waits.
    async fn follow(&self, run_id: &str, events: bool) -> Result<RunState, CliError> {
        self.runtime
            .wait(run_id, |event| {
                if events {
                    errln!("  {event}");
                }
            })
            .await
            .map_err(CliError::failed)
    }

    fn no_journal(command: &str) -> CliError {
        CliError::Usage(format!(
            "`runs {command}` reads a journal (--durable FILE); a Restate cluster keeps its runs' journals itself: `harnessx resume ID --restate URL --json` says where a run stands"
        ))
    }
}

impl Backend for Restate {
    fn start<'a>(
        &'a self,
        run_id: &'a str,
        prompt: &'a str,
        output: Option<Output>,
        // Given to `with_limits` already.
        _limits: &'a RunLimits,
        events: bool,
    ) -> BoxFuture<'a, Result<RunState, CliError>> {
        async move {
            // A typed run: the workers check its answers against the schema it carries.
            let spec = match &output {
                Some(output) => Some(output.spec(&AgentConfig::default()).map_err(CliError::usage)?),
                None => None,
            };
            let options = RunOptions {
                expect: self.expect.as_ref(),
                limits: self.limits.as_ref(),
                output: spec.as_ref(),
                price: self.price.as_ref(),
            };
            self.runtime.submit_run(run_id, prompt, options).await.map_err(CliError::failed)?;
            errln!("harnessx: run id {run_id} on {}", self.ingress);
            self.follow(run_id, events).await
        }
        .boxed()
    }

    fn resume<'a>(
        &'a self,
        run_id: &'a str,
        changes: &'a RunLimits,
        events: bool,
    ) -> BoxFuture<'a, Result<RunState, CliError>> {
        async move {
            // Higher limits for a run stopped at one: it goes on by itself.
            if !changes.is_empty() {
                self.runtime.raise(run_id, changes).await.map_err(CliError::failed)?;
            }
            self.follow(run_id, events).await
        }
        .boxed()
    }

    fn approve<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<(), CliError>> {
        async move { self.runtime.approve(run_id, call_id, decision).await.map_err(CliError::failed) }.boxed()
    }

    fn answer<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), CliError>> {
        async move { self.runtime.answer(run_id, call_id, text).await.map_err(CliError::failed) }.boxed()
    }

    fn status<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunState, CliError>> {
        async move { self.runtime.status(run_id).await.map_err(CliError::failed) }.boxed()
    }

    fn list(&self) -> Result<Vec<RunRecord>, CliError> {
        Err(Self::no_journal("list"))
    }

    fn show(&self, _run_id: &str) -> Result<(RunReport, Vec<JournalEntry>), CliError> {
        Err(Self::no_journal("show"))
    }

    fn next(&self) -> Next {
        Next::Cluster { ingress: self.ingress.clone() }
    }
}
