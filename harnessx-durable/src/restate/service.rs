//! The two Restate services a worker serves.
//!
//! - `HarnessxRun`, a workflow keyed by run id, drives the agent: each model request is
//!   a journaled `ctx.run`; each turn's calls fan out as invocations of `HarnessxTool`;
//!   ASK calls and `manual` calls with an unknown outcome wait on durable promises that
//!   its `approve` and `answer` handlers resolve, from any process.
//! - `HarnessxTool`, a virtual object keyed `"{run}/{call}"`, runs one call: it journals
//!   a start, then the execution. A start replayed with no execution journaled means an
//!   earlier attempt died mid-call: a `manual` tool is then not run again.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use harnessx_agent::model::{Message, ModelResponse};
use harnessx_agent::{Agent, NeedsInput, NeedsInputKind, call_ids_for_turn, history_safe, spans};
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, ApprovalStore, MemoryApprovalStore, PERMISSION_DENIED,
    PermissionLevel, PermissionManager, ReplayPolicy, RunContext, RunHooks, ToolCall, ToolResult,
};
use tracing::Instrument;

use crate::runtime::DurableError;

/// The state key holding what the run waits for (`Vec<NeedsInput>`).
const NEEDS_INPUT: &str = "needs_input";
/// The state key holding the run's events (`Vec<String>`), for `harnessx run --restate`.
const EVENTS: &str = "events";

/// What a worker's agent is, as far as a run depends on it: its tools' schemas, its
/// model, its system prompt and its tool choice settings when set. The first worker to run a run journals its own; every
/// later step, on whatever worker, is refused by a worker whose configuration differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerConfig {
    /// A digest of the configuration (64-bit FNV-1a of its canonical JSON, in hex).
    pub digest: String,
    /// `tools [..], model .., a system prompt of N characters` (`, tool choice ..` when
    /// set), for the error.
    pub summary: String,
}

impl WorkerConfig {
    /// The configuration of `agent`.
    pub fn of(agent: &Agent) -> Self {
        let (full, summary) = crate::runtime::fingerprint(agent);
        Self { digest: format!("{:016x}", fnv1a(full.as_bytes())), summary }
    }

    /// The error for a step of run `run_id`, started with `started`, reaching this worker.
    fn refuse(&self, run_id: &str, started: &Self) -> Result<(), HandlerError> {
        if started.digest == self.digest {
            return Ok(());
        }
        let error = DurableError::Mismatch {
            run_id: run_id.to_owned(),
            was: started.summary.clone(),
            now: self.summary.clone(),
        };
        tracing::error!(run_id, "{error}");
        // Retryable: the run waits, nothing lost, for a worker with its configuration.
        Err(Refused(error.to_string()).into())
    }
}

/// A retryable error whose message reads the same through `Debug`, which is how the SDK
/// reports it to Restate (and so what the admin API's `last_failure` shows).
struct Refused(String);

impl std::fmt::Debug for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// 64-bit FNV-1a: stable across builds and machines (std's hashers are not), and the
/// digest only has to tell configurations apart, not resist an attacker.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What both services share: the agent and its configuration.
struct Shared {
    agent: Arc<Agent>,
    config: WorkerConfig,
}

/// The workflow that drives one run.
pub struct HarnessxRun(Arc<Shared>);

/// The object that runs one call.
pub struct HarnessxTool(Arc<Shared>);

/// Why a call's outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unknown {
    /// An earlier attempt started it and its worker died before its result was journaled.
    Interrupted,
    /// It timed out and may have partly run.
    TimedOut,
}

impl Unknown {
    fn reason(self, tool: &str) -> String {
        match self {
            Self::Interrupted => format!(
                "{tool} started and its outcome is unknown (its worker stopped before it answered); it is `manual`, so it is not run again. Say whether it took effect, and what it did"
            ),
            Self::TimedOut => format!(
                "{tool} timed out and may have partly run; it is `manual`, so it is not run again. Say whether it took effect, and what it did"
            ),
        }
    }
}

/// What `HarnessxTool/execute` answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Executed {
    /// The call's result (for an unknown outcome, what the engine said).
    pub result: ToolResult,
    /// Set for a `manual` call whose outcome is unknown: the run asks instead.
    pub unknown: Option<Unknown>,
}

