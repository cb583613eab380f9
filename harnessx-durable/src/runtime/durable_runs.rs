//! [`AgentRuntime`] as [`DurableRuns`]: runs in a journal, driven in this process.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use harnessx_agent::{Prompt, RunResult, RunState, RunStatus};
use harnessx_core::ApprovalDecision;

use super::{AgentRuntime, DurableError};
use crate::runs::{DurableRuns, ResumeOptions, StartOptions};

impl AgentRuntime {
    /// Where the run stands after this process drove it: its result, or, when the agent
    /// failed it (the model, say), its journal's state, failed with that error (the run
    /// is marked failed in the journal, best effort, and can be resumed). The answer
    /// [`DurableRuns`] gives, for the outcome of a drive outside it (a
    /// [`fork`](Self::fork)).
    pub fn settled(
        &self,
        run_id: &str,
        outcome: Result<RunResult, DurableError>,
    ) -> Result<RunState, DurableError> {
        match outcome {
            Ok(state) => Ok(state),
            Err(DurableError::Agent(e)) => {
                let mut state = self.status(run_id)?.state;
                state.status = RunStatus::Failed;
                state.error = Some(e.to_string());
                Ok(state)
            }
            // Nothing ran: a refused resume, an id in use, a journal that cannot be written.
            Err(e) => Err(e),
        }
    }
}

impl DurableRuns for AgentRuntime {
    fn start_prompt<'a>(
        &'a self,
        run_id: &'a str,
        prompt: Prompt,
        options: StartOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        async move {
            let outcome = self.start_with(run_id, prompt, options, None).await;
            self.settled(run_id, outcome)
        }
        .boxed()
    }

    fn resume<'a>(
        &'a self,
        run_id: &'a str,
        options: ResumeOptions,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        async move {
            let outcome = self.resume_with(run_id, options, None).await;
            self.settled(run_id, outcome)
        }
        .boxed()
    }

    fn status<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunState, DurableError>> {
        let state = AgentRuntime::status(self, run_id).map(|report| report.state);
        async move { state }.boxed()
    }

    fn approve<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        let state = AgentRuntime::approve(self, run_id, call_id, decision)
            .and_then(|()| AgentRuntime::status(self, run_id))
            .map(|report| report.state);
        async move { state }.boxed()
    }

    fn answer<'a>(
        &'a self,
        run_id: &'a str,
        call_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<RunState, DurableError>> {
        let state = AgentRuntime::answer(self, run_id, call_id, text)
            .and_then(|()| AgentRuntime::status(self, run_id))
            .map(|report| report.state);
        async move { state }.boxed()
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<RunState>, DurableError>> {
        let states = self.journal().list_runs().map_err(DurableError::from).and_then(|runs| {
            runs.iter()
                .map(|run| AgentRuntime::status(self, &run.run_id).map(|report| report.state))
                .collect()
        });
        async move { states }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use harnessx_agent::model::{FunctionModel, ModelError, ModelResponse};
    use harnessx_agent::{Agent, AgentConfig};

    use super::*;
    use crate::journal::JournalError;

    fn runtime(fail: bool) -> AgentRuntime {
        let model = FunctionModel::new(move |_| {
            if fail { Err(ModelError::Auth("bad request".into())) } else { Ok(ModelResponse::text("done")) }
        });
        let config = AgentConfig { planning: false, ..AgentConfig::default() };
        AgentRuntime::in_memory(Agent::builder().model(model).config(config).build().unwrap())
    }

    #[tokio::test]
    async fn a_run_the_agent_failed_is_a_failed_state_and_a_refusal_is_an_error() {
        let failing = runtime(true);
        let state = DurableRuns::start(&failing, "r1", "go", StartOptions::default()).await.unwrap();
        assert_eq!(state.status, RunStatus::Failed);
        assert!(state.error.as_deref().is_some_and(|e| e.contains("bad request")), "{state:?}");
        let again = DurableRuns::start(&failing, "r1", "go", StartOptions::default()).await.unwrap_err();
        assert!(matches!(again, DurableError::Journal(JournalError::RunExists(_))), "{again}");
    }

    #[tokio::test]
    async fn every_answer_is_the_runs_state() {
        let runtime = runtime(false);
        let runs: &dyn DurableRuns = &runtime;
        let done = runs.start("r1", "go", StartOptions::default()).await.unwrap();
        assert_eq!(
            (done.status, done.output.as_str(), done.run_id.as_deref()),
            (RunStatus::Completed, "done", Some("r1"))
        );
        assert_eq!(runs.status("r1").await.unwrap().output, "done");
        let listed = runs.list().await.unwrap();
        assert_eq!(listed.iter().map(|s| s.run_id.as_deref()).collect::<Vec<_>>(), [Some("r1")]);
        // Nothing waits: approve and answer are refused, naming where the run stands.
        let refused = runs.approve("r1", "c1", ApprovalDecision::Approve).await.unwrap_err();
        assert!(matches!(refused, DurableError::NotAwaited { what: "an approval", .. }), "{refused}");
        let refused = runs.answer("r1", "c1", "it was sent").await.unwrap_err();
        assert!(refused.to_string().ends_with("(it is completed)"), "{refused}");
        assert!(matches!(runs.resume("r1", ResumeOptions::default()).await, Err(DurableError::Completed(_))));
    }
}
