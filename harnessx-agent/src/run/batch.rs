//! One batch of a turn's calls: planned, settled from what the backend recorded (results,
//! answers, recovery of calls that started), authorised against the run's
//! [`Authorizer`] with [`PlannedBatch::authorize`] (the one permission flow, in core),
//! its questions put to a person or handed back, run, and its results gathered.

use std::sync::Arc;

use harnessx_core::{
    ApprovalDecision, ApprovalRequest, AuthRequest, Authorization, Authorizer, Decision, PermissionLevel,
    PermissionManager, Permit, PlannedBatch, PlannedCall, RunContext, ToolCall, ToolOutput, ToolResult,
};

use crate::Agent;
use crate::budget::Budget;
use crate::model::Message;
use crate::output::attempts::Attempts;
use crate::run::recovery::{self, Recovery, Unknown};
use crate::run::state::{NeedsInput, NeedsInputKind};
use crate::run::steps::{Answer, Executed, Recorded, Steps};

/// Calls whose arguments a person edited: the call's id and the arguments it ran with.
type Edits = Vec<(String, serde_json::Value)>;

/// Plans, authorises and runs the calls of one batch (all of a turn's, or those the
/// tool-call limit lets through). `Ok(Err(needs))`: the run stopped to wait for them.
#[allow(clippy::too_many_arguments)] // the loop's state for one batch, passed as it is
pub(super) async fn run_batch<S: Steps>(
    agent: &Agent,
    steps: &mut S,
    permissions: &PermissionManager,
    turn: u32,
    calls: &[ToolCall],
    budget: &mut Budget,
    output: Option<&mut Attempts>,
    planning: Option<&crate::planning::PlanningState>,
    ctx: &RunContext,
    messages: &mut [Message],
) -> Result<Result<Vec<ToolResult>, Vec<NeedsInput>>, S::Error> {
    let mut batch = agent.tools().plan_batch(calls);
    // The lists built-in `write_todos` calls write, read before anything settles them:
    // kept once the batch is done, whether the call ran here, elsewhere or was replayed.
    let writes: Vec<_> = match planning {
        Some(_) => batch.iter_mut().filter_map(|mut c| todo_write(&mut c)).collect(),
        None => Vec::new(),
    };
    // [output] `final_result` calls are answered here, checked, never run.
    if let Some(o) = output {
        o.settle_calls(&mut batch);
    }
    let mut edits = Vec::new();
    let needs = plan(agent, steps, permissions, turn, &mut batch, budget, &mut edits, ctx).await?;
    if !needs.is_empty() {
        // Nothing of this batch runs until every question is answered.
        if !steps.pause(turn, &needs).await? {
            return Ok(Err(needs));
        }
        for need in &needs {
            answer(agent, steps, permissions, turn, &mut batch, need, &mut edits).await?;
        }
        steps.resumed().await?;
    }
    // The calls a person edited show the arguments they ran with from the next request
    // on.
    show_edits(messages, &edits);

    let executed = steps.execute(agent, turn, batch, ctx).await?;
    if let Some(p) = planning {
        for (position, todos) in writes {
            if executed.get(position).is_some_and(|e| !e.result.is_error && e.unknown.is_none()) {
                p.replace(todos);
            }
        }
    }
    let mut results: Vec<ToolResult> = Vec::with_capacity(executed.len());
    let needs = gather(calls, executed, turn, budget, &mut results);
    if !needs.is_empty() {
        if !steps.pause(turn, &needs).await? {
            return Ok(Err(needs));
        }
        // A backend that waits in place (Restate) gets a person's word on an unknown
        // outcome here. A call that paused for a login or a server's question keeps its
        // one-line error: only a run that journals its steps can run it again, and such a
        // backend stops here instead (a worker's calls never pause: their context has
        // no run id).
        for need in needs.iter().filter(|n| n.kind == NeedsInputKind::Outcome) {
            let text = match steps.wait(need).await? {
                Answer::Outcome(text) => text,
                Answer::Decision(_) => need.reason.clone(),
            };
            let i = calls.iter().position(|c| c.id == need.call_id).unwrap_or_default();
            results[i] = ToolResult::success(&need.call_id, &need.tool, ToolOutput::from(text));
        }
        steps.resumed().await?;
    }
    Ok(Ok(results))
}