/// The input of `HarnessxRun/run`: a prompt, as a JSON string or as
/// `{"prompt": .., "expect": WorkerConfig}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "RunInputWire")]
pub struct RunInput {
    /// What to ask the agent.
    pub prompt: String,
    /// The configuration the caller expects the workers to have: when set, a run that
    /// lands on workers with another one fails at once instead of running.
    pub expect: Option<WorkerConfig>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RunInputWire {
    Prompt(String),
    Full {
        prompt: String,
        #[serde(default)]
        expect: Option<WorkerConfig>,
    },
}

impl From<RunInputWire> for RunInput {
    fn from(wire: RunInputWire) -> Self {
        match wire {
            RunInputWire::Prompt(prompt) => Self { prompt, expect: None },
            RunInputWire::Full { prompt, expect } => Self { prompt, expect },
        }
    }
}

/// What the workflow asks `HarnessxTool/execute` to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Invocation {
    /// The call (its permission already decided by the workflow).
    pub call: ToolCall,
    /// The configuration the run was started with.
    pub config: WorkerConfig,
}

/// The body of `HarnessxRun/approve`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approval {
    /// The call.
    pub call_id: String,
    /// The decision (`"approve"`, `"approve_for_session"`, `"deny"`).
    pub decision: ApprovalDecision,
}

/// The body of `HarnessxRun/answer`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// The call.
    pub call_id: String,
    /// Whether it took effect, and what it did; becomes its result.
    pub text: String,
}

fn terminal(e: impl std::fmt::Display) -> HandlerError {
    TerminalError::new(e.to_string()).into()
}

fn promise_key(kind: NeedsInputKind, call_id: &str) -> String {
    match kind {
        NeedsInputKind::Approval => format!("approval/{call_id}"),
        NeedsInputKind::Outcome => format!("outcome/{call_id}"),
    }
}

