//! `HarnessxRun`: the workflow that drives one run, the one loop over [`RestateSteps`].

use std::collections::HashSet;
use std::sync::Arc;

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use harnessx_agent::budget::{Limit, RunLimits};
use harnessx_agent::model::{ModelError, ModelRequest, ModelResponse, Usage};
use harnessx_agent::output::Output;
use harnessx_agent::run::recovery;
use harnessx_agent::{Agent, NeedsInput, NeedsInputKind, RunStatus, spans};
use harnessx_core::hooks::{Blocked, ModelTurn, PromptOutcome, ResponseOutcome, RunUsage, UserPrompt};
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, PermissionManager, PlannedBatch, RunContext, ToolCall, ToolEvent,
};

use harnessx_core::Parts;
use harnessx_core::content::store::BlobStore;

use super::blobs::internalize;
use super::feed::Feed;
use super::tool::HarnessxToolClient;
use super::wire::{Answer, Approval, Executed, Invocation, LimitStop, RunInput, WorkerConfig};
use super::{Shared, terminal};

/// The state key holding what the run waits for (`Vec<NeedsInput>`).
const NEEDS_INPUT: &str = "needs_input";
/// The state key holding the run's events (`Vec<String>`), for `harnessx run --restate`.
const EVENTS: &str = "events";
/// The state key holding the limit the run stopped at ([`LimitStop`]), while it waits
/// for a higher one.
const LIMIT: &str = "limit";
/// The state key holding a typed run's answer (a JSON value), once it completed.
const VALUE: &str = "value";
/// The state key holding the hook that ended the run and its message
/// ([`Blocked`]), once blocked.
const BLOCKED: &str = "blocked";

/// The workflow that drives one run.
pub struct HarnessxRun(pub(super) Arc<Shared>);

fn promise_key(kind: NeedsInputKind, call_id: &str) -> String {
    match kind {
        NeedsInputKind::Approval => format!("approval/{call_id}"),
        NeedsInputKind::Outcome => format!("outcome/{call_id}"),
        NeedsInputKind::Question => format!("question/{call_id}"),
        // (Never awaited here: a worker's call does not pause for a person.)
        NeedsInputKind::Auth => format!("auth/{call_id}"),
        NeedsInputKind::Elicitation => format!("elicitation/{call_id}"),
    }
}

impl HarnessxRun {
    /// The workflow's run, inside its `invoke_agent` span: the one loop
    /// ([`harnessx_agent::drive`]) over [`RestateSteps`].
    async fn drive(&self, ctx: WorkflowContext<'_>, input: Json<RunInput>) -> Result<String, HandlerError> {
        let run_id = ctx.key().to_owned();
        let RunInput { prompt, parts, expect, limits, output, price } = input.into_inner();
        // A schema the workers cannot use fails the run at once, naming why.
        let output = output.as_ref().map(Output::from_spec).transpose().map_err(terminal)?;
        let (agent, here) = (&self.0.agent, &self.0.config);
        let first = here.clone();
        let Json(started): Json<WorkerConfig> =
            ctx.run(|| async move { Ok(Json(first)) }).name("config").await?;
        here.refuse(&run_id, &started)?;
        if let Some(expect) = expect.filter(|e| e.digest != started.digest) {
            return Err(terminal(format!(
                "run {run_id:?} asked for {}; the cluster's workers have {}. Start workers with the run's agent flags, or start the run without them",
                expect.summary, started.summary
            )));
        }
        agent.check_tool_choice().map_err(terminal)?;
        // The prompt's media, read back from the blob store where they were put.
        let parts: Parts = match parts {
            Some(parts) => {
                internalize(self.0.blobs.as_ref(), parts, "the prompt's parts").map_err(terminal)?
            }
            None => Parts::new(),
        };
        // The run's own manager: grants made in it stay in it, and a replay rebuilds
        // them from the journaled decisions.
        let permissions = agent.permissions().session();
        let (events, feed) = tokio::sync::mpsc::unbounded_channel();
        let mut steps = RestateSteps {
            ctx,
            run_id,
            config: started,
            agent: agent.clone(),
            blobs: self.0.blobs.clone(),
            events: Vec::new(),
            dirty: false,
            limit_stops: 0,
            feed: Feed::new(feed),
        };
        let start = harnessx_agent::Start { history: Vec::new(), prompt, parts, limits, output, price };
        // The loop's events, each attempt the same (every step it shows is journaled, and
        // the model is asked without streaming), kept in the run's state as they come.
        let state = harnessx_agent::drive(agent, &mut steps, start, &permissions, Some(&events))
            .await
            .map_err(|f| f.0)?;
        // Its `run_end`.
        steps.flush_events();
        if let Some(value) = &state.value {
            steps.ctx.set(VALUE, Json(value.clone()));
        }
        Ok(state.output)
    }
}

