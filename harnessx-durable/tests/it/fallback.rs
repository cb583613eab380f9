//! A fallback model in a durable run: the journal keeps which model answered each turn,
//! and a resume replays the answered turns without asking any model again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use harnessx_agent::model::{FallbackModel, FunctionModel, Model, ModelError, ModelResponse, ModelRetry};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{AgentRuntime, Entry, JournalStore, RunStatus, SqliteJournal};
use serde_json::json;

#[derive(Default)]
struct World {
    primary: AtomicUsize,
    backup: AtomicUsize,
    /// The first fetch hangs (the "crash").
    hung: AtomicBool,
}

/// The primary is down (503 every time); the backup calls `fetch` once, then answers.
fn agent(world: &Arc<World>) -> Agent {
    let w = world.clone();
    let primary = FunctionModel::new(move |_| {
        w.primary.fetch_add(1, Ordering::SeqCst);
        Err(ModelError::Http { status: 503, message: "overloaded".into() })
    })
    .with_name("openai:primary");
    let w = world.clone();
    let backup = FunctionModel::new(move |request| {
        w.backup.fetch_add(1, Ordering::SeqCst);
        let fetched =
            request.messages.iter().any(|m| matches!(m, harnessx_agent::model::Message::Tool { .. }));
        Ok(if fetched {
            ModelResponse::text("fetched")
        } else {
            ModelResponse::tool_calls(vec![ToolCall::new("c1", "fetch", "{}")])
        })
    })
    .with_name("anthropic:backup");
    let model = FallbackModel::new(vec![Arc::new(primary) as Arc<dyn Model>, Arc::new(backup)])
        .unwrap()
        .retry(ModelRetry { max_attempts: 1, initial_delay_seconds: 0.0, max_delay_seconds: 0.0 });
    let w = world.clone();
    let fetch = ToolDefinition::new(
        "fetch",
        "Fetches the page.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_, _| {
            let w = w.clone();
            async move {
                if !w.hung.swap(true, Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                Ok("the page".into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    let config = AgentConfig { planning: false, ..AgentConfig::default() };
    Agent::builder().model(model).tool(fetch).config(config).build().unwrap()
}

#[tokio::test]
async fn the_journal_names_the_model_that_answered_and_a_resume_does_not_ask_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let world = Arc::new(World::default());
    let runtime = AgentRuntime::new(agent(&world), Arc::new(SqliteJournal::open(&path).unwrap()));
    let crashed = tokio::time::timeout(Duration::from_millis(1500), runtime.start("r", "Fetch it.")).await;
    assert!(crashed.is_err(), "the run stops at the hanging fetch: {crashed:?}");
    drop(runtime);
    assert_eq!((world.primary.load(Ordering::SeqCst), world.backup.load(Ordering::SeqCst)), (1, 1));

    let journal = SqliteJournal::open(&path).unwrap();
    let (_, entries) = journal.load_run("r").unwrap().unwrap();
    let answered: Vec<(u32, String)> = entries
        .iter()
        .filter_map(|e| match &e.entry {
            Entry::ModelResponse { turn, response } => Some((*turn, response["model"].as_str()?.to_owned())),
            _ => None,
        })
        .collect();
    assert_eq!(answered, [(1, "anthropic:backup".to_owned())]);

    // A new process: turn 1 is replayed from the journal; only turn 2 is asked, and it
    // starts at the model the journal says answered (regression: a resume asked the dead
    // primary again).
    let runtime = AgentRuntime::new(agent(&world), Arc::new(SqliteJournal::open(&path).unwrap()));
    let result = runtime.resume("r").await.unwrap();
    assert_eq!(result.output, "fetched");
    assert_eq!(runtime.status("r").unwrap().run.status, RunStatus::Completed);
    assert_eq!((world.primary.load(Ordering::SeqCst), world.backup.load(Ordering::SeqCst)), (1, 2));
    assert_eq!(result.usage.requests, 2, "each turn's request counted once");
}

/// The fallback list is not part of the run's fingerprint: a run started on one model
/// alone resumes with a fallback added once that model is down, and the backup answers.
#[tokio::test]
async fn a_resume_may_add_a_fallback_when_the_first_model_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let world = Arc::new(World::default());
    // Started on the primary alone, up: it calls `fetch`, which hangs (the crash).
    let up = FunctionModel::new(|_| Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "fetch", "{}")])))
        .with_name("openai:primary");
    let built = agent(&world);
    let started = Agent::builder()
        .model(up)
        .tool(built.tools().list_tools().into_iter().next().unwrap())
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let runtime = AgentRuntime::new(started, Arc::new(SqliteJournal::open(&path).unwrap()));
    let crashed = tokio::time::timeout(Duration::from_millis(1500), runtime.start("r", "Fetch it.")).await;
    assert!(crashed.is_err(), "the run stops at the hanging fetch: {crashed:?}");
    drop(runtime);

    // Resumed with the primary down and a backup after it: accepted, the backup answers.
    let runtime = AgentRuntime::new(agent(&world), Arc::new(SqliteJournal::open(&path).unwrap()));
    let result = runtime.resume("r").await.unwrap();
    assert_eq!(result.output, "fetched");
    assert_eq!((world.primary.load(Ordering::SeqCst), world.backup.load(Ordering::SeqCst)), (1, 1));
}

// `AgentRuntime::status` priced every journaled response at the agent's price, while the
// run priced a fallback model's answer at that model's own: `runs show` and the run's
// result disagreed on the cost.
#[tokio::test]
async fn a_fallback_model_s_cost_is_the_same_in_the_result_and_the_status() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let primary = FunctionModel::new(|_| Err(ModelError::Http { status: 503, message: "overloaded".into() }))
        .with_name("openai:gpt-4o");
    let backup = FunctionModel::new(|_| {
        let mut response = ModelResponse::text("from the backup");
        response.usage.input_tokens = 1_000_000;
        response.usage.output_tokens = 1_000;
        Ok(response)
    })
    .with_name("anthropic:claude-sonnet-4-5");
    let model = FallbackModel::new(vec![Arc::new(primary) as Arc<dyn Model>, Arc::new(backup)])
        .unwrap()
        .retry(ModelRetry { max_attempts: 1, initial_delay_seconds: 0.0, max_delay_seconds: 0.0 });
    let config = AgentConfig {
        planning: false,
        price: Some(harnessx_agent::ModelPrice::new(100.0, 100.0)),
        ..AgentConfig::default()
    };
    let agent = Agent::builder().model(model).config(config).build().unwrap();
    let runtime = AgentRuntime::new(agent, Arc::new(SqliteJournal::open(&path).unwrap()));
    let result = runtime.start("r", "Hi.").await.unwrap();
    let cost = result.usage.cost_usd.unwrap();
    let backup_price = harnessx_agent::ModelPrice::builtin("claude-sonnet-4-5").unwrap();
    let expected = backup_price.cost(&result.usage);
    assert!((cost - expected).abs() < 1e-9, "priced at the backup's own price: {cost} vs {expected}");
    let status = runtime.status("r").unwrap();
    assert_eq!(status.state.usage, result.usage, "runs show says what the run said");
}
