//! The one run loop: request -> response -> plan the batch -> authorise -> execute ->
//! results -> next request, with the planning list, the tool-list refresh, the
//! `tool_choice` reset, usage and events. A direct run, a durable run on SQLite and a run
//! on Restate all drive it; what differs is the [`Steps`] they pass.

use std::sync::Arc;

use harnessx_core::hooks::{Blocked, RunUsage};
use harnessx_core::{PermissionManager, RunContext, ToolCall, ToolEvent, ToolResult};

use crate::budget::{Budget, Limit, RunLimits};
use crate::model::fallback::{Circuit, run_scope};
use crate::model::{FinishReason, Message};
use crate::output::attempts::{Attempts, Verdict};
use crate::run::state::{NeedsInput, RunState, RunStatus};
use crate::run::steps::Steps;
use crate::run::{Events, agent_event, call_ids_for_turn, history_safe, hook_points};
use crate::{Agent, AgentError, AgentEvent};

/// How a run begins: the conversation before it and the prompt.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Earlier messages (a continued conversation); empty for a new one.
    pub history: Vec<crate::model::Message>,
    /// The prompt.
    pub prompt: String,
    /// The media attached to the prompt (none for a prompt of text alone): sent with it in
    /// the first user message.
    pub parts: harnessx_core::Parts,
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
    let state = run_scope(circuit.clone(), run(agent, steps, start, permissions, events, circuit)).await?;
    // Every state the loop returns is the end of this drive (a durable run's pause or
    // limit too: a resume is a drive of its own).
    if !agent.hooks().is_empty() {
        // (Boxed, as every hook step: a run without hooks keeps a small future.)
        Box::pin(steps.run_end(agent, &state)).await?;
    }
    Ok(state)
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
    let Start { history, prompt, parts, limits, output, price } = start;
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
    let hooked = !agent.hooks().is_empty();
    // The prompt's hooks, before the first request (their recorded decision on a resume).
    let prompt_hooks = match hooked {
        true => Some(Box::pin(steps.user_prompt(agent, &prompt, RunUsage::default())).await?),
        false => None,
    };
    // The prompt's media, for the first `model_request` event (a clone shares them).
    let mut attached = if events.is_some() { parts.clone() } else { harnessx_core::Parts::new() };
    let mut request = agent.first_request(history, crate::Prompt { text: prompt, parts });
    if let Some(outcome) = prompt_hooks {
        hook_points::report(events, outcome.decisions());
        if let Some(blocked) = outcome.blocked {
            let end = End { turn: 0, budget, finish_reason: FinishReason::Stop, value: None };
            return Box::pin(ended_by_hook(steps, events, request.messages, end, blocked)).await;
        }
        // Context a hook added: the model reads it after the prompt, in the same message.
        if let Some(Message::User { content, .. }) = request.messages.last_mut() {
            for added in outcome.context {
                content.push_str("\n\n");
                content.push_str(&added.text);
            }
        }
    }
    // Requests of one run share their prefix: a provider that routes on a key keeps them
    // on one cache.
    request.prompt_cache_key = steps.run_id().map(str::to_owned);
    if let Some(o) = &output {
        o.prepare(&mut request);
    }
    let mut ctx = RunContext::new().with_permissions(permissions.clone()).with_hooks(agent.hooks().clone());
    if let Some(run_id) = steps.run_id() {
        ctx = ctx.with_run_id(run_id);
    }
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
        let replayed = events.is_some() && steps.replays_response(turn);
        emit(events.filter(|_| !replayed), || AgentEvent::ModelRequest {
            turn,
            model: agent.model_name(),
            parts: std::mem::take(&mut attached),
        });
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
        // The response's hooks, before anything of it is kept or run: a stop ends the run
        // without it.
        if hooked {
            let usage = budget.usage.into();
            let outcome =
                Box::pin(steps.model_response(agent, turn, &response.content, &calls, usage)).await?;
            if let Some(blocked) = outcome.stopped {
                hook_points::report(events, std::iter::once((blocked.hook.as_str(), "stop")));
                let end = End { turn, budget, finish_reason, value: None };
                return Box::pin(ended_by_hook(steps, events, request.messages, end, blocked)).await;
            }
        }
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
                ctx.set_usage(budget.usage.into());
                let ran = super::batch::run_batch(
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
        // Media the results brought are input of the next request the budget did not see.
        if results.iter().any(|r| !r.parts.is_empty()) {
            let cost = crate::context::MediaCost::for_model(&agent.model_name());
            budget.media_added(results.iter().flat_map(|r| r.parts.iter()).map(|p| cost.tokens(p)).sum());
        }
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
                parts: harnessx_core::Parts::new(),
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
        blocked: None,
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
        blocked: None,
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

/// A hook ended the run (`blocked`: which, and why): recorded, announced, and its state.
/// The messages are the conversation before what the hook refused (the prompt is kept; a
/// stopped response is not).
async fn ended_by_hook<S: Steps>(
    steps: &mut S,
    events: Option<&Events>,
    messages: Vec<Message>,
    end: End,
    blocked: Blocked,
) -> Result<RunState, S::Error> {
    let End { turn, budget, finish_reason, value: _ } = end;
    steps.blocked(turn, &blocked).await?;
    steps.note(format_args!("turn {turn}: blocked by hook {}: {}", blocked.hook, blocked.message));
    emit(events, || AgentEvent::RunEnd {
        status: RunStatus::Blocked,
        limit: None,
        output: String::new(),
        value: None,
        usage: budget.usage,
        turns: turn,
        blocked: Some(blocked.clone()),
    });
    Ok(RunState {
        run_id: steps.run_id().map(str::to_owned),
        status: RunStatus::Blocked,
        messages,
        usage: budget.usage,
        usage_by_model: budget.by_model,
        usage_by_turn: budget.by_turn,
        turns: turn,
        finish_reason,
        blocked: Some(blocked),
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