impl HarnessxRun {
    /// The workflow's loop, inside its `invoke_agent` span.
    async fn drive(&self, ctx: WorkflowContext<'_>, input: Json<RunInput>) -> Result<String, HandlerError> {
        let run_id = ctx.key().to_owned();
        let RunInput { prompt, expect } = input.into_inner();
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
        let mut request = agent.first_request(Vec::new(), prompt);
        let mut events: Vec<String> = Vec::new();
        // Tools granted for the rest of the run (`ApproveForSession`); rebuilt on replay
        // from the journaled decisions.
        let mut granted: HashSet<String> = HashSet::new();
        for turn in 1..=agent.config().max_turns {
            let model = agent.clone();
            let req = request.clone();
            let Json(response): Json<ModelResponse> = ctx
                .run(|| async move { model.complete(&req).await.map(Json).map_err(terminal) })
                .name(format!("model {turn}"))
                .await?;
            let calls = call_ids_for_turn(response.tool_calls.clone(), turn);
            if calls.is_empty() {
                events.push(format!("turn {turn}: the final answer"));
                ctx.set(EVENTS, Json(events));
                return Ok(response.content);
            }
            let named: Vec<String> = calls.iter().map(|c| format!("{} ({})", c.name, c.id)).collect();
            events.push(format!("turn {turn}: calls {}", named.join(", ")));
            ctx.set(EVENTS, Json(events.clone()));
            request
                .messages
                .push(Message::assistant(response.content.clone(), calls.iter().map(history_safe).collect()));

            // Calls refused while planning (unknown tool, bad arguments) are answered here.
            let plan = agent.tools().plan_batch(&calls);
            let mut results: Vec<Option<ToolResult>> =
                (0..calls.len()).map(|i| plan.result(i).cloned()).collect();
            // Permissions, decided here so that they are journaled. Every ASK call of the
            // batch waits, together, on a durable promise `approval/{call}`.
            let mut asks: Vec<NeedsInput> = Vec::new();
            for (i, call) in calls.iter().enumerate() {
                let Some(tool) = plan.tool(i).filter(|_| results[i].is_none()) else { continue };
                match agent.permissions().effective_level(tool, plan.permission(i)) {
                    PermissionLevel::Allow => {}
                    PermissionLevel::Ask if granted.contains(tool) => {}
                    // The worker's agent has an approval callback (`harnessx worker --yes`,
                    // or one set in code): it decides, and its decision is journaled.
                    PermissionLevel::Ask if agent.permissions().has_approval() => {
                        let permissions = agent.permissions().clone();
                        let (name, id) = (tool.to_owned(), call.id.clone());
                        let arguments = plan.arguments(i).cloned().unwrap_or(serde_json::Value::Null);
                        let Json(decision): Json<ApprovalDecision> = ctx
                            .run(
                                || async move { Ok(Json(decide(&permissions, &name, &id, arguments).await)) },
                            )
                            .name(format!("approval {}", call.id))
                            .await?;
                        if decision == ApprovalDecision::ApproveForSession {
                            granted.insert(tool.to_owned());
                        }
                        if !decision.is_approved() {
                            results[i] = Some(ToolResult::error(&call.id, tool, PERMISSION_DENIED));
                        }
                    }
                    PermissionLevel::Deny => {
                        results[i] = Some(ToolResult::error(&call.id, tool, PERMISSION_DENIED))
                    }
                    PermissionLevel::Ask => asks.push(NeedsInput {
                        kind: NeedsInputKind::Approval,
                        call_id: call.id.clone(),
                        tool: tool.to_owned(),
                        arguments: call.arguments.clone(),
                        reason: format!("{tool} needs approval (ASK) and no one was there to approve it"),
                    }),
                }
            }
            if !asks.is_empty() {
                ctx.set(NEEDS_INPUT, Json(asks.clone()));
                for ask in asks {
                    if granted.contains(&ask.tool) {
                        // Granted for the session by the decision on an earlier call.
                        continue;
                    }
                    let i = calls.iter().position(|c| c.id == ask.call_id).expect("a call of this batch");
                    let Json(decision): Json<ApprovalDecision> =
                        ctx.promise::<Json<ApprovalDecision>>(&promise_key(ask.kind, &ask.call_id)).await?;
                    if decision == ApprovalDecision::ApproveForSession {
                        granted.insert(ask.tool.clone());
                    }
                    if !decision.is_approved() {
                        results[i] = Some(ToolResult::error(&ask.call_id, &ask.tool, PERMISSION_DENIED));
                    }
                }
                ctx.clear(NEEDS_INPUT);
            }

            // Concurrent calls go out together; serial ones one at a time, in call order,
            // alongside them (as the engine schedules a batch).
            let mut serial: VecDeque<usize> =
                (0..calls.len()).filter(|&i| results[i].is_none() && !plan.is_concurrent(i)).collect();
            let invoke = |i: usize| {
                ctx.object_client::<HarnessxToolClient<'_>>(format!("{run_id}/{}", calls[i].id))
                    .execute(Json(Invocation { call: calls[i].clone(), config: started.clone() }))
                    .call()
            };
            let mut pending = DurableFuturesUnordered::new();
            // Position in `pending` -> call index.
            let mut slots: Vec<usize> = Vec::new();
            for i in (0..calls.len()).filter(|&i| results[i].is_none() && plan.is_concurrent(i)) {
                pending.push(invoke(i));
                slots.push(i);
            }
            if let Some(i) = serial.pop_front() {
                pending.push(invoke(i));
                slots.push(i);
            }
            let mut unknown: Vec<(usize, Unknown)> = Vec::new();
            while let Some((slot, executed)) = pending.next().await? {
                let i = slots[slot];
                let Executed { result, unknown: why } = executed?.into_inner();
                if let Some(why) = why {
                    unknown.push((i, why));
                }
                results[i] = Some(result);
                if !plan.is_concurrent(i)
                    && let Some(next) = serial.pop_front()
                {
                    pending.push(invoke(next));
                    slots.push(next);
                }
            }

            // `manual` calls with an unknown outcome: wait, durably, for someone to say
            // whether they took effect; the answer becomes the result.
            if !unknown.is_empty() {
                unknown.sort_by_key(|(i, _)| *i);
                let waiting: Vec<NeedsInput> = unknown
                    .iter()
                    .map(|&(i, why)| NeedsInput {
                        kind: NeedsInputKind::Outcome,
                        call_id: calls[i].id.clone(),
                        tool: calls[i].name.clone(),
                        arguments: calls[i].arguments.clone(),
                        reason: why.reason(&calls[i].name),
                    })
                    .collect();
                ctx.set(NEEDS_INPUT, Json(waiting));
                for (i, _) in unknown {
                    let text: String =
                        ctx.promise::<String>(&promise_key(NeedsInputKind::Outcome, &calls[i].id)).await?;
                    results[i] = Some(ToolResult::success(&calls[i].id, &calls[i].name, text.into()));
                }
                ctx.clear(NEEDS_INPUT);
            }
            for (call, result) in calls.iter().zip(results) {
                let result = result.expect("every call answered");
                let how = if result.is_error { "failed" } else { "answered" };
                events.push(format!("turn {turn}: {} ({}) {how}", call.name, call.id));
                request.messages.push(Message::tool(&result));
            }
            // As `Agent::run` does; a replay rebuilds the same requests from the journal.
            agent.after_tool_calls(&mut request);
            ctx.set(EVENTS, Json(events.clone()));
        }
        Err(terminal(format!("the run used all {} turns", agent.config().max_turns)))
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

    /// Answers whether a `manual` call with an unknown outcome took effect.
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

    /// What the run did so far, one line per step.
    #[handler]
    async fn events(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Vec<String>>, HandlerError> {
        let found: Option<Json<Vec<String>>> = ctx.get(EVENTS).await?;
        Ok(found.unwrap_or_default())
    }
}

/// What the approval callback of `permissions` decides on a call, without touching the
/// session grants of the manager, which every run on the worker shares.
async fn decide(
    permissions: &PermissionManager,
    tool: &str,
    call_id: &str,
    arguments: serde_json::Value,
) -> ApprovalDecision {
    if permissions.has_session_grant(tool) {
        return ApprovalDecision::Approve;
    }
    let store = Arc::new(MemoryApprovalStore::default());
    let run = permissions.fork_with_store(store.clone());
    // The outcome is read back from the store, which sees the callback's exact decision.
    let _ = run.authorize(tool, Some(PermissionLevel::Ask), call_id, &arguments).await;
    let request = ApprovalRequest { tool_name: tool.to_owned(), call_id: call_id.to_owned(), arguments };
    store.load(&request).await.ok().flatten().unwrap_or(ApprovalDecision::Deny)
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
                    if decision == ApprovalDecision::ApproveForSession {
                        granted.insert(n.tool.clone());
                    }
                    true
                }
                None => false,
            },
            NeedsInputKind::Outcome => ctx.peek_promise::<String>(&key).await?.is_some(),
        };
        if !resolved {
            open.push(n);
        }
    }
    open.retain(|n| n.kind != NeedsInputKind::Approval || !granted.contains(&n.tool));
    Ok(open)
}