/// The results of executed `calls` into `results`, a specialist's usage counted; returns
/// what they wait for: a person's word on a `manual` call whose outcome is unknown, a
/// login or an answer a call paused for.
fn gather(
    calls: &[ToolCall],
    executed: Vec<Executed>,
    turn: u32,
    budget: &mut Budget,
    results: &mut Vec<ToolResult>,
) -> Vec<NeedsInput> {
    let mut needs = Vec::new();
    for (call, Executed { result, unknown: why, paused, usage }) in calls.iter().zip(executed) {
        if let Some(why) = why {
            needs.push(recovery::ask(why, &call.id, &result.name, &call.arguments));
        }
        if let Some(pause) = paused {
            let kind = match pause.kind {
                harnessx_core::PauseKind::Elicitation => NeedsInputKind::Elicitation,
                _ => NeedsInputKind::Auth,
            };
            needs.push(NeedsInput {
                kind,
                call_id: call.id.clone(),
                tool: result.name.clone(),
                arguments: call.arguments.clone(),
                reason: pause.reason,
                schema: pause.schema,
            });
        }
        if !usage.is_empty() {
            budget.specialist(turn, &usage);
        }
        results.push(result);
    }
    needs
}

/// The answers a call paused for, as its handler sees them
/// ([`ToolContext::answer`](harnessx_core::ToolContext::answer)): a JSON array of MCP
/// elicitation results, in the order they were given.
fn answers_value(texts: &[String]) -> serde_json::Value {
    serde_json::Value::Array(texts.iter().filter_map(|t| serde_json::from_str(t).ok()).collect())
}

