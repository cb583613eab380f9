//! The one run loop: request -> response -> plan the batch -> authorise -> execute ->
//! results -> next request, with the planning list, the tool-list refresh, the
//! `tool_choice` reset, usage and events. A direct run, a durable run on SQLite and a run
//! on Restate all drive it; what differs is the [`Steps`] they pass.

use std::sync::Arc;

use harnessx_core::{
    ApprovalDecision, ApprovalRequest, AuthRequest, Authorization, PermissionManager, PlannedBatch,
    RunContext, ToolCall, ToolEvent, ToolOutput, ToolResult,
};

use crate::budget::{Budget, Limit, RunLimits};
use crate::model::fallback::{Circuit, run_scope};
use crate::model::{FinishReason, Message};
use crate::output::attempts::{Attempts, Verdict};
use crate::run::recovery::{self, Recovery, Unknown};
use crate::run::state::{NeedsInput, NeedsInputKind, RunState, RunStatus};
use crate::run::steps::{Answer, Executed, Recorded, Steps};
use crate::run::{Events, agent_event, call_ids_for_turn, history_safe};
use crate::{Agent, AgentError, AgentEvent};

/// How a run begins: the conversation before it and the prompt.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Earlier messages (a continued conversation); empty for a new one.
    pub history: Vec<crate::model::Message>,
    /// The prompt.
    pub prompt: String,
    /// Limits of this run in place of the agent's (those set replace
    /// [`AgentConfig::run_limits`](crate::AgentConfig::run_limits)'s); `None` for the
    /// agent's own. A run on Restate takes them from whoever started it.
    pub limits: Option<RunLimits>,
    /// What a typed run must answer (`None`: free text). See [`crate::output`].
    pub output: Option<crate::output::Output>,
    /// The model's price in place of the agent's ([`Agent::price`]); `None` for the
    /// agent's. A run on Restate takes it from whoever started it.
    pub price: Option<crate::budget::ModelPrice>,
}

/// Drives a run to its end, to a stop for input, or to a limit, over `steps`.
/// `permissions` is the manager the run decides with: the agent's own for a direct run
/// (its session grants last as long as the agent), a fork of it for a durable run
/// (grants belong to the run, rebuilt from its recorded decisions on resume).
///
/// The run's limits ([`AgentConfig::run_limits`](crate::AgentConfig::run_limits)) are
/// checked here, so they hold on every backend: the turns and anything already reached
/// before each request (and a request whose input alone passes the tokens left is not
/// sent), tokens and cost after each response (its calls then do not run), tool calls
/// before each batch (the calls past the limit get an error result and do not run). At
/// a limit the backend records the stop ([`Steps::limit_reached`]), or waits for higher
/// limits.
pub async fn drive<S: Steps>(
    agent: &Agent,
    steps: &mut S,
    start: Start,
    permissions: &PermissionManager,
    events: Option<&Events>,
) -> Result<RunState, S::Error> {
    // A fallback model's switch holds for the run (see `FallbackModel`).
    let circuit = Circuit::default();
    run_scope(circuit.clone(), run(agent, steps, start, permissions, events, circuit)).await
}

