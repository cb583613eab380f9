//! Typed runs on the SQLite journal (`docs/output.md`): the output is journaled first;
//! each attempt is a journaled step; a run that crashes (or fails) in the middle of its
//! retries is resumed by another runtime (another process) that replays the refused
//! attempts from the journal, counts them, and asks the model only for the rest.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx_agent::model::{FunctionModel, Message, ModelError, ModelRequest, ModelResponse};
use harnessx_agent::output::{FINAL_RESULT_TOOL, Output, OutputMode};
use harnessx_agent::{Agent, AgentConfig, AgentError, OutputError, RunStatus};
use harnessx_core::schemars::{self, JsonSchema};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{AgentRuntime, DurableError, Entry, JournalStore, SqliteJournal};
use serde_json::{Value, json};

#[derive(Debug, PartialEq, serde::Deserialize, JsonSchema)]
struct City {
    name: String,
    population: u64,
}

/// A `safe` tool whose first run never ends (the process dies in the middle of it).
fn slow(runs: &Arc<AtomicUsize>) -> ToolDefinition {
    let runs = runs.clone();
    ToolDefinition::new(
        "slow",
        "Slow.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_, _| {
            let runs = runs.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                    std::future::pending::<()>().await;
                }
                Ok("slow done".into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
}

/// Turn 1: `slow` and a `final_result` without `population`; later turns: `final_result`
/// with `later`. Keeps every request.
fn agent(later: Value, runs: &Arc<AtomicUsize>, seen: &Arc<Mutex<Vec<ModelRequest>>>, retries: u32) -> Agent {
    let seen = seen.clone();
    let model = FunctionModel::new(move |request| {
        seen.lock().unwrap().push(request.clone());
        let turn = request.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count() + 1;
        Ok(ModelResponse::tool_calls(if turn == 1 {
            vec![
                ToolCall::new("s1", "slow", "{}"),
                ToolCall::new("r1", FINAL_RESULT_TOOL, r#"{"name":"Paris"}"#),
            ]
        } else {
            vec![ToolCall::new(format!("r{turn}"), FINAL_RESULT_TOOL, later.to_string())]
        }))
    });
    let config = AgentConfig { planning: false, output_retries: retries, ..AgentConfig::default() };
    Agent::builder().model(model).tool(slow(runs)).config(config).build().unwrap()
}

/// Starts run `r` of a typed agent and "crashes" (drops it) while `slow` hangs in turn 1.
async fn start_and_crash(path: &std::path::Path, later: Value, retries: u32) -> Arc<AtomicUsize> {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = AgentRuntime::sqlite(agent(later, &runs, &seen, retries), path).unwrap();
    let started = runtime.start_typed::<City>("r", "The largest city?");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), started).await.is_err(),
        "the run hangs in slow"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    runs
}

#[tokio::test]
async fn a_typed_run_crashed_mid_retry_resumes_in_another_runtime_and_asks_only_for_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let good = json!({"name": "Paris", "population": 2});
    start_and_crash(&path, good.clone(), 2).await;

    // The journal: the output first, then the response of turn 1 with the refusal.
    let journal = SqliteJournal::open(&path).unwrap();
    let (_, entries) = journal.load_run("r").unwrap().unwrap();
    let Entry::Output { output } = &entries[0].entry else { panic!("{:?}", entries[0]) };
    assert_eq!((output.mode, output.retries), (OutputMode::Tool, 2));
    let refused = entries.iter().any(|e| {
        matches!(&e.entry, Entry::CallResult { result, .. } if result.call_id == "r1" && result.is_error
            && result.content == r#"invalid arguments for final_result: "population" is a required property"#)
    });
    assert!(refused, "{entries:?}");

    // Another process: a new agent and runtime over the same file.
    let runs = Arc::new(AtomicUsize::new(1)); // slow does not hang again
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = AgentRuntime::sqlite(agent(good.clone(), &runs, &seen, 2), &path).unwrap();
    let result = runtime.resume("r").await.unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.value, Some(good.clone()));
    assert_eq!(result.value_as::<City>().unwrap(), City { name: "Paris".into(), population: 2 });
    assert_eq!(runs.load(Ordering::SeqCst), 2, "slow (safe) ran again");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "turn 1 was replayed, not asked again");
    // The model saw the refusal of its first attempt, replayed from the journal.
    let refusal = seen[0].messages.iter().any(|m| {
        matches!(m, Message::Tool { call_id, is_error: true, content, .. } if call_id == "r1" && content.contains("population"))
    });
    assert!(refusal, "{:?}", seen[0].messages);
    assert_eq!(seen[0].tools.last().unwrap().name, FINAL_RESULT_TOOL);
    // Its status reads the value back.
    let status = runtime.status("r").unwrap();
    assert_eq!(status.state.value, Some(good));
}