/// Settles what the backend already knows of each call, applies the recovery rules to
/// calls that started and have no result, and authorises the rest. Returns what a person
/// has to answer before the batch can run.
#[allow(clippy::too_many_arguments)] // the loop's state for one batch, passed as it is
async fn plan<S: Steps>(
    agent: &Agent,
    steps: &mut S,
    permissions: &PermissionManager,
    turn: u32,
    batch: &mut PlannedBatch,
    budget: &mut Budget,
    edits: &mut Edits,
    ctx: &RunContext,
) -> Result<Vec<NeedsInput>, S::Error> {
    let run_id = steps.run_id().map(str::to_owned);
    let mut needs = Vec::new();
    let mut recorded = Vec::new();
    for mut planned in batch.iter_mut() {
        let call = planned.call().clone();
        // Counted in call order whether the call runs now or is replayed, so a resumed
        // run counts as the first did.
        let over = match planned.tool() {
            Some(tool) if budget.has_per_tool() => budget.per_tool(tool).map(|max| (max, tool.to_owned())),
            _ => None,
        };
        match steps.recorded(&call.id) {
            Recorded::Result(result) => {
                let result = result.clone();
                if let Some(usage) = steps.recorded_usage(&call.id) {
                    budget.specialist(turn, usage);
                }
                // The decision it ran under holds again: its edited arguments are shown,
                // its session grant covers the run's later calls (the one place a
                // replayed run's grants are rebuilt).
                match steps.recorded_decision(&call.id, &call.arguments) {
                    Some(ApprovalDecision::ApproveEdited { arguments, .. }) => {
                        edits.push((call.id.clone(), arguments));
                    }
                    Some(decision) if decision.grants_session() => {
                        permissions.apply(planned.tool().unwrap_or(&call.name), decision);
                    }
                    _ => {}
                }
                planned.settle_replayed(result);
                continue;
            }
            Recorded::Answer(text) => {
                let tool = planned.tool().unwrap_or(&call.name).to_owned();
                let text = if agent.is_question(&tool) { replied(text) } else { text.to_owned() };
                let result = ToolResult::success(&call.id, tool, ToolOutput::from(text));
                steps.record(turn, &result);
                planned.settle(result);
                continue;
            }
            Recorded::Awaits(need) => {
                needs.push(need.clone());
                continue;
            }
            Recorded::Again(answers) => {
                // It runs again from the start, planned as a new call: the answers go to
                // the handler, which hands each to the question it stands for.
                if !answers.is_empty() {
                    planned.set_answer(answers_value(answers));
                }
            }
            Recorded::Started | Recorded::Nothing => {}
        }
        if let Some(result) = planned.result() {
            // Refused before it could run (unknown tool, bad arguments).
            steps.record(turn, result);
            continue;
        }
        if let Some((max, tool)) = over {
            // The tool used its own limit up; the run goes on without it.
            let text = format!("tool-call limit of {max} for {tool} reached: this call was not run");
            let result = ToolResult::error(&call.id, tool, text);
            steps.record(turn, &result);
            planned.settle(result);
            continue;
        }
        if let Some(run_id) = &run_id {
            planned.set_idempotency_key(recovery::idempotency_key(run_id, &call.id));
        }
        // The hooks (their recorded outcome on a resume, not asked again): a refusal or
        // an answer settles the call, a rewrite runs in its place, also when it runs again.
        if !agent.hooks().is_empty() {
            let (tool, arguments) =
                planned.tool_and_arguments().unwrap_or((&call.name, &serde_json::Value::Null));
            let outcome = steps.pre_hooks(agent, &call, tool, arguments, ctx.usage()).await?;
            ctx.report_hooks(&call.id, &outcome);
            let rewritten = outcome.rewritten.clone();
            if planned.apply_hooks(outcome) == Permit::Settled {
                if let Some(result) = planned.result() {
                    steps.record(turn, result);
                }
                continue;
            }
            edits.extend(rewritten.map(|arguments| (call.id.clone(), arguments)));
        }
        let decision = steps.recorded_decision(&call.id, &call.arguments);
        if steps.recorded(&call.id) == Recorded::Started {
            let policy = planned.replay_policy().unwrap_or_default();
            let tool = planned.tool().unwrap_or(&call.name).to_owned();
            match recovery::recover(policy, Unknown::Interrupted, &call.id, &tool, &call.arguments) {
                Recovery::RunAgain => {
                    // It runs again as it was approved: with the arguments a person gave.
                    let decided = match decision {
                        Some(decision @ ApprovalDecision::ApproveEdited { .. }) => {
                            permissions.apply(&tool, decision)
                        }
                        _ => Authorization::Allow,
                    };
                    let permit = planned.decide(decided, Some(permissions));
                    settled(steps, turn, &planned, permit, edits);
                }
                Recovery::Ask(need) => needs.push(need),
            }
            continue;
        }
        // A question for a person: the run waits for the reply (given with `answer`).
        if run_id.is_some()
            && let Some(tool) = planned.tool().filter(|t| agent.is_question(t))
        {
            needs.push(question(&call, tool));
            continue;
        }
        recorded.extend(decision.map(|d| (call.id, d)));
    }
    // The rest, in call order, against the run's authorizer: ALLOW runs, a refusal is
    // recorded, a question is answered by a decision already recorded, else asked.
    let authorizer = RunAuthorizer { agent: agent.authorizer(), permissions, recorded };
    let authorized = batch.authorize(&authorizer, Some(permissions)).await;
    for result in &authorized.refused {
        steps.record(turn, result);
    }
    edits.extend(authorized.edited);
    for question in authorized.questions {
        let Some(mut planned) = batch.get_mut(&question.call_id) else { continue };
        // A session grant made by the answer to an earlier question may cover it now.
        let question = match planned.authorize(&authorizer, Some(permissions)).await {
            Permit::Asks(question) => question,
            permit => {
                settled(steps, turn, &planned, permit, edits);
                continue;
            }
        };
        let raw = planned.call().arguments.clone();
        // A question only a hook's ASK raised (the rules allow the call) is answered by
        // a decision already recorded for it, as the rules' questions are.
        let recorded = authorizer.recorded.iter().find(|(id, _)| *id == question.call_id);
        let decided = if let Some((_, decision)) = recorded {
            Some(permissions.apply(&question.tool, decision.clone()))
        } else if permissions.can_decide() {
            let arguments = planned.arguments().cloned().unwrap_or_default();
            let ask = ApprovalRequest {
                tool_name: question.tool.clone(),
                call_id: question.call_id.clone(),
                arguments,
            };
            steps.decide(permissions, ask, &raw).await?.map(|d| permissions.apply(&question.tool, d))
        } else {
            None
        };
        let permit = match decided {
            Some(decided) => planned.decide(decided, Some(permissions)),
            None if run_id.is_some() => {
                needs.push(NeedsInput {
                    kind: NeedsInputKind::Approval,
                    call_id: question.call_id,
                    tool: question.tool,
                    arguments: raw,
                    reason: question.question,
                    schema: None,
                });
                continue;
            }
            // Nobody to ask: refused.
            None => planned.decide(Authorization::Wait { question: question.question }, Some(permissions)),
        };
        settled(steps, turn, &planned, permit, edits);
    }
    Ok(needs)
}

