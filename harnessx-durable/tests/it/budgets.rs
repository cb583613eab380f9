//! Budgets on a journal: a run stopped at a limit is journaled as `limit_reached`, and a
//! resume under a higher limit continues it with nothing journaled run or asked again;
//! its usage (a specialist's included) is rebuilt from the journal, each response and
//! call counted once, and equals that of a run that never stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx_agent::budget::{Limit, ModelPrice, RunLimits};
use harnessx_agent::model::{FunctionModel, ModelRequest, ModelResponse, Usage};
use harnessx_agent::{Agent, AgentConfig, RunStatus, SubAgent};
use harnessx_core::{ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{AgentRuntime, Entry, JournalStore, MemoryJournal, ResumeOptions, StartOptions};
use serde_json::json;

#[derive(Default)]
struct World {
    requests: AtomicUsize,
    specialist_requests: AtomicUsize,
    counted: AtomicUsize,
}

fn respond(request: &ModelRequest) -> ModelResponse {
    // Turn by turn: two calls (a specialist and a counter), then one call, then the answer.
    let turn = request
        .messages
        .iter()
        .filter(|m| matches!(m, harnessx_agent::model::Message::Assistant { .. }))
        .count();
    let mut response = match turn {
        0 => ModelResponse::tool_calls(vec![
            ToolCall::new("s1", "helper", r#"{"task": "help"}"#),
            ToolCall::new("c1", "count", "{}"),
        ]),
        1 => ModelResponse::tool_calls(vec![ToolCall::new("c2", "count", "{}")]),
        _ => ModelResponse::text("done"),
    };
    response.usage = Usage { input_tokens: 100 * (turn as u64 + 1), output_tokens: 10, ..Usage::default() };
    response
}

fn agent(world: &Arc<World>, limits: RunLimits) -> Agent {
    let w = world.clone();
    let model = FunctionModel::new(move |request: &ModelRequest| {
        w.requests.fetch_add(1, Ordering::SeqCst);
        Ok(respond(request))
    });
    let w = world.clone();
    let small = FunctionModel::new(move |_: &ModelRequest| {
        w.specialist_requests.fetch_add(1, Ordering::SeqCst);
        let mut answer = ModelResponse::text("helped");
        answer.usage = Usage { input_tokens: 1000, output_tokens: 1, ..Usage::default() };
        Ok(answer)
    })
    .with_name("test:small");
    let w = world.clone();
    let count = ToolDefinition::new(
        "count",
        "Count one.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_, _| {
            let w = w.clone();
            async move {
                w.counted.fetch_add(1, Ordering::SeqCst);
                Ok("counted".into())
            }
        }),
    );
    Agent::builder()
        .model(model)
        .tool(count)
        .specialist(SubAgent::new("helper", "Helps.").model(small))
        .config(AgentConfig { planning: false, limits, ..AgentConfig::default() })
        .build()
        .unwrap()
}

fn calls(n: u64) -> RunLimits {
    RunLimits { max_tool_calls: Some(n), ..RunLimits::default() }
}

#[tokio::test]
async fn a_run_paused_at_a_limit_resumes_under_a_higher_one_with_nothing_repeated_and_usage_counted_once() {
    // The same run without a stop, for its usage.
    let whole = Arc::new(World::default());
    let straight =
        AgentRuntime::in_memory(agent(&whole, RunLimits::default())).start("r", "Go.").await.unwrap();
    assert_eq!(straight.status, RunStatus::Completed);
    assert_eq!((straight.usage.requests, straight.usage.tool_calls), (4, 3), "{:?}", straight.usage);

    let world = Arc::new(World::default());
    let journal: Arc<dyn JournalStore> = Arc::new(MemoryJournal::new());
    // One call allowed: the specialist runs, the counter is cut, no second request.
    let first = AgentRuntime::new(agent(&world, calls(1)), journal.clone()).start("r", "Go.").await.unwrap();
    assert_eq!((first.status, first.limit), (RunStatus::LimitReached, Some(Limit::ToolCalls)), "{first:?}");
    let at = |w: &World| {
        (
            w.requests.load(Ordering::SeqCst),
            w.specialist_requests.load(Ordering::SeqCst),
            w.counted.load(Ordering::SeqCst),
        )
    };
    assert_eq!(at(&world), (1, 1, 0));
    assert_eq!(first.usage.input_tokens, 1100, "the specialist's 1000 and the first response's 100");
    let runtime = AgentRuntime::new(agent(&world, calls(1)), journal.clone());
    let report = runtime.status("r").unwrap();
    assert_eq!((report.run.status, report.state.limit), (RunStatus::LimitReached, Some(Limit::ToolCalls)));
    assert_eq!(report.state.usage, first.usage);
    let (_, entries) = journal.load_run("r").unwrap().unwrap();
    assert!(
        matches!(entries.last().map(|e| &e.entry), Some(Entry::LimitReached { limit: Limit::ToolCalls, .. })),
        "{entries:?}"
    );

    // Two allowed: the cut counter runs (the specialist is not asked again), then the
    // second turn's call is cut.
    let second = AgentRuntime::new(agent(&world, calls(2)), journal.clone()).resume("r").await.unwrap();
    assert_eq!(second.status, RunStatus::LimitReached);
    assert_eq!(at(&world), (2, 1, 1));

    // Enough: it finishes, each response and call counted once.
    let done = AgentRuntime::new(agent(&world, calls(10)), journal.clone()).resume("r").await.unwrap();
    assert_eq!((done.status, done.output.as_str()), (RunStatus::Completed, "done"));
    assert_eq!(at(&world), (3, 1, 2));
    assert_eq!(done.usage, straight.usage, "rebuilt from the journal, nothing counted twice");
    assert_eq!(done.usage_by_model, straight.usage_by_model);
    assert_eq!(done.usage_by_turn, straight.usage_by_turn);
    let report = runtime.status("r").unwrap();
    assert_eq!(
        (report.state.usage.input_tokens, report.state.usage.requests, report.state.usage.tool_calls),
        (straight.usage.input_tokens, straight.usage.requests, straight.usage.tool_calls)
    );
}