/// What fails a step of the workflow: the SDK's error (a suspension, a journal
/// mismatch, a terminal error), or the agent's, as a terminal error; with the
/// provider's context-length refusal it stands for, if it is one (the loop compacts and
/// asks again).
struct Fault(HandlerError, Option<ModelError>);

impl From<HandlerError> for Fault {
    fn from(e: HandlerError) -> Self {
        Self(e, None)
    }
}

impl From<TerminalError> for Fault {
    fn from(e: TerminalError) -> Self {
        Self(e.into(), None)
    }
}

impl From<harnessx_agent::AgentError> for Fault {
    fn from(e: harnessx_agent::AgentError) -> Self {
        let overflow = match &e {
            harnessx_agent::AgentError::Model(m @ ModelError::ContextWindow { .. }) => Some(m.clone()),
            _ => None,
        };
        Self(terminal(e), overflow)
    }
}

/// A model step's journaled outcome: the response, or the provider's context-length
/// refusal (journaled as a value, so a replay takes the same compaction path).
#[derive(Serialize, Deserialize)]
enum Answered {
    Response(ModelResponse),
    Overflow { message: String, limit: Option<u64>, requested: Option<u64> },
}

/// The steps of a run on Restate: model requests and decisions are journaled
/// `ctx.run`s, calls fan out as `HarnessxTool` invocations in the batch's
/// [`Schedule`](harnessx_core::Schedule), questions wait on durable promises.
struct RestateSteps<'ctx> {
    ctx: WorkflowContext<'ctx>,
    run_id: String,
    config: WorkerConfig,
    agent: Arc<Agent>,
    /// Where media too large for a journal entry are kept.
    blobs: Option<Arc<dyn BlobStore>>,
    /// What the run did so far, one line per step (the `events` handler's answer).
    events: Vec<String>,
    dirty: bool,
    /// Stops at a limit so far: each waits on a promise of its own (replays take the
    /// same path, so the count is the same on every attempt).
    limit_stops: u32,
    /// The run's `--json` events, for `harnessx serve`.
    feed: Feed,
}

impl RestateSteps<'_> {
    fn flush_events(&mut self) {
        if std::mem::take(&mut self.dirty) {
            self.ctx.set(EVENTS, Json(self.events.clone()));
        }
        self.feed.flush(&self.ctx);
    }

    /// Adds `event` (a JSON object) to the run's events after those the loop sent so far.
    fn say(&mut self, event: serde_json::Value) {
        self.flush_events();
        self.feed.push(&event);
        self.flush_events();
    }
}