/// [`drive`], within the run's fallback circuit.
async fn run<S: Steps>(
    agent: &Agent,
    steps: &mut S,
    start: Start,
    permissions: &PermissionManager,
    events: Option<&Events>,
    circuit: Circuit,
) -> Result<RunState, S::Error> {
    let Start { history, prompt, limits, output, price } = start;
    let config = agent.config();
    let price = price.or_else(|| agent.price());
    let limits = match limits {
        Some(changes) => config.run_limits().with(&changes),
        None => config.run_limits(),
    };
    if limits.max_cost_usd.is_some() && price.is_none() {
        let model = agent.model().map(|m| m.model_name()).unwrap_or_default();
        return Err(AgentError::UnknownPrice { model }.into());
    }
    let mut budget = Budget::new(limits, price, agent.model_name());
    // [output] A typed run's attempts at its answer; checked before the first request.
    let mut output = output.map(|o| Attempts::start(o, agent)).transpose()?;
    let planning = agent.planning();
    if let Some(p) = &planning
        && history.is_empty()
    {
        p.clear();
    }
    let registry = agent.tools();
    let mut revision = registry.revision();
    let mut request = agent.first_request(history, prompt);
    // Requests of one run share their prefix: a provider that routes on a key keeps them
    // on one cache.
    request.prompt_cache_key = steps.run_id().map(str::to_owned);
    if let Some(o) = &output {
        o.prepare(&mut request);
    }
    let mut ctx = RunContext::new().with_permissions(permissions.clone());
    if let Some(tx) = events {
        let tx = tx.clone();
        ctx = ctx.with_events(Arc::new(move |event: &ToolEvent<'_>| {
            if let Some(event) = agent_event(event) {
                let _ = tx.send(event);
            }
        }));
    }
    if let Some(dir) = &agent.config().result_dir {
        ctx = ctx.with_result_dir(dir.clone()); // context window (issue 28): capped results saved
    }
    // Context window (issue 28): counts each request, compacts the history when it
    // nears the window, recovers from a context-length refusal. See `crate::context`.
    let mut context = crate::context::track::Tracker::new(agent);
    let mut finish_reason = FinishReason::Stop;
    let mut turn: u32 = 0;
    loop {
        turn = turn.saturating_add(1);
        // Tools registered or removed since the last request (an MCP server's
        // `tools/list_changed`): the model sees the new set from this turn on.
        let now = registry.revision();
        if now != revision {
            revision = now;
            request.tools = registry.get_tool_params();
            budget.tools_changed();
            if let Some(o) = &output {
                o.tools_refreshed(&mut request.tools);
            }
            steps.tools_changed(agent)?;
        }
        while let Some(limit) = budget.before_request(turn) {
            if !hold(steps, &mut budget, turn - 1, limit).await? {
                let stop = Stopped { turns: turn - 1, finish_reason, limit };
                return Ok(limited(steps, request.messages, budget, stop, events));
            }
        }
        if let Some(p) = &planning {
            crate::planning::attach(p, &mut request.messages);
        }
        if config.budget_note {
            budget.attach_note(turn, &mut request.messages);
        }
        emit(events, || AgentEvent::ModelRequest { turn, model: agent.model_name() });
        // Context window (issue 28): `steps.response`, with compaction around it.
        let response = context.respond(agent, steps, turn, &mut request, events).await?;
        // Replayed or asked: the run's next request starts at the model that answered.
        circuit.answered(response.model.as_deref());
        for (usage, by) in context.summaries() {
            budget.summary(turn, usage, by.as_deref());
        }
        budget.response(turn, response.usage, response.model.as_deref());
        finish_reason = response.finish_reason;
        let calls = call_ids_for_turn(response.tool_calls, turn);
        if calls.is_empty() {
            request.messages.push(Message::assistant_with_reasoning(
                response.content.clone(),
                Vec::new(),
                response.reasoning.clone(),
            ));
            // [output] A typed run's text answer is checked; a refused one is asked again.
            let value = match output.as_mut().map(|o| o.answer(&response.content)) {
                None => None,
                Some(Verdict::Accepted(value)) => Some(value),
                Some(Verdict::Failed(e)) => return Err(e.into()),
                Some(retry) => {
                    steps.note(format_args!("turn {turn}: the answer did not fit the output schema"));
                    if let Verdict::Retry(Some(message)) = retry {
                        request.messages.push(Message::user(message));
                    }
                    continue;
                }
            };
            let end = End { turn, budget, finish_reason, value };
            return complete(steps, events, request.messages, response.content, end).await;
        }
        if steps.keeps_notes() {
            let named: Vec<String> = calls.iter().map(|c| format!("{} ({})", c.name, c.id)).collect();
            steps.note(format_args!("turn {turn}: calls {}", named.join(", ")));
        }
        request.messages.push(Message::assistant_with_reasoning(
            response.content,
            calls.iter().map(history_safe).collect(),
            response.reasoning,
        ));

        // Tokens or money reached with this response: its calls do not run.
        while let Some(limit) = budget.reached() {
            if !hold(steps, &mut budget, turn, limit).await? {
                let text = budget.not_run(limit);
                let cut = not_run(agent, &calls, 0, &text, events);
                request.messages.extend(cut.iter().map(Message::tool));
                let stop = Stopped { turns: turn, finish_reason, limit };
                return Ok(limited(steps, request.messages, budget, stop, events));
            }
        }
        // The calls run in batches of what the tool-call limit allows: one batch, unless
        // the limit cuts it and a backend that waits in place is given a higher one.
        let mut results: Vec<ToolResult> = Vec::with_capacity(calls.len());
        let mut done = 0;
        while done < calls.len() {
            let allowed = budget.calls_allowed(calls.len() - done);
            if allowed > 0 {
                let chunk = &calls[done..done + allowed];
                budget.count_calls(turn, allowed);
                let ran = run_batch(
                    agent,
                    steps,
                    permissions,
                    turn,
                    chunk,
                    &mut budget,
                    output.as_mut(),
                    planning.as_deref(),
                    &ctx,
                    &mut request.messages,
                )
                .await?;
                match ran {
                    Ok(ran) => results.extend(ran),
                    Err(needs) => {
                        let state = waiting(steps, request.messages, &budget, turn, finish_reason, needs);
                        return Ok(state);
                    }
                }
                done += allowed;
            }
            if done < calls.len() && !hold(steps, &mut budget, turn, Limit::ToolCalls).await? {
                let text = budget.not_run(Limit::ToolCalls);
                results.extend(not_run(agent, &calls[done..], done, &text, events));
                request.messages.extend(results.iter().map(Message::tool));
                let stop = Stopped { turns: turn, finish_reason, limit: Limit::ToolCalls };
                return Ok(limited(steps, request.messages, budget, stop, events));
            }
        }
        if steps.keeps_notes() {
            for (call, result) in calls.iter().zip(&results) {
                let how = if result.is_error { "failed" } else { "answered" };
                steps.note(format_args!("turn {turn}: {} ({}) {how}", call.name, call.id));
            }
        }
        request.messages.extend(results.iter().map(Message::tool));
        // [output] The batch's other calls ran: an accepted `final_result` ends the run.
        match output.as_mut().map(Attempts::after_batch) {
            Some(Verdict::Accepted(value)) => {
                let end = End { turn, budget, finish_reason, value: Some(value) };
                return complete(steps, events, request.messages, String::new(), end).await;
            }
            Some(Verdict::Failed(e)) => return Err(e.into()),
            Some(Verdict::Retry(_) | Verdict::Continue) | None => {}
        }
        agent.after_tool_calls(&mut request);
    }
}