#[tokio::test]
async fn a_journaled_run_stopped_at_its_turns_resumes_with_more() {
    let world = Arc::new(World::default());
    let journal: Arc<dyn JournalStore> = Arc::new(MemoryJournal::new());
    let turns = |n| RunLimits { max_turns: Some(n), ..RunLimits::default() };
    let first = AgentRuntime::new(agent(&world, turns(1)), journal.clone()).start("t", "Go.").await.unwrap();
    assert_eq!((first.status, first.limit, first.turns), (RunStatus::LimitReached, Some(Limit::Turns), 1));
    // The same limit again: it stops at the same place, asking nothing.
    let again = AgentRuntime::new(agent(&world, turns(1)), journal.clone()).resume("t").await.unwrap();
    assert_eq!(again.status, RunStatus::LimitReached);
    assert_eq!(world.requests.load(Ordering::SeqCst), 1);
    let done = AgentRuntime::new(agent(&world, turns(5)), journal.clone()).resume("t").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!((world.requests.load(Ordering::SeqCst), world.counted.load(Ordering::SeqCst)), (3, 2));
}

#[tokio::test]
async fn a_run_started_with_its_own_limits_and_price_keeps_them_across_resumes() {
    // Regression: a SQLite run took its limits and price from the agent resuming it
    // (`Start { limits: None, price: None }`), so they lasted one process.
    let world = Arc::new(World::default());
    let journal: Arc<dyn JournalStore> = Arc::new(MemoryJournal::new());
    let price = ModelPrice::new(1.0, 2.0);
    let unlimited = || AgentRuntime::new(agent(&world, RunLimits::default()), journal.clone());
    let options = StartOptions { limits: Some(calls(1)), price: Some(price), ..StartOptions::default() };
    let first = unlimited().start_with("o", "Go.", options, None).await.unwrap();
    assert_eq!((first.status, first.limit), (RunStatus::LimitReached, Some(Limit::ToolCalls)), "{first:?}");
    // 100 in and 10 out at $1 and $2 a million (the price is the run's model's: the
    // specialist's own model has none).
    let cost = (100.0 + 10.0 * 2.0) / 1e6;
    assert!((first.usage.cost_usd.unwrap() - cost).abs() < 1e-12, "{:?}", first.usage);

    // Resumed by an agent with no limits: the run's own still hold.
    let again = unlimited().resume("o").await.unwrap();
    assert_eq!((again.status, again.limit), (RunStatus::LimitReached, Some(Limit::ToolCalls)));
    assert_eq!(world.counted.load(Ordering::SeqCst), 0, "the cut call did not run");

    // Raised on resume: the change is the run's from then on.
    let raised = ResumeOptions { limits: calls(2), ..ResumeOptions::default() };
    let second = unlimited().resume_with("o", raised, None).await.unwrap();
    assert_eq!((second.status, second.limit), (RunStatus::LimitReached, Some(Limit::ToolCalls)));
    assert_eq!(world.counted.load(Ordering::SeqCst), 1);
    let third = unlimited().resume("o").await.unwrap();
    assert_eq!(third.status, RunStatus::LimitReached, "still 2, not unlimited");
    let enough = ResumeOptions { limits: calls(10), ..ResumeOptions::default() };
    let done = unlimited().resume_with("o", enough, None).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);

    // `status` prices the run at its own price, whatever the agent asking.
    // Three responses: 600 in and 30 out.
    let expected = (600.0 + 30.0 * 2.0) / 1e6;
    let report = unlimited().status("o").unwrap();
    let usage = report.state.usage;
    assert!((usage.cost_usd.unwrap() - expected).abs() < 1e-12, "{usage:?}");
    assert!((done.usage.cost_usd.unwrap() - expected).abs() < 1e-12, "{:?}", done.usage);
}