impl harnessx_agent::Steps for RestateSteps<'_> {
    type Error = Fault;

    fn run_id(&self) -> Option<&str> {
        Some(&self.run_id)
    }

    async fn response(
        &mut self,
        _agent: &Agent,
        turn: u32,
        request: &ModelRequest,
        _events: Option<&harnessx_agent::Events>,
    ) -> Result<ModelResponse, Fault> {
        self.flush_events();
        let model = self.agent.clone();
        let req = request.clone();
        let Json(answered): Json<Answered> = self
            .ctx
            .run(|| async move {
                match model.complete(&req).await {
                    Ok(response) => Ok(Json(Answered::Response(response))),
                    Err(harnessx_agent::AgentError::Model(ModelError::ContextWindow {
                        message,
                        limit,
                        requested,
                    })) => Ok(Json(Answered::Overflow { message, limit, requested })),
                    Err(e) => Err(terminal(e)),
                }
            })
            .name(format!("model {turn}"))
            .await?;
        match answered {
            Answered::Response(response) => Ok(response),
            Answered::Overflow { message, limit, requested } => {
                Err(harnessx_agent::AgentError::Model(ModelError::ContextWindow {
                    message,
                    limit,
                    requested,
                })
                .into())
            }
        }
    }

    async fn summary(
        &mut self,
        _agent: &Agent,
        turn: u32,
        attempt: u32,
        request: &ModelRequest,
    ) -> Result<ModelResponse, Fault> {
        self.flush_events();
        let agent = self.agent.clone();
        let req = request.clone();
        let Json(response): Json<ModelResponse> = self
            .ctx
            .run(|| async move { agent.summarize(&req, turn).await.map(Json).map_err(terminal) })
            .name(format!("compaction {turn}/{attempt}"))
            .await?;
        Ok(response)
    }

    fn context_overflow(&self, error: &Fault) -> Option<ModelError> {
        error.1.clone()
    }

    async fn pre_hooks(
        &mut self,
        agent: &Agent,
        call: &ToolCall,
        tool: &str,
        arguments: &serde_json::Value,
        usage: RunUsage,
    ) -> Result<harnessx_core::hooks::PreOutcome, Fault> {
        self.flush_events();
        // Asked once, as a journaled step: a replay reads the outcome back.
        let hooks = agent.hooks().clone();
        let (call_id, tool, arguments, run_id) =
            (call.id.clone(), tool.to_owned(), arguments.clone(), self.run_id.clone());
        let name = format!("hooks {call_id}");
        let Json(outcome): Json<harnessx_core::hooks::PreOutcome> = self
            .ctx
            .run(|| async move {
                let asked = harnessx_core::hooks::PreToolUse {
                    tool: &tool,
                    call_id: &call_id,
                    arguments: &arguments,
                    run_id: Some(&run_id),
                    usage,
                };
                Ok(Json(hooks.pre_tool_use(asked).await))
            })
            .name(name)
            .await?;
        Ok(outcome)
    }

    async fn user_prompt(
        &mut self,
        agent: &Agent,
        prompt: &str,
        usage: RunUsage,
    ) -> Result<PromptOutcome, Fault> {
        self.flush_events();
        // Asked once, as a journaled step: a replay reads the outcome back.
        let (hooks, prompt, run_id) = (agent.hooks().clone(), prompt.to_owned(), self.run_id.clone());
        let Json(outcome): Json<PromptOutcome> = self
            .ctx
            .run(|| async move {
                let asked = UserPrompt { prompt: &prompt, run_id: Some(&run_id), usage };
                Ok(Json(hooks.user_prompt(asked).await))
            })
            .name("hooks prompt")
            .await?;
        Ok(outcome)
    }

    async fn model_response(
        &mut self,
        agent: &Agent,
        turn: u32,
        text: &str,
        calls: &[ToolCall],
        usage: RunUsage,
    ) -> Result<ResponseOutcome, Fault> {
        let hooks = agent.hooks().clone();
        let (text, calls, run_id) = (text.to_owned(), calls.to_vec(), self.run_id.clone());
        let Json(outcome): Json<ResponseOutcome> = self
            .ctx
            .run(|| async move {
                let asked = ModelTurn { turn, text: &text, tool_calls: &calls, run_id: Some(&run_id), usage };
                Ok(Json(hooks.model_response(asked).await))
            })
            .name(format!("hooks response {turn}"))
            .await?;
        Ok(outcome)
    }

    async fn blocked(&mut self, _turn: u32, blocked: &Blocked) -> Result<(), Fault> {
        // The client reads it to report the run blocked (its output is empty).
        self.ctx.set(BLOCKED, Json(blocked.clone()));
        Ok(())
    }

    async fn run_end(&mut self, _agent: &Agent, state: &harnessx_agent::RunState) -> Result<(), Fault> {
        // Told once: a replay of the workflow reads the step back.
        let (told, state) = (self.agent.clone(), state.clone());
        self.ctx
            .run(|| async move {
                told.run_end_hooks(&state).await;
                Ok(())
            })
            .name("hooks run_end")
            .await?;
        Ok(())
    }

    async fn decide(
        &mut self,
        permissions: &PermissionManager,
        request: ApprovalRequest,
        _arguments: &str,
    ) -> Result<Option<ApprovalDecision>, Fault> {
        let permissions = permissions.clone();
        let name = format!("approval {}", request.call_id);
        let Json(decision): Json<Option<ApprovalDecision>> =
            self.ctx.run(|| async move { Ok(Json(permissions.decision(&request).await)) }).name(name).await?;
        Ok(decision)
    }

    async fn execute(
        &mut self,
        _agent: &Agent,
        _turn: u32,
        batch: PlannedBatch,
        run: &RunContext,
    ) -> Result<Vec<Executed>, Fault> {
        self.flush_events();
        let mut batch = batch;
        let mut calls: Vec<ToolCall> = Vec::with_capacity(batch.len());
        let mut tools: Vec<Option<String>> = Vec::with_capacity(batch.len());
        // Each call's result if it has one, and the arguments a person edited.
        let mut results: Vec<Option<Executed>> = Vec::with_capacity(batch.len());
        let mut edited: Vec<Option<serde_json::Value>> = Vec::with_capacity(batch.len());
        let mut rewritten: Vec<Option<serde_json::Value>> = Vec::with_capacity(batch.len());
        for planned in batch.iter_mut() {
            calls.push(planned.call().clone());
            tools.push(planned.tool().map(str::to_owned));
            results.push(planned.result().map(|r| Executed::new(r.clone())));
            edited.push(planned.edited_arguments().cloned());
            rewritten.push(planned.rewritten_arguments().cloned());
        }
        // Each call announced in call order, as the engine does where it runs the batch
        // itself; those settled already (refused, denied, answered) end at once.
        for (index, call) in calls.iter().enumerate() {
            run.emit(ToolEvent::CallStart { index, call, tool: tools[index].as_deref() });
        }
        for (index, settled) in results.iter().enumerate() {
            if let Some(settled) = settled {
                run.emit(ToolEvent::CallEnd { index, result: &settled.result });
            }
        }
        let mut schedule = batch.schedule();
        let run_id = self.run_id.clone();
        let ctx = &self.ctx;
        let config = &self.config;
        let invoke = |i: usize| {
            // The object's key is the call's idempotency key: `HarnessxTool` hands it to the tool.
            ctx.object_client::<HarnessxToolClient<'_>>(recovery::idempotency_key(&run_id, &calls[i].id))
                .execute(Json(Invocation {
                    call: calls[i].clone(),
                    config: config.clone(),
                    edited: edited[i].clone(),
                    rewritten: rewritten[i].clone(),
                }))
                .call()
        };
        let mut pending = DurableFuturesUnordered::new();
        // Position in `pending` -> call index.
        let mut slots: Vec<usize> = Vec::new();
        for i in schedule.start() {
            pending.push(invoke(i));
            slots.push(i);
        }
        while let Some((slot, executed)) = pending.next().await? {
            let i = slots[slot];
            let what = format!("the result of call {}", calls[i].id);
            let executed: Executed =
                internalize(self.blobs.as_ref(), executed?.into_inner(), &what).map_err(terminal)?;
            run.emit(ToolEvent::CallEnd { index: i, result: &executed.result });
            results[i] = Some(executed);
            if let Some(next) = schedule.finished(i) {
                pending.push(invoke(next));
                slots.push(next);
            }
        }
        // The schedule starts every call without a result, and each answers: a call
        // left without one is a fault of this loop, reported rather than a panic.
        results
            .into_iter()
            .zip(&calls)
            .map(|(r, call)| {
                r.ok_or_else(|| {
                    Fault::from(TerminalError::new(format!(
                        "call {} of the batch was never answered",
                        call.id
                    )))
                })
            })
            .collect()
    }

    async fn pause(&mut self, _turn: u32, needs: &[NeedsInput]) -> Result<bool, Fault> {
        self.say(serde_json::json!({"type": "needs_input", "needs_input": needs}));
        self.ctx.set(NEEDS_INPUT, Json(needs.to_vec()));
        Ok(true)
    }

    async fn wait(&mut self, need: &NeedsInput) -> Result<harnessx_agent::Answer, Fault> {
        let key = promise_key(need.kind, &need.call_id);
        Ok(match need.kind {
            NeedsInputKind::Approval => {
                let Json(decision) = self.ctx.promise::<Json<ApprovalDecision>>(&key).await?;
                harnessx_agent::Answer::Decision(decision)
            }
            _ => harnessx_agent::Answer::Outcome(self.ctx.promise::<String>(&key).await?),
        })
    }

    async fn resumed(&mut self) -> Result<(), Fault> {
        self.ctx.clear(NEEDS_INPUT);
        Ok(())
    }

    async fn limit_reached(
        &mut self,
        turn: u32,
        limit: Limit,
        limits: &RunLimits,
        usage: &Usage,
    ) -> Result<Option<RunLimits>, Fault> {
        // Waits in place for `raise` (`harnessx resume ID --restate URL --max-...`); its
        // events say so as a journal's run does, with the `run_end` of a run stopped at a
        // limit (events follow it once the limit is raised).
        self.say(serde_json::json!({
            "type": "run_end",
            "status": RunStatus::LimitReached,
            "limit": limit,
            "output": "",
            "usage": usage,
            "turns": turn,
        }));
        self.limit_stops += 1;
        let key = format!("limit/{}", self.limit_stops);
        let stop = LimitStop { key: key.clone(), limit, limits: limits.clone(), usage: *usage };
        self.ctx.set(LIMIT, Json(stop));
        let Json(changes) = self.ctx.promise::<Json<RunLimits>>(&key).await?;
        self.ctx.clear(LIMIT);
        Ok(Some(changes))
    }

    async fn finish(&mut self, _output: &str) -> Result<(), Fault> {
        Ok(())
    }

    fn keeps_notes(&self) -> bool {
        true
    }

    fn note(&mut self, line: std::fmt::Arguments<'_>) {
        self.events.push(line.to_string());
        self.dirty = true;
        if self.events.last().is_some_and(|l| l.ends_with("the final answer")) {
            self.flush_events();
        }
    }
}

