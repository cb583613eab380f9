//! The step seam: what differs between a direct run, a durable run on SQLite (or in
//! memory) and a run on Restate. The loop ([`drive`](super::engine::drive)) calls it;
//! it records or replays a response, replays what is known of a call, asks a person and
//! records the decision, runs a planned batch (recording each call's start and result),
//! stops or waits for input, and commits the final answer.

use std::future::Future;

use harnessx_core::hooks::{
    Blocked, ModelTurn, PreOutcome, PreToolUse, PromptOutcome, ResponseOutcome, RunUsage, UserPrompt,
};
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, PermissionManager, PlannedBatch, RunContext, ToolCall, ToolResult,
};

use crate::budget::{Limit, RunLimits, UsageByModel};
use crate::model::{ModelError, ModelRequest, ModelResponse, Usage};
use crate::run::Events;
use crate::run::recovery::Unknown;
use crate::run::state::{NeedsInput, RunState};
use crate::{Agent, AgentError};

/// What a backend has recorded of one call (nothing, for a direct run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Recorded<'a> {
    /// Nothing: plan it as a new call.
    Nothing,
    /// Its result.
    Result(&'a ToolResult),
    /// A person's answer on whether it took effect; becomes its result.
    Answer(&'a str),
    /// It started and has no result: its outcome is unknown.
    Started,
    /// It paused for a person before it could finish (a login, a server's question), and
    /// what it waited for is settled: it runs again, whatever its replay policy, given
    /// the person's answers to its questions so far (JSON texts, in order; see
    /// [`NeedsInput::checked_answer`]).
    Again(&'a [String]),
    /// It paused for a server's question nobody has answered yet: the run waits again.
    Awaits(&'a NeedsInput),
}

/// One call's result from [`Steps::execute`] (and what a Restate worker's
/// `HarnessxTool/execute` answers, on the wire).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Executed {
    /// The result as the model will see it (for an unknown outcome, what the engine said).
    pub result: ToolResult,
    /// Set when the outcome is unknown and the recovery rules ask a person.
    pub unknown: Option<Unknown>,
    /// Set when the handler paused for a person (see
    /// [`ToolError::Paused`](harnessx_core::ToolError::Paused)): the result is not
    /// recorded, and the call runs again once the person acted. Absent on the wire
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Box<harnessx_core::Pause>>,
    /// What a specialist the call ran used, by model (empty for other tools); added to
    /// the run's usage. See [`UsageSink`](crate::budget::UsageSink). Absent on the wire
    /// for other tools.
    #[serde(default, skip_serializing_if = "UsageByModel::is_empty")]
    pub usage: UsageByModel,
}

impl Executed {
    /// A call's result, with nothing unknown and no specialist usage.
    pub fn new(result: ToolResult) -> Self {
        Self { result, unknown: None, paused: None, usage: UsageByModel::new() }
    }
}

/// An answer a durable run waited for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A decision on an ASK call.
    Decision(ApprovalDecision),
    /// Whether a `manual` call took effect, and what it did: its result.
    Outcome(String),
}

/// The seam between the one run loop and a backend. See the [module docs](self).
///
/// Every method that records commits before it returns: a response before anything is
/// asked or run, a decision before its call runs, a start before its handler runs.
pub trait Steps: Send {
    /// What fails a step (the backend's storage errors, and the agent's).
    type Error: From<AgentError> + Send;

    /// The durable run's id; `None` for a direct run. A durable run can stop and wait
    /// for a person, gives every call an idempotency key, and retries timeouts of
    /// `safe`/`idempotent` calls.
    fn run_id(&self) -> Option<&str>;

    /// The response of `turn`: replayed when recorded, else asked of the model (and
    /// streamed to `events`) and recorded before it is returned.
    fn response(
        &mut self,
        agent: &Agent,
        turn: u32,
        request: &ModelRequest,
        events: Option<&Events>,
    ) -> impl Future<Output = Result<ModelResponse, Self::Error>> + Send;

    /// The summary of a compaction before the request of `turn` (`attempt` 0 when the
    /// estimate called for it, 1 after the provider refused the request as too large):
    /// replayed when recorded, else asked of the agent's summarizer with `request` (see
    /// [`Agent::summarize`]) and recorded before it is returned. A resume never asks for
    /// a summary again.
    fn summary(
        &mut self,
        agent: &Agent,
        turn: u32,
        _attempt: u32,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelResponse, Self::Error>> + Send {
        async move { Ok(agent.summarize(request, turn).await?) }
    }

    /// The provider's context-length refusal `error` stands for, if it is one (a
    /// [`ModelError::ContextWindow`] from [`response`](Self::response)): the loop then
    /// compacts the history and asks once more. A backend that journals responses
    /// journals the refusal too, so a resume takes the same path.
    fn context_overflow(&self, _error: &Self::Error) -> Option<ModelError> {
        None
    }

    /// What is recorded of the call `call_id` of `turn`.
    fn recorded(&self, _call_id: &str) -> Recorded<'_> {
        Recorded::Nothing
    }

    /// Whether the response of `turn` is replayed from what the backend recorded (a
    /// resumed durable run's earlier turns): its `model_request` event is not sent, as
    /// no request is made.
    fn replays_response(&self, _turn: u32) -> bool {
        false
    }

    /// What a specialist used in the call `call_id`, recorded with its result (a
    /// replayed call adds it to the run's usage again, as it does not run again).
    fn recorded_usage(&self, _call_id: &str) -> Option<&UsageByModel> {
        None
    }

    /// A decision recorded for the call `call_id` with exactly these raw `arguments`
    /// (bound by a hash: never applied to other arguments).
    fn recorded_decision(&self, _call_id: &str, _arguments: &str) -> Option<ApprovalDecision> {
        None
    }

    /// Asks `permissions`' approval store and callback about an ASK call and records the
    /// decision (bound to the call's raw `arguments`) before returning it; `None` when
    /// neither can decide.
    fn decide(
        &mut self,
        permissions: &PermissionManager,
        request: ApprovalRequest,
        arguments: &str,
    ) -> impl Future<Output = Result<Option<ApprovalDecision>, Self::Error>> + Send;

    /// What the agent's pre hooks decide about `call` (resolved to `tool`, with its
    /// validated `arguments`; the run has used `usage`): asked here by default; a
    /// backend that records each step records it before the call runs, and on a resume
    /// answers with what it recorded (bound to the call's raw arguments) without asking
    /// the hooks again.
    fn pre_hooks(
        &mut self,
        agent: &Agent,
        call: &ToolCall,
        tool: &str,
        arguments: &serde_json::Value,
        usage: RunUsage,
    ) -> impl Future<Output = Result<PreOutcome, Self::Error>> + Send {
        let run_id = self.run_id().map(str::to_owned);
        async move {
            let asked = PreToolUse { tool, call_id: &call.id, arguments, run_id: run_id.as_deref(), usage };
            Ok(agent.hooks().pre_tool_use(asked).await)
        }
    }

    /// What the agent's `user_prompt` hooks decide about the run's `prompt`, before its
    /// first request (the loop asks only when the agent has hooks): asked here by
    /// default; a backend that records each step records it before the first request,
    /// and on a resume answers with what it recorded without asking again.
    fn user_prompt(
        &mut self,
        agent: &Agent,
        prompt: &str,
        usage: RunUsage,
    ) -> impl Future<Output = Result<PromptOutcome, Self::Error>> + Send {
        let run_id = self.run_id().map(str::to_owned);
        async move { Ok(agent.hooks().user_prompt(UserPrompt { prompt, run_id: run_id.as_deref(), usage }).await) }
    }

    /// What the agent's `model_response` hooks decide about the response of `turn` (its
    /// text, and its `calls` with their ids), before the calls run: asked here by
    /// default; recorded and replayed as [`user_prompt`](Self::user_prompt) is.
    fn model_response(
        &mut self,
        agent: &Agent,
        turn: u32,
        text: &str,
        calls: &[ToolCall],
        usage: RunUsage,
    ) -> impl Future<Output = Result<ResponseOutcome, Self::Error>> + Send {
        let run_id = self.run_id().map(str::to_owned);
        async move {
            let asked = ModelTurn { turn, text, tool_calls: calls, run_id: run_id.as_deref(), usage };
            Ok(agent.hooks().model_response(asked).await)
        }
    }

    /// A hook ended the run in `turn` (0: before the first request): records the end,
    /// [`RunStatus::Blocked`](crate::RunStatus::Blocked).
    fn blocked(
        &mut self,
        _turn: u32,
        _blocked: &Blocked,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }

    /// Tells the agent's `run_end` hooks the state the loop returns (any status; the loop
    /// calls it only when the agent has hooks). A backend that replays only for the
    /// messages tells nothing; one that replays the loop itself tells them once.
    fn run_end(
        &mut self,
        agent: &Agent,
        state: &RunState,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async move {
            agent.run_end_hooks(state).await;
            Ok(())
        }
    }

    /// Records a result the loop settled without running the call (a refusal, a
    /// denial, an answer): committed with the next commit.
    fn record(&mut self, _turn: u32, _result: &ToolResult) {}

    /// Runs the planned calls of `turn` (concurrent together, serial one at a time in
    /// call order), recording each start before its handler runs and each result as it
    /// finishes. Results in call order.
    fn execute(
        &mut self,
        agent: &Agent,
        turn: u32,
        batch: PlannedBatch,
        ctx: &RunContext,
    ) -> impl Future<Output = Result<Vec<Executed>, Self::Error>> + Send;

    /// The run needs `needs` answered. `Ok(true)`: the answers can be awaited here
    /// ([`wait`](Self::wait)); `Ok(false)`: the run stops, waiting (recorded), and a
    /// resume continues it once they are given.
    fn pause(
        &mut self,
        _turn: u32,
        _needs: &[NeedsInput],
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        std::future::ready(Ok(false))
    }

    /// Awaits the answer to one of the needs of the last [`pause`](Self::pause) that
    /// returned `true`. (The loop never calls it otherwise; a backend that cannot wait
    /// answers as nobody would: a denial, or an unknown outcome.)
    fn wait(&mut self, need: &NeedsInput) -> impl Future<Output = Result<Answer, Self::Error>> + Send {
        std::future::ready(Ok(match need.kind {
            crate::NeedsInputKind::Approval => Answer::Decision(ApprovalDecision::Deny),
            crate::NeedsInputKind::Outcome => Answer::Outcome(need.reason.clone()),
            // Nobody to ask: the model proceeds on its own reading.
            crate::NeedsInputKind::Question => Answer::Outcome(String::new()),
            // Never awaited: a call that paused for a person runs again only on a backend
            // that stops instead of waiting.
            crate::NeedsInputKind::Auth | crate::NeedsInputKind::Elicitation => {
                Answer::Outcome(String::new())
            }
        }))
    }

    /// Every awaited answer of the last pause arrived.
    fn resumed(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }

    /// The run reached `limit` in `turn`, having used `usage`; everything before it is
    /// recorded. `Ok(None)`: the run stops here, recorded as
    /// [`RunStatus::LimitReached`](crate::RunStatus::LimitReached), and a resume under
    /// higher limits continues it. `Ok(Some(changes))`: a backend that waits in place
    /// (Restate) was given higher limits (the fields set replace the run's) and the loop
    /// goes on.
    fn limit_reached(
        &mut self,
        _turn: u32,
        _limit: Limit,
        _limits: &RunLimits,
        _usage: &Usage,
    ) -> impl Future<Output = Result<Option<RunLimits>, Self::Error>> + Send {
        std::future::ready(Ok(None))
    }

    /// Records the final answer.
    fn finish(&mut self, output: &str) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Whether the backend keeps its own log of steps ([`note`](Self::note)); the loop
    /// builds the lines only then.
    fn keeps_notes(&self) -> bool {
        false
    }

    /// Hands a step to the backend's own event log (the Restate run keeps one in its
    /// state); the stream of [`AgentEvent`](crate::AgentEvent)s is the loop's.
    fn note(&mut self, _line: std::fmt::Arguments<'_>) {}
}

/// A direct run: nothing recorded, nothing replayed, nobody to wait for.
pub(crate) struct Direct;

impl Steps for Direct {
    type Error = AgentError;

    fn run_id(&self) -> Option<&str> {
        None
    }

    async fn response(
        &mut self,
        agent: &Agent,
        turn: u32,
        request: &ModelRequest,
        events: Option<&Events>,
    ) -> Result<ModelResponse, AgentError> {
        agent.request_turn(request, events, turn).await
    }

    fn context_overflow(&self, error: &AgentError) -> Option<ModelError> {
        match error {
            AgentError::Model(e @ ModelError::ContextWindow { .. }) => Some(e.clone()),
            _ => None,
        }
    }

    async fn decide(
        &mut self,
        permissions: &PermissionManager,
        request: ApprovalRequest,
        _arguments: &str,
    ) -> Result<Option<ApprovalDecision>, AgentError> {
        Ok(permissions.decision(&request).await)
    }

    async fn execute(
        &mut self,
        agent: &Agent,
        _turn: u32,
        batch: PlannedBatch,
        ctx: &RunContext,
    ) -> Result<Vec<Executed>, AgentError> {
        let sink = crate::budget::UsageSink::new();
        let outcomes =
            sink.scope(agent.tools().run_planned(batch, ctx, &harnessx_core::RunHooks::new())).await;
        Ok(outcomes
            .into_iter()
            .map(|o| {
                let usage = sink.take(&o.result.call_id);
                Executed { result: o.result, unknown: None, paused: o.paused, usage }
            })
            .collect())
    }

    async fn finish(&mut self, _output: &str) -> Result<(), AgentError> {
        Ok(())
    }
}
