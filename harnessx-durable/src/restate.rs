//! Durable runs on a Restate cluster (feature `restate`). WORK IN PROGRESS (issue 13):
//! a spike of the design in the issue notes, not yet the `AgentRuntime` semantics.
//!
//! - `HarnessxRun` (a workflow keyed by run id) drives the agent: each model request is
//!   a journaled `ctx.run`; each turn's calls fan out as invocations of `HarnessxTool`.
//! - `HarnessxTool` (a virtual object keyed `"{run}/{call}"`) runs one call: it journals
//!   a start, then the execution. A start replayed with an execution not journaled means
//!   an earlier attempt died mid-call: `manual` tools are then not run again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use restate_sdk::prelude::*;

use harnessx_agent::model::{Message, ModelResponse};
use harnessx_agent::{Agent, call_ids_for_turn, history_safe};
use harnessx_core::{
    ApprovalDecision, PERMISSION_DENIED, PermissionLevel, ReplayPolicy, RunContext, RunHooks, ToolCall,
    ToolResult,
};

/// What a tool invocation answers when an earlier attempt started the call and died
/// before its result was journaled, and the tool is `manual`.
pub const OUTCOME_UNKNOWN: &str = "harnessx: outcome unknown";

/// The workflow that drives one run.
pub struct HarnessxRun {
    agent: Arc<Agent>,
}

/// The object that runs one call.
pub struct HarnessxTool {
    agent: Arc<Agent>,
}

impl HarnessxRun {
    /// The workflow over `agent`.
    pub fn new(agent: Arc<Agent>) -> Self {
        Self { agent }
    }
}

impl HarnessxTool {
    /// The tool object over `agent`'s tools.
    pub fn new(agent: Arc<Agent>) -> Self {
        Self { agent }
    }
}

fn failed(e: impl std::fmt::Display) -> HandlerError {
    TerminalError::new(e.to_string()).into()
}

#[restate_sdk::workflow]
impl HarnessxRun {
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>, prompt: String) -> Result<String, HandlerError> {
        let run_id = ctx.key().to_owned();
        let mut request = self.agent.first_request(Vec::new(), prompt);
        // Tools granted for the rest of the run (`ApproveForSession`); rebuilt on replay
        // from the journaled decisions.
        let mut granted: std::collections::HashSet<String> = std::collections::HashSet::new();
        for turn in 1..=self.agent.config().max_turns {
            let agent = self.agent.clone();
            let req = request.clone();
            let Json(response): Json<ModelResponse> = ctx
                .run(|| async move { agent.complete(&req).await.map(Json).map_err(failed) })
                .name(format!("model {turn}"))
                .await?;
            let calls = call_ids_for_turn(response.tool_calls.clone(), turn);
            if calls.is_empty() {
                return Ok(response.content);
            }
            request
                .messages
                .push(Message::assistant(response.content.clone(), calls.iter().map(history_safe).collect()));
            // Concurrent calls go out together; serial ones one at a time, in call
            // order, alongside them (as the engine schedules a batch). Calls refused
            // while planning (unknown tool, bad arguments) are answered here.
            let plan = self.agent.tools().plan_batch(&calls);
            let mut results: Vec<Option<ToolResult>> =
                (0..calls.len()).map(|i| plan.result(i).cloned()).collect();
            // Permissions, decided here so that they are journaled: ASK waits on a
            // durable promise `approval/{call}` that `HarnessxRun/approve` resolves.
            for i in 0..calls.len() {
                if results[i].is_some() {
                    continue;
                }
                let tool = plan.tool(i).expect("a call that will run has a tool").to_owned();
                let level = self.agent.permissions().effective_level(&tool, plan.permission(i));
                let allowed = match level {
                    PermissionLevel::Allow => true,
                    PermissionLevel::Deny => false,
                    PermissionLevel::Ask if granted.contains(&tool) => true,
                    PermissionLevel::Ask => {
                        let waiting = serde_json::json!([{
                            "kind": "approval",
                            "call_id": calls[i].id,
                            "tool": tool,
                            "arguments": calls[i].arguments,
                            "reason": format!("{tool} needs approval (ASK) and no one was there to approve it"),
                        }]);
                        ctx.set("needs_input", Json(waiting));
                        let key = format!("approval/{}", calls[i].id);
                        let Json(decision): Json<ApprovalDecision> =
                            ctx.promise::<Json<ApprovalDecision>>(&key).await?;
                        ctx.clear("needs_input");
                        if decision == ApprovalDecision::ApproveForSession {
                            granted.insert(tool.clone());
                        }
                        decision.is_approved()
                    }
                };
                if !allowed {
                    results[i] = Some(ToolResult::error(&calls[i].id, &tool, PERMISSION_DENIED));
                }
            }
            let mut serial: std::collections::VecDeque<usize> =
                (0..calls.len()).filter(|&i| results[i].is_none() && !plan.is_concurrent(i)).collect();
            let invoke = |i: usize| {
                ctx.object_client::<HarnessxToolClient<'_>>(format!("{run_id}/{}", calls[i].id))
                    .execute(Json(Invocation { call: calls[i].clone(), authorized: true }))
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
            while let Some((slot, result)) = pending.next().await? {
                let i = slots[slot];
                results[i] = Some(result?.into_inner());
                if !plan.is_concurrent(i)
                    && let Some(next) = serial.pop_front()
                {
                    pending.push(invoke(next));
                    slots.push(next);
                }
            }
            for (call, result) in calls.iter().zip(results) {
                let mut result = result.expect("every call answered");
                if result.is_error && result.content == OUTCOME_UNKNOWN {
                    // Wait, durably, for someone to say whether it took effect.
                    let waiting = serde_json::json!([{
                        "kind": "outcome",
                        "call_id": call.id,
                        "tool": call.name,
                        "arguments": call.arguments,
                        "reason": format!("{} started and its outcome is unknown (its worker died); it is `manual`, so it is not run again. Say whether it took effect", call.name),
                    }]);
                    ctx.set("needs_input", Json(waiting));
                    let key = format!("outcome/{}", call.id);
                    let text: String = ctx.promise::<String>(&key).await?;
                    ctx.clear("needs_input");
                    result = ToolResult::success(&call.id, &call.name, text.into());
                }
                request.messages.push(Message::tool(&result));
            }
        }
        Err(failed(format!("the run used all {} turns", self.agent.config().max_turns)))
    }

    /// Decides on an ASK call the run waits on.
    #[handler]
    async fn approve(
        &self,
        ctx: SharedWorkflowContext<'_>,
        approval: Json<Approval>,
    ) -> Result<(), HandlerError> {
        let Approval { call_id, decision } = approval.into_inner();
        ctx.resolve_promise::<Json<ApprovalDecision>>(&format!("approval/{call_id}"), Json(decision));
        Ok(())
    }

    /// Answers whether a `manual` call with an unknown outcome took effect.
    #[handler]
    async fn answer(&self, ctx: SharedWorkflowContext<'_>, answer: Json<Answer>) -> Result<(), HandlerError> {
        let Answer { call_id, text } = answer.into_inner();
        ctx.resolve_promise::<String>(&format!("outcome/{call_id}"), text);
        Ok(())
    }

    /// What the run waits for (a JSON array, empty when it waits for nothing).
    #[handler]
    async fn waiting(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<serde_json::Value>, HandlerError> {
        let found: Option<Json<serde_json::Value>> = ctx.get("needs_input").await?;
        Ok(found.unwrap_or_else(|| Json(serde_json::json!([]))))
    }
}

/// The body of `HarnessxRun/approve`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Approval {
    /// The call.
    pub call_id: String,
    /// The decision (`"approve"`, `"approve_for_session"`, `"deny"`).
    pub decision: ApprovalDecision,
}