/// What the model is told of the person's reply to a question: the reply, or, when it
/// is empty, to go on (the words `ask_user` uses when nobody answers).
pub(crate) fn replied(text: &str) -> String {
    match text.trim() {
        "" => "Nobody answered. Proceed on the most likely reading of the request, and state that assumption at the start of your reply.".to_owned(),
        _ => format!("The user answered: {text}"),
    }
}

/// The need of a question tool's call: its question (the `question` argument, or the
/// arguments as they are) for a person to reply to.
fn question(call: &ToolCall, tool: &str) -> NeedsInput {
    let parsed: Option<serde_json::Value> = serde_json::from_str(&call.arguments).ok();
    let asked = parsed.as_ref().and_then(|a| a.get("question")).and_then(serde_json::Value::as_str);
    NeedsInput {
        kind: NeedsInputKind::Question,
        call_id: call.id.clone(),
        tool: tool.to_owned(),
        arguments: call.arguments.clone(),
        schema: None,
        reason: asked.map_or_else(|| call.arguments.clone(), str::to_owned),
    }
}

/// What a decision did to a call, kept: a refusal is recorded, edited arguments are
/// shown to the model from the next request on.
fn settled<S: Steps>(steps: &mut S, turn: u32, planned: &PlannedCall<'_>, permit: Permit, edits: &mut Edits) {
    match permit {
        Permit::Settled => {
            if let Some(result) = planned.result() {
                steps.record(turn, result);
            }
        }
        Permit::Runs => {
            if let Some(arguments) = planned.edited_arguments() {
                edits.push((planned.call().id.clone(), arguments.clone()));
            }
        }
        _ => {}
    }
}

/// The authorizer an agent run's calls are put to: the agent's own
/// ([`AgentBuilder::authorizer`](crate::AgentBuilder::authorizer)) when it has one, else
/// the manager's rules. A question either leaves open is answered by a decision the
/// backend recorded for that call (bound to its arguments), applied through the manager
/// so that its session grant holds again: the recorded decisions are a layer, not a
/// second way of deciding.
struct RunAuthorizer<'a> {
    agent: Option<&'a Arc<dyn Authorizer>>,
    permissions: &'a PermissionManager,
    recorded: Vec<(String, ApprovalDecision)>,
}

impl RunAuthorizer<'_> {
    fn recorded_or(&self, request: AuthRequest<'_>, question: String) -> Authorization {
        match self.recorded.iter().find(|(id, _)| id == request.call_id) {
            Some((_, decision)) => self.permissions.apply(request.tool, decision.clone()),
            None => Authorization::Wait { question },
        }
    }
}