#[restate_sdk::workflow]
impl HarnessxRun {
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>, input: Json<RunInput>) -> Result<String, HandlerError> {
        // Each attempt of the workflow (a first run, or a replay after a suspension or a
        // failover) is an `invoke_agent` span. Model requests whose results the journal
        // replays make no `chat` span; calls run by `HarnessxTool` are spans of their own
        // (on whichever worker runs them).
        let span = spans::invoke_agent(&self.0.agent);
        span.record("harnessx.run_id", ctx.key());
        let outcome = self.drive(ctx, input).instrument(span.clone()).await;
        if let Err(e) = &outcome {
            spans::record_error(&span, "restate", &format_args!("{e:?}"));
        }
        outcome
    }

    /// Decides on an ASK call the run waits on.
    #[handler]
    async fn approve(
        &self,
        ctx: SharedWorkflowContext<'_>,
        approval: Json<Approval>,
    ) -> Result<(), HandlerError> {
        let Approval { call_id, decision } = approval.into_inner();
        let key = awaited(&ctx, &call_id, NeedsInputKind::Approval).await?;
        ctx.resolve_promise::<Json<ApprovalDecision>>(&key, Json(decision));
        Ok(())
    }

    /// Answers whether a `manual` call with an unknown outcome took effect, or replies to
    /// a question.
    #[handler]
    async fn answer(&self, ctx: SharedWorkflowContext<'_>, answer: Json<Answer>) -> Result<(), HandlerError> {
        let Answer { call_id, text } = answer.into_inner();
        let key = awaited(&ctx, &call_id, NeedsInputKind::Outcome).await?;
        ctx.resolve_promise::<String>(&key, text);
        Ok(())
    }

    /// What the run waits for and nobody has answered yet (empty when nothing).
    #[handler]
    async fn waiting(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Vec<NeedsInput>>, HandlerError> {
        Ok(Json(unanswered(&ctx).await?))
    }

    /// The limit the run stopped at and waits to have raised, if any.
    #[handler]
    async fn limit(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Option<LimitStop>>, HandlerError> {
        Ok(Json(stopped_at_limit(&ctx).await?))
    }

    /// Raises the limits of a run stopped at one (the fields set replace the run's);
    /// it goes on by itself, or stops again at a limit still reached.
    #[handler]
    async fn raise(
        &self,
        ctx: SharedWorkflowContext<'_>,
        changes: Json<RunLimits>,
    ) -> Result<(), HandlerError> {
        let Some(stop) = stopped_at_limit(&ctx).await? else {
            return Err(terminal(format!("run {:?} is not stopped at a limit", ctx.key())));
        };
        ctx.resolve_promise::<Json<RunLimits>>(&stop.key, changes);
        Ok(())
    }

    /// A typed run's answer as a JSON value once it completed (`null` before, and for a
    /// free-text run).
    #[handler]
    async fn value(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> Result<Json<Option<serde_json::Value>>, HandlerError> {
        let found: Option<Json<serde_json::Value>> = ctx.get(VALUE).await?;
        Ok(Json(found.map(Json::into_inner)))
    }

    /// The hook that ended the run and its message, once blocked (`null` otherwise).
    #[handler]
    async fn blocked(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Option<Blocked>>, HandlerError> {
        let found: Option<Json<Blocked>> = ctx.get(BLOCKED).await?;
        Ok(Json(found.map(Json::into_inner)))
    }

    /// The run's `--json` events from number `from` on (0 is the first), as JSON texts: at
    /// most [`FEED_PAGE`](super::feed::FEED_PAGE) at once; none past the end.
    #[handler]
    async fn feed(
        &self,
        ctx: SharedWorkflowContext<'_>,
        from: Json<u64>,
    ) -> Result<Json<Vec<String>>, HandlerError> {
        Ok(Json(super::feed::read(&ctx, from.into_inner()).await?))
    }

    /// What the run did so far, one line per step.
    #[handler]
    async fn events(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Vec<String>>, HandlerError> {
        let found: Option<Json<Vec<String>>> = ctx.get(EVENTS).await?;
        Ok(found.unwrap_or_default())
    }
}

/// The entries of [`NEEDS_INPUT`] whose promise is not resolved yet.
async fn unanswered(ctx: &SharedWorkflowContext<'_>) -> Result<Vec<NeedsInput>, HandlerError> {
    let found: Option<Json<Vec<NeedsInput>>> = ctx.get(NEEDS_INPUT).await?;
    let mut open = Vec::new();
    // Tools approved for the session by a decision on one of these calls: the run does
    // not wait for their other calls.
    let mut granted: HashSet<String> = HashSet::new();
    for n in found.map(Json::into_inner).unwrap_or_default() {
        let key = promise_key(n.kind, &n.call_id);
        let resolved = match n.kind {
            NeedsInputKind::Approval => match ctx.peek_promise::<Json<ApprovalDecision>>(&key).await? {
                Some(Json(decision)) => {
                    if decision.grants_session() {
                        granted.insert(n.tool.clone());
                    }
                    true
                }
                None => false,
            },
            _ => ctx.peek_promise::<String>(&key).await?.is_some(),
        };
        if !resolved {
            open.push(n);
        }
    }
    open.retain(|n| n.kind != NeedsInputKind::Approval || !granted.contains(&n.tool));
    Ok(open)
}

/// The limit the run waits at, unless its promise was resolved already.
async fn stopped_at_limit(ctx: &SharedWorkflowContext<'_>) -> Result<Option<LimitStop>, HandlerError> {
    let Some(Json(stop)) = ctx.get::<Json<LimitStop>>(LIMIT).await? else { return Ok(None) };
    let raised = ctx.peek_promise::<Json<RunLimits>>(&stop.key).await?.is_some();
    Ok((!raised).then_some(stop))
}

/// The promise to resolve for `call_id`, or a terminal error naming what the run waits for.
async fn awaited(
    ctx: &SharedWorkflowContext<'_>,
    call_id: &str,
    kind: NeedsInputKind,
) -> Result<String, HandlerError> {
    let open = unanswered(ctx).await?;
    // `answer` replies to an outcome or a question, whichever the call waits for.
    if let Some(n) =
        open.iter().find(|n| n.call_id == call_id && n.kind.takes_answer() == kind.takes_answer())
    {
        return Ok(promise_key(n.kind, call_id));
    }
    Err(terminal(crate::runtime::not_awaited(ctx.key(), call_id, kind, &open, RunStatus::Running)))
}

#[cfg(test)]
mod tests {
    use harnessx_agent::AgentError;
    use serde_json::json;

    use super::*;

    #[test]
    fn each_awaited_call_has_a_promise_of_its_own_per_kind() {
        assert_eq!(promise_key(NeedsInputKind::Approval, "c1"), "approval/c1");
        assert_eq!(promise_key(NeedsInputKind::Outcome, "c1"), "outcome/c1");
        assert_ne!(promise_key(NeedsInputKind::Approval, "c1"), promise_key(NeedsInputKind::Approval, "c2"));
    }

    #[test]
    fn a_context_length_refusal_is_journaled_as_a_value_and_read_back_the_same() {
        let refusal =
            Answered::Overflow { message: "too long".into(), limit: Some(128_000), requested: None };
        let value = serde_json::to_value(&refusal).unwrap();
        assert_eq!(value, json!({"Overflow": {"message": "too long", "limit": 128_000, "requested": null}}));
        let back: Answered = serde_json::from_value(value).unwrap();
        assert!(matches!(back, Answered::Overflow { limit: Some(128_000), requested: None, .. }));
        let response = serde_json::to_value(Answered::Response(ModelResponse::text("hi"))).unwrap();
        let back: Answered = serde_json::from_value(response).unwrap();
        assert!(matches!(back, Answered::Response(r) if r.content == "hi"));
    }

    #[test]
    fn a_fault_keeps_the_refusal_it_stands_for_so_the_loop_can_compact() {
        let overflow =
            ModelError::ContextWindow { message: "too long".into(), limit: None, requested: Some(9) };
        let fault = Fault::from(AgentError::Model(overflow));
        assert!(matches!(fault.1, Some(ModelError::ContextWindow { requested: Some(9), .. })));
        // Any other failure of the agent is terminal and nothing to compact for.
        let fault = Fault::from(AgentError::UnknownPrice { model: "m".into() });
        assert!(fault.1.is_none());
        let fault = Fault::from(TerminalError::new("stop"));
        assert!(fault.1.is_none());
    }
}