/// Plans, authorises and runs the calls of one batch (all of a turn's, or those the
/// tool-call limit lets through). `Ok(Err(needs))`: the run stopped to wait for them.
#[allow(clippy::too_many_arguments)] // the loop's state for one batch, passed as it is
async fn run_batch<S: Steps>(
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
    // [output] `final_result` calls are answered here, checked, never run.
    if let Some(o) = output {
        o.settle_calls(calls, &mut batch);
    }
    let mut edits = Vec::new();
    let needs =
        plan(agent, steps, permissions, turn, calls, &mut batch, budget, planning, &mut edits).await?;
    if !needs.is_empty() {
        // Nothing of this batch runs until every question is answered.
        if !steps.pause(turn, &needs).await? {
            return Ok(Err(needs));
        }
        for need in &needs {
            answer(agent, steps, permissions, turn, calls, &mut batch, need, &mut edits).await?;
        }
        steps.resumed().await?;
    }
    // The calls a person edited show the arguments they ran with from the next request
    // on.
    show_edits(messages, &edits);

    let writes: Vec<_> = match &planning {
        Some(_) => (0..batch.len()).filter_map(|i| todo_write(&batch, i)).collect(),
        None => Vec::new(),
    };
    let executed = steps.execute(agent, turn, batch, ctx).await?;
    if let Some(p) = &planning {
        for (index, todos) in writes {
            if executed.get(index).is_some_and(|e| !e.result.is_error && e.unknown.is_none()) {
                p.replace(todos);
            }
        }
    }
    let mut results: Vec<ToolResult> = Vec::with_capacity(executed.len());
    let mut unknown: Vec<NeedsInput> = Vec::new();
    for (call, Executed { result, unknown: why, usage }) in calls.iter().zip(executed) {
        if let Some(why) = why {
            unknown.push(recovery::ask(why, &call.id, &result.name, &call.arguments));
        }
        if !usage.is_empty() {
            budget.specialist(turn, &usage);
        }
        results.push(result);
    }
    if !unknown.is_empty() {
        if !steps.pause(turn, &unknown).await? {
            return Ok(Err(unknown));
        }
        for need in &unknown {
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

/// The error results of calls a limit keeps from running (`first` is the position of the
/// first of them in its turn), each announced as any call is: its `tool_call_start` and
/// its `tool_call_end`, so a reader of the events sees what the model is given.
fn not_run(
    agent: &Agent,
    calls: &[ToolCall],
    first: usize,
    text: &str,
    events: Option<&Events>,
) -> Vec<ToolResult> {
    let registry = agent.tools();
    calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let tool = registry.resolve_name(&call.name).ok();
            let result = ToolResult::error(&call.id, tool.as_deref().unwrap_or(&call.name), text);
            emit(events, || AgentEvent::ToolCallStart {
                index: first + i,
                call_id: call.id.clone(),
                name: call.name.clone(),
                tool,
                arguments: call.arguments.clone(),
            });
            emit(events, || AgentEvent::ToolCallEnd {
                index: first + i,
                call_id: call.id.clone(),
                name: result.name.clone(),
                is_error: true,
                content: result.content.clone(),
            });
            result
        })
        .collect()
}

/// Asks the backend what to do at `limit`: `true` when it was given higher limits (the
/// loop goes on), `false` when the run stops.
async fn hold<S: Steps>(
    steps: &mut S,
    budget: &mut Budget,
    turn: u32,
    limit: Limit,
) -> Result<bool, S::Error> {
    steps.note(format_args!("turn {turn}: reached {}", limit.describe(&budget.limits)));
    match steps.limit_reached(turn, limit, &budget.limits, &budget.usage).await? {
        Some(changes) => {
            budget.raise(&changes);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Where a run stopped at a limit.
struct Stopped {
    turns: u32,
    finish_reason: FinishReason,
    limit: Limit,
}

/// The state of a run stopped at a limit, its `run_end` sent.
fn limited<S: Steps>(
    steps: &S,
    messages: Vec<Message>,
    budget: Budget,
    stop: Stopped,
    events: Option<&Events>,
) -> RunState {
    let Stopped { turns, finish_reason, limit } = stop;
    emit(events, || AgentEvent::RunEnd {
        status: RunStatus::LimitReached,
        limit: Some(limit),
        output: String::new(),
        value: None,
        usage: budget.usage,
        turns,
    });
    RunState {
        run_id: steps.run_id().map(str::to_owned),
        status: RunStatus::LimitReached,
        messages,
        usage: budget.usage,
        usage_by_model: budget.by_model,
        usage_by_turn: budget.by_turn,
        limit: Some(limit),
        turns,
        finish_reason,
        ..RunState::default()
    }
}

/// How a run ended: its last turn, what it used, and a typed run's value.
struct End {
    turn: u32,
    budget: Budget,
    finish_reason: FinishReason,
    value: Option<serde_json::Value>,
}

/// The run completed with `text` (a typed run: with its value, as compact JSON):
/// recorded, announced, and its state.
async fn complete<S: Steps>(
    steps: &mut S,
    events: Option<&Events>,
    messages: Vec<Message>,
    text: String,
    end: End,
) -> Result<RunState, S::Error> {
    let End { turn, budget, finish_reason, value } = end;
    let output = match &value {
        Some(value) => value.to_string(),
        None => text,
    };
    steps.finish(&output).await?;
    steps.note(format_args!("turn {turn}: the final answer"));
    emit(events, || AgentEvent::RunEnd {
        status: RunStatus::Completed,
        limit: None,
        output: output.clone(),
        value: value.clone(),
        usage: budget.usage,
        turns: turn,
    });
    Ok(RunState {
        run_id: steps.run_id().map(str::to_owned),
        status: RunStatus::Completed,
        output,
        value,
        messages,
        usage: budget.usage,
        usage_by_model: budget.by_model,
        usage_by_turn: budget.by_turn,
        turns: turn,
        finish_reason,
        ..RunState::default()
    })
}

/// The state of a run stopped for input.
fn waiting<S: Steps>(
    steps: &S,
    messages: Vec<Message>,
    budget: &Budget,
    turns: u32,
    finish_reason: FinishReason,
    needs: Vec<NeedsInput>,
) -> RunState {
    RunState {
        run_id: steps.run_id().map(str::to_owned),
        status: RunStatus::NeedsInput,
        messages,
        usage: budget.usage,
        usage_by_model: budget.by_model.clone(),
        usage_by_turn: budget.by_turn.clone(),
        turns,
        finish_reason,
        needs_input: needs,
        ..RunState::default()
    }
}

fn emit(events: Option<&Events>, event: impl FnOnce() -> AgentEvent) {
    if let Some(tx) = events {
        let _ = tx.send(event());
    }
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
    calls: &[ToolCall],
    batch: &mut PlannedBatch,
    budget: &mut Budget,
    planning: Option<&crate::planning::PlanningState>,
    edits: &mut Vec<(String, serde_json::Value)>,
) -> Result<Vec<NeedsInput>, S::Error> {
    let run_id = steps.run_id().map(str::to_owned);
    let mut needs = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        // Counted in call order whether the call runs now or is replayed, so a resumed
        // run counts as the first did.
        let over = match batch.tool(index) {
            Some(tool) if budget.has_per_tool() => budget.per_tool(tool).map(|max| (max, tool.to_owned())),
            _ => None,
        };
        match steps.recorded(&call.id) {
            Recorded::Result(result) => {
                let result = result.clone();
                if let Some(usage) = steps.recorded_usage(&call.id) {
                    budget.specialist(turn, usage);
                }
                if let Some(ApprovalDecision::ApproveEdited { arguments, .. }) =
                    steps.recorded_decision(&call.id, &call.arguments)
                {
                    edits.push((call.id.clone(), arguments));
                }
                // Its handler is not run again: the todo list it wrote is.
                keep_todos(planning, batch, index, &result);
                batch.settle_replayed(index, result);
                continue;
            }
            Recorded::Answer(text) => {
                let tool = batch.tool(index).unwrap_or(&call.name).to_owned();
                let result = ToolResult::success(&call.id, tool, ToolOutput::from(text.to_owned()));
                steps.record(turn, &result);
                batch.settle(index, result);
                continue;
            }
            Recorded::Started | Recorded::Nothing => {}
        }
        if let Some(result) = batch.result(index) {
            // Refused before it could run (unknown tool, bad arguments).
            let result = result.clone();
            steps.record(turn, &result);
            continue;
        }
        if let Some((max, tool)) = over {
            // The tool used its own limit up; the run goes on without it.
            let text = format!("tool-call limit of {max} for {tool} reached: this call was not run");
            let result = ToolResult::error(&call.id, tool, text);
            steps.record(turn, &result);
            batch.settle(index, result);
            continue;
        }
        let policy = batch.replay_policy(index).unwrap_or_default();
        if let Some(run_id) = &run_id {
            batch.set_idempotency_key(index, recovery::idempotency_key(run_id, &call.id));
        }
        if steps.recorded(&call.id) == Recorded::Started {
            let tool = batch.tool(index).unwrap_or(&call.name).to_owned();
            match recovery::recover(policy, Unknown::Interrupted, &call.id, &tool, &call.arguments) {
                Recovery::RunAgain => {
                    // It runs again as it was approved: with the arguments a person gave.
                    let decided = match steps.recorded_decision(&call.id, &call.arguments) {
                        Some(decision @ ApprovalDecision::ApproveEdited { .. }) => {
                            permissions.apply(&tool, decision)
                        }
                        _ => Authorization::Allow,
                    };
                    conclude(steps, permissions, turn, batch, index, &call.id, &tool, decided, edits);
                }
                Recovery::Ask(need) => needs.push(need),
            }
            continue;
        }
        // The rules (or the agent's authorizer) first, on borrowed values: an ALLOW (the
        // common case) allocates nothing.
        let mut decided = {
            let request = AuthRequest {
                tool: batch.tool(index).unwrap_or(&call.name),
                permission: batch.permission(index),
                call_id: &call.id,
                arguments: batch.arguments(index).unwrap_or(&serde_json::Value::Null),
            };
            rules(agent, permissions, request).await
        };
        if let Authorization::Allow = decided {
            batch.authorize(index);
            continue;
        }
        let tool = batch.tool(index).unwrap_or(&call.name).to_owned();
        if let Authorization::Wait { question } = decided {
            decided = if let Some(decision) = steps.recorded_decision(&call.id, &call.arguments) {
                permissions.apply(&tool, decision)
            } else if permissions.can_decide() {
                let arguments = batch.arguments(index).cloned().unwrap_or_default();
                let ask = ApprovalRequest { tool_name: tool.clone(), call_id: call.id.clone(), arguments };
                match steps.decide(permissions, ask, &call.arguments).await? {
                    Some(decision) => permissions.apply(&tool, decision),
                    None => Authorization::Wait { question },
                }
            } else {
                Authorization::Wait { question }
            };
        }
        match decided {
            Authorization::Wait { question } if run_id.is_some() => needs.push(NeedsInput {
                kind: NeedsInputKind::Approval,
                call_id: call.id.clone(),
                tool,
                arguments: call.arguments.clone(),
                reason: question,
            }),
            decided => conclude(steps, permissions, turn, batch, index, &call.id, &tool, decided, edits),
        }
    }
    Ok(needs)
}

/// The decision on a call before any person is asked: the agent's
/// [`Authorizer`](harnessx_core::Authorizer) when it has one (asked failing closed),
/// else the manager's rules (levels, overrides, argument rules, grants).
async fn rules(agent: &Agent, permissions: &PermissionManager, request: AuthRequest<'_>) -> Authorization {
    match agent.authorizer() {
        Some(authorizer) => harnessx_core::permission::ask(&**authorizer, request).resolve().await,
        None => permissions.rules(request),
    }
}

/// Acts on the authorisation of one call: it runs (with the arguments a person edited,
/// once they pass the schema and the deny rules again), or it gets its refusal.
#[allow(clippy::too_many_arguments)] // the loop's state for one call, passed as it is
fn conclude<S: Steps>(
    steps: &mut S,
    permissions: &PermissionManager,
    turn: u32,
    batch: &mut PlannedBatch,
    index: usize,
    call_id: &str,
    tool: &str,
    decided: Authorization,
    edits: &mut Vec<(String, serde_json::Value)>,
) {
    match decided {
        Authorization::Allow => batch.authorize(index),
        Authorization::AllowEdited { arguments } => {
            if batch.edit(index, arguments.clone()).is_err() {
                // Settled with the reason, for the model.
                if let Some(result) = batch.result(index) {
                    let result = result.clone();
                    steps.record(turn, &result);
                }
                return;
            }
            let rechecked = permissions.recheck_edited(
                tool,
                batch.permission(index),
                batch.arguments(index).unwrap_or(&serde_json::Value::Null),
            );
            match rechecked {
                Authorization::Allow => {
                    batch.authorize(index);
                    edits.push((call_id.to_owned(), arguments));
                }
                refused => deny(steps, turn, batch, index, call_id, tool, refused),
            }
        }
        refused => deny(steps, turn, batch, index, call_id, tool, refused),
    }
}

/// Puts the arguments calls ran with into the assistant message that made them (the last
/// one), so the model sees what ran.
fn show_edits(messages: &mut [Message], edits: &[(String, serde_json::Value)]) {
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

/// The todo list a successful built-in `write_todos` call wrote, kept in this process's
/// planning state whichever process or worker ran (or journaled) it, so the next
/// request shows the list on every backend.
fn keep_todos(
    planning: Option<&crate::planning::PlanningState>,
    batch: &PlannedBatch,
    index: usize,
    result: &ToolResult,
) {
    if let Some(p) = planning
        && !result.is_error
        && let Some((_, todos)) = todo_write(batch, index)
    {
        p.replace(todos);
    }
}

/// The list a `write_todos` call of the batch writes, if it is one that will run.
fn todo_write(batch: &PlannedBatch, index: usize) -> Option<(usize, Vec<serde_json::Value>)> {
    (batch.tool(index)? == "write_todos")
        .then(|| Some((index, batch.arguments(index)?.get("todos")?.as_array()?.clone())))
        .flatten()
}

/// Gives a refused call its error result.
fn deny<S: Steps>(
    steps: &mut S,
    turn: u32,
    batch: &mut PlannedBatch,
    index: usize,
    call_id: &str,
    tool: &str,
    refused: Authorization,
) {
    let (reason, message) = match refused {
        Authorization::Deny { reason, message } => (reason, message),
        // An ASK nobody can answer.
        _ => (harnessx_core::DenyReason::NoApprover, harnessx_core::PERMISSION_DENIED.into()),
    };
    tracing::info!(tool, call_id, ?reason, "tool call denied");
    let result = ToolResult::error(call_id, tool, message);
    steps.record(turn, &result);
    batch.settle(index, result);
}

/// Applies the answer to one question of a paused batch (a backend that waits in
/// place: Restate).
#[allow(clippy::too_many_arguments)] // the loop's state for one question, passed as it is
async fn answer<S: Steps>(
    agent: &Agent,
    steps: &mut S,
    permissions: &PermissionManager,
    turn: u32,
    calls: &[ToolCall],
    batch: &mut PlannedBatch,
    need: &NeedsInput,
    edits: &mut Vec<(String, serde_json::Value)>,
) -> Result<(), S::Error> {
    let Some(index) = calls.iter().position(|c| c.id == need.call_id) else { return Ok(()) };
    match need.kind {
        NeedsInputKind::Approval => {
            let arguments = batch.arguments(index).cloned().unwrap_or_default();
            let request = AuthRequest {
                tool: &need.tool,
                permission: batch.permission(index),
                call_id: &need.call_id,
                arguments: &arguments,
            };
            // Granted for the session by the answer to an earlier question of the batch.
            let decided = match rules(agent, permissions, request).await {
                Authorization::Wait { .. } => match steps.wait(need).await? {
                    Answer::Decision(decision) => permissions.apply(&need.tool, decision),
                    Answer::Outcome(_) => Authorization::denied(harnessx_core::DenyReason::Rejected),
                },
                decided => decided,
            };
            conclude(steps, permissions, turn, batch, index, &need.call_id, &need.tool, decided, edits);
        }
        NeedsInputKind::Outcome => {
            let text = match steps.wait(need).await? {
                Answer::Outcome(text) => text,
                Answer::Decision(_) => need.reason.clone(),
            };
            let result = ToolResult::success(&need.call_id, &need.tool, ToolOutput::from(text));
            steps.record(turn, &result);
            batch.settle(index, result);
        }
    }
    Ok(())
}