/// The promise to resolve for `call_id`, or a terminal error naming what the run waits for.
async fn awaited(
    ctx: &SharedWorkflowContext<'_>,
    call_id: &str,
    kind: NeedsInputKind,
) -> Result<String, HandlerError> {
    let open = unanswered(ctx).await?;
    if open.iter().any(|n| n.call_id == call_id && n.kind == kind) {
        return Ok(promise_key(kind, call_id));
    }
    let what = match kind {
        NeedsInputKind::Approval => "an approval",
        NeedsInputKind::Outcome => "an answer",
    };
    let waiting = if open.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = open
            .iter()
            .map(|n| {
                let kind = if n.kind == NeedsInputKind::Approval { "an approval" } else { "an answer" };
                format!("{kind} of call {:?}", n.call_id)
            })
            .collect();
        format!(" (it waits for {})", list.join(", "))
    };
    Err(terminal(DurableError::NotAwaited {
        run_id: ctx.key().to_owned(),
        call_id: call_id.to_owned(),
        what,
        waiting,
    }))
}

#[restate_sdk::object]
impl HarnessxTool {
    #[handler]
    async fn execute(
        &self,
        ctx: ObjectContext<'_>,
        invocation: Json<Invocation>,
    ) -> Result<Json<Executed>, HandlerError> {
        let Invocation { call, config } = invocation.into_inner();
        let key = ctx.key().to_owned();
        let run_id = key.rsplit_once('/').map_or(key.as_str(), |(run, _)| run).to_owned();
        self.0.config.refuse(&run_id, &config)?;
        let fresh = Arc::new(AtomicBool::new(false));
        let started = fresh.clone();
        ctx.run(|| async move {
            started.store(true, Ordering::SeqCst);
            Ok(())
        })
        .name("start")
        .await?;
        let agent = self.0.agent.clone();
        let executed: Json<Executed> = ctx
            .run(|| async move {
                let mut batch = agent.tools().plan_batch(std::slice::from_ref(&call));
                let manual = batch.replay_policy(0) == Some(ReplayPolicy::Manual);
                if manual && !fresh.load(Ordering::SeqCst) {
                    let result = ToolResult::error(&call.id, &call.name, "outcome unknown");
                    return Ok(Json(Executed { result, unknown: Some(Unknown::Interrupted) }));
                }
                // Stable across attempts and workers: the same for every re-run.
                batch.set_idempotency_key(0, key);
                batch.authorize(0);
                let ctx = RunContext::new().with_permissions(agent.permissions().clone());
                // `safe`/`idempotent` calls that time out are retried under their
                // `ToolRetry`; a `manual` one that times out is asked about.
                let hooks = RunHooks::new().retry_timeouts(true);
                let outcome = agent.tools().run_planned(batch, &ctx, &hooks).await.pop().expect("one call");
                let unknown = (manual && outcome.timed_out).then_some(Unknown::TimedOut);
                Ok(Json(Executed { result: outcome.result, unknown }))
            })
            .name("exec")
            .await?;
        Ok(executed)
    }
}

/// The endpoint serving both services over `agent`.
pub(crate) fn endpoint(agent: Arc<Agent>) -> Endpoint {
    let shared = Arc::new(Shared { config: WorkerConfig::of(&agent), agent });
    Endpoint::builder().bind(HarnessxRun(shared.clone())).bind(HarnessxTool(shared)).build()
}