/// What the workflow asks `HarnessxTool/execute` to run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Invocation {
    /// The call.
    pub call: ToolCall,
    /// The workflow decided its permission already.
    pub authorized: bool,
}

/// The body of `HarnessxRun/answer`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    /// The call.
    pub call_id: String,
    /// Whether it took effect, and what it did; becomes its result.
    pub text: String,
}

#[restate_sdk::object]
impl HarnessxTool {
    #[handler]
    async fn execute(
        &self,
        ctx: ObjectContext<'_>,
        invocation: Json<Invocation>,
    ) -> Result<Json<ToolResult>, HandlerError> {
        let Invocation { call, authorized } = invocation.into_inner();
        let key = ctx.key().to_owned();
        let fresh = Arc::new(AtomicBool::new(false));
        let started = fresh.clone();
        ctx.run(|| async move {
            started.store(true, Ordering::SeqCst);
            Ok(())
        })
        .name("start")
        .await?;
        let agent = self.agent.clone();
        let Json(result): Json<ToolResult> = ctx
            .run(|| async move {
                let mut batch = agent.tools().plan_batch(std::slice::from_ref(&call));
                if !fresh.load(Ordering::SeqCst) && batch.replay_policy(0) == Some(ReplayPolicy::Manual) {
                    return Ok(Json(ToolResult::error(&call.id, &call.name, OUTCOME_UNKNOWN)));
                }
                batch.set_idempotency_key(0, key);
                if authorized {
                    batch.authorize(0);
                }
                let ctx = RunContext::new().with_permissions(agent.permissions().clone());
                let hooks = RunHooks::new().retry_timeouts(true);
                let mut outcomes = agent.tools().run_planned(batch, &ctx, &hooks).await;
                Ok(Json(outcomes.pop().expect("one call").result))
            })
            .name("exec")
            .await?;
        Ok(Json(result))
    }
}

/// Serves the run workflow and the tool object for `agent` on `listener` until `stop`.
pub async fn serve(
    agent: Arc<Agent>,
    listener: tokio::net::TcpListener,
    stop: impl std::future::Future<Output = ()>,
) {
    let endpoint =
        Endpoint::builder().bind(HarnessxRun::new(agent.clone())).bind(HarnessxTool::new(agent)).build();
    HttpServer::new(endpoint).serve_with_cancel(listener, stop).await;
}
