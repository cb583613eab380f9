//! The run's hook points as the loop calls them: what the hooks see of the run's usage
//! and end, and the events their decisions make. (The tool-call points are asked in
//! the batch, [`super::batch`]; what each point decides is `harnessx_core::hooks`'.)

use harnessx_core::hooks::{RunEnd, RunUsage};

use crate::model::Usage;
use crate::run::Events;
use crate::run::state::{RunState, RunStatus};
use crate::{Agent, AgentEvent};

impl From<Usage> for RunUsage {
    fn from(usage: Usage) -> Self {
        Self {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            requests: usage.requests,
            tool_calls: usage.tool_calls,
            cost_usd: usage.cost_usd,
        }
    }
}

/// A run's state as a `run_end` hook sees it.
pub(crate) fn end_of(state: &RunState) -> RunEnd<'_> {
    RunEnd {
        run_id: state.run_id.as_deref(),
        status: state.status.as_str(),
        output: &state.output,
        error: state.error.as_deref(),
        blocked: state.blocked.as_ref(),
        turns: state.turns,
        usage: state.usage.into(),
    }
}

impl Agent {
    /// Tells the agent's `run_end` hooks how a run ended (they observe; a failing one is
    /// logged). The loop does it for every state it returns; a backend does it for a run
    /// that failed outside the loop's states (the loop's error).
    pub async fn run_end_hooks(&self, state: &RunState) {
        if !self.hooks().is_empty() {
            self.hooks().run_end(end_of(state)).await;
        }
    }

    /// [`run_end_hooks`](Self::run_end_hooks) of a run that failed with `error`.
    pub async fn run_failed_hooks(&self, run_id: Option<&str>, error: &str) {
        let state = RunState {
            run_id: run_id.map(str::to_owned),
            status: RunStatus::Failed,
            error: Some(error.to_owned()),
            ..RunState::default()
        };
        self.run_end_hooks(&state).await;
    }
}

/// Sends a hook event for each decision a run point's hooks made (`call_id` `null`).
pub(crate) fn report<'a>(events: Option<&Events>, decisions: impl Iterator<Item = (&'a str, &'static str)>) {
    let Some(tx) = events else { return };
    for (hook, decision) in decisions {
        let _ =
            tx.send(AgentEvent::Hook { hook: hook.to_owned(), call_id: None, decision: decision.to_owned() });
    }
}