#[tokio::test]
async fn the_replayed_refusals_count_toward_the_retries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let bad = json!({"name": "Paris", "population": -1});
    start_and_crash(&path, bad.clone(), 1).await;
    let runs = Arc::new(AtomicUsize::new(1));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runtime = AgentRuntime::sqlite(agent(bad, &runs, &seen, 1), &path).unwrap();
    let e = runtime.resume("r").await.unwrap_err();
    // Two attempts in all (1 + 1 retry): the replayed one and one asked now.
    let DurableError::Agent(AgentError::Output(OutputError::Exhausted { attempts, error })) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*attempts, 2);
    assert_eq!(error, "invalid arguments for final_result: population: -1 is less than the minimum of 0");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(runtime.status("r").unwrap().state.status, RunStatus::Failed);
}

#[tokio::test]
async fn a_native_run_that_failed_mid_retry_resumes_with_the_same_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::<ModelRequest>::new()));
    let make = || {
        let calls = calls.clone();
        let seen = seen.clone();
        let model = FunctionModel::new(move |request| {
            seen.lock().unwrap().push(request.clone());
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Ok(ModelResponse::text(r#"{"name": "Paris", "population": "lots"}"#)),
                // The provider fails on the retry: the run fails, resumable.
                1 => Err(ModelError::Http { status: 400, message: "bad request".into() }),
                _ => Ok(ModelResponse::text(r#"{"name": "Paris", "population": 3}"#)),
            }
        });
        let config = AgentConfig { planning: false, ..AgentConfig::default() };
        Agent::builder().model(model).config(config).build().unwrap()
    };
    let runtime = AgentRuntime::sqlite(make(), &path).unwrap();
    let output = Output::of::<City>().mode(OutputMode::Native);
    let e = runtime.start_with_output("n", "The largest city?", output, None).await.unwrap_err();
    assert!(e.to_string().contains("HTTP 400"), "{e}");
    let runtime = AgentRuntime::sqlite(make(), &path).unwrap();
    // Resumed with the type: its decoding check is back.
    let result =
        runtime.resume_with_output("n", Output::of::<City>().mode(OutputMode::Native), None).await.unwrap();
    assert_eq!(result.value, Some(json!({"name": "Paris", "population": 3})));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let seen = seen.lock().unwrap();
    // The retry asked after the failure is the very request that failed.
    assert_eq!(seen[1], seen[2]);
    let Some(Message::User { content, .. }) = seen[2].messages.last() else { panic!() };
    assert!(
        content.starts_with(r#"invalid output: population: "lots" is not of type "integer""#),
        "{content}"
    );
    assert!(seen[2].output.as_ref().is_some_and(|o| o.native));
}

#[tokio::test]
async fn a_resume_with_another_output_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    start_and_crash(&path, json!({}), 2).await;
    let runtime =
        AgentRuntime::sqlite(agent(json!({}), &Arc::new(AtomicUsize::new(1)), &Arc::default(), 2), &path)
            .unwrap();
    let other =
        Output::json_schema(json!({"type": "object", "properties": {"x": {"type": "integer"}}})).unwrap();
    let e = runtime.resume_with_output("r", other, None).await.unwrap_err();
    assert!(matches!(e, DurableError::Mismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("the output schema"), "{e}");
}
