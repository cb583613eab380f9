//! [`RestateRuntime`] as [`DurableRuns`]: runs on a cluster, driven by its workers; this
//! starts, follows and answers them.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use harnessx_agent::{AgentConfig, Prompt, RunState};
use harnessx_core::ApprovalDecision;

use super::client::{RestateRuntime, RunOptions};
use crate::DurableError;
use crate::runs::{DurableRuns, Progress, ResumeOptions, StartOptions};

impl RestateRuntime {
    /// Follows the run until it completes, fails, stops at a limit or waits, saying its
    /// steps to `progress`.
    async fn follow(&self, run_id: &str, progress: Option<Progress>) -> Result<RunState, DurableError> {
        self.wait(run_id, |line| {
            if let Some(progress) = &progress {
                progress(line);
            }
        })
        .await
    }
}

impl DurableRuns for RestateRuntime {
    fn start_prompt<'a>(
        &'a self,
        run_id: &'a str,
        prompt: Prompt,
        options: StartOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        async move {
            let StartOptions { output, limits, price, progress } = options;
            // A typed run: the workers check its answers against the schema it carries.
            let spec = output
                .map(|o| o.spec(&AgentConfig::default()))
                .transpose()
                .map_err(|e| DurableError::Agent(e.into()))?;
            let options = RunOptions {
                expect: self.expect.as_ref(),
                limits: limits.as_ref(),
                output: spec.as_ref(),
                price: price.as_ref(),
                parts: Some(&prompt.parts),
            };
            self.submit_run(run_id, &prompt.text, options).await?;
            self.follow(run_id, progress).await
        }
        .boxed()
    }

    fn resume<'a>(
        &'a self,
        run_id: &'a str,
        options: ResumeOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        async move {
            let ResumeOptions { limits, price, progress } = options;
            if price.is_some() {
                return Err(DurableError::Cluster(format!(
                    "run {run_id:?} is on a Restate cluster, where a run keeps the model price it was started with"
                )));
            }
            // Higher limits for a run stopped at one: it goes on by itself.
            if !limits.is_empty() {
                self.raise(run_id, &limits).await?;
            }
            self.follow(run_id, progress).await
        }
        .boxed()
    }

    fn status<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunState, DurableError>> {
        RestateRuntime::status(self, run_id).boxed()
    }

    fn approve<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        async move {
            RestateRuntime::approve(self, run_id, call_id, decision).await?;
            RestateRuntime::status(self, run_id).await
        }
        .boxed()
    }

    fn answer<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        async move {
            RestateRuntime::answer(self, run_id, call_id, text).await?;
            RestateRuntime::status(self, run_id).await
        }
        .boxed()
    }

    /// The runs the cluster still keeps (see [`RestateRuntime::run_ids`]): needs the
    /// admin API.
    fn list(&self) -> BoxFuture<'_, Result<Vec<RunState>, DurableError>> {
        async move {
            let mut states = Vec::new();
            for run_id in self.run_ids().await? {
                states.push(RestateRuntime::status(self, &run_id).await?);
            }
            Ok(states)
        }
        .boxed()
    }
}