impl Authorizer for RunAuthorizer<'_> {
    /// By name as the agent's authorizer or the manager's rules decide, while no decision
    /// is recorded in the batch (a recorded one is found by the call's id).
    fn authorize_by_name(&self, tool: &str, permission: Option<PermissionLevel>) -> Option<Authorization> {
        if !self.recorded.is_empty() {
            return None;
        }
        match self.agent {
            Some(agent) => agent.authorize_by_name(tool, permission),
            None => self.permissions.rules_only().authorize_by_name(tool, permission),
        }
    }

    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        let inner = match self.agent {
            Some(agent) => agent.authorize(request),
            None => Decision::Now(self.permissions.rules(request)),
        };
        match inner {
            Decision::Now(Authorization::Wait { question }) => {
                Decision::Now(self.recorded_or(request, question))
            }
            Decision::Now(decided) => Decision::Now(decided),
            Decision::Later(later) => Decision::Later(Box::pin(async move {
                match later.await {
                    Authorization::Wait { question } => self.recorded_or(request, question),
                    decided => decided,
                }
            })),
        }
    }
}

/// Puts the arguments calls ran with into the assistant message that made them (the last
/// one), so the model sees what ran.
fn show_edits(messages: &mut [Message], edits: &Edits) {
    if edits.is_empty() {
        return;
    }
    let Some(Message::Assistant { tool_calls, .. }) =
        messages.iter_mut().rev().find(|m| matches!(m, Message::Assistant { .. }))
    else {
        return;
    };
    for (call_id, arguments) in edits {
        if let Some(call) = tool_calls.iter_mut().find(|c| &c.id == call_id) {
            call.arguments = arguments.to_string();
        }
    }
}

/// The list a built-in `write_todos` call of the batch writes (with its position), if it
/// is one that will run. Kept in this process's planning state once its result is a
/// success, whichever process or worker ran (or journaled) it, so the next request
/// shows the list on every backend.
fn todo_write(planned: &mut PlannedCall<'_>) -> Option<(usize, Vec<serde_json::Value>)> {
    if planned.tool()? != "write_todos" {
        return None;
    }
    Some((planned.position(), planned.arguments()?.get("todos")?.as_array()?.clone()))
}

/// Applies the answer to one question of a paused batch (a backend that waits in
/// place: Restate).
async fn answer<S: Steps>(
    agent: &Agent,
    steps: &mut S,
    permissions: &PermissionManager,
    turn: u32,
    batch: &mut PlannedBatch,
    need: &NeedsInput,
    edits: &mut Edits,
) -> Result<(), S::Error> {
    let Some(mut planned) = batch.get_mut(&need.call_id) else { return Ok(()) };
    match need.kind {
        NeedsInputKind::Approval => {
            // Granted for the session by the answer to an earlier question of the batch.
            let authorizer = RunAuthorizer { agent: agent.authorizer(), permissions, recorded: Vec::new() };
            let permit = match planned.authorize(&authorizer, Some(permissions)).await {
                Permit::Asks(_) => {
                    let decided = match steps.wait(need).await? {
                        Answer::Decision(decision) => permissions.apply(&need.tool, decision),
                        Answer::Outcome(_) => Authorization::denied(harnessx_core::DenyReason::Rejected),
                    };
                    planned.decide(decided, Some(permissions))
                }
                permit => permit,
            };
            settled(steps, turn, &planned, permit, edits);
        }
        // Raised only by a call that ran (gathered after execution), never before.
        NeedsInputKind::Auth | NeedsInputKind::Elicitation => {}
        NeedsInputKind::Outcome | NeedsInputKind::Question => {
            let text = match (steps.wait(need).await?, need.kind) {
                (Answer::Outcome(text), NeedsInputKind::Question) => replied(&text),
                (Answer::Outcome(text), _) => text,
                (Answer::Decision(_), NeedsInputKind::Question) => replied(""),
                (Answer::Decision(_), _) => need.reason.clone(),
            };
            let result = ToolResult::success(&need.call_id, &need.tool, ToolOutput::from(text));
            steps.record(turn, &result);
            planned.settle(result);
        }
    }
    Ok(())
}
