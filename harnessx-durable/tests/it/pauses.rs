//! A handler that waits for a person mid-call (`ToolError::Paused`): in a journaled run
//! the run stops with a `needs_input` of the pause's kind, no result journaled; a resume
//! runs the call again whatever its replay policy, handing it the person's answers in
//! order; a wrong answer is refused naming the field; a direct run cannot pause.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, NeedsInputKind, RunStatus};
use harnessx_core::{Pause, PauseKind, ReplayPolicy, ToolCall, ToolDefinition, ToolError, ToolHandler};
use harnessx_durable::{AgentRuntime, DurableError, Entry, JournalStore, SqliteJournal};
use serde_json::{Value, json};

/// A model that calls `tool` once, then answers with its result.
fn model(tool: &'static str) -> FunctionModel {
    FunctionModel::new(move |req| {
        Ok(match req.messages.last() {
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("got: {content}")),
            _ => ModelResponse::tool_calls(vec![ToolCall::new("c1", tool, "{}")]),
        })
    })
}

fn agent(model: FunctionModel, tool: ToolDefinition) -> Agent {
    Agent::builder()
        .model(model)
        .tool(tool)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

/// `login`: pauses for a login until `logged_in` is set; counts its runs. `manual`, so
/// that only the pause's rule can run it again.
fn login_tool(runs: Arc<AtomicUsize>, logged_in: Arc<Mutex<bool>>) -> ToolDefinition {
    ToolDefinition::new(
        "login",
        "Needs a login.",
        json!({"type": "object"}),
        ToolHandler::from_async(move |_args: Value, ctx| {
            let (runs, logged_in) = (runs.clone(), logged_in.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if *logged_in.lock().unwrap() {
                    return Ok("welcome".into());
                }
                let reason = "the server `S` needs a login: run `login S`";
                if !ctx.can_pause() {
                    return Err(ToolError::new(reason));
                }
                Err(ToolError::paused(Pause::new(PauseKind::Auth, reason)))
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Manual)
}

/// `ask`: asks two questions in turn, each answered from the answers it was handed.
fn asking_tool(runs: Arc<AtomicUsize>) -> ToolDefinition {
    ToolDefinition::new(
        "ask",
        "Asks twice.",
        json!({"type": "object"}),
        ToolHandler::from_async(move |_args: Value, ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let answers = ctx.answer().and_then(Value::as_array).cloned().unwrap_or_default();
                let schema =
                    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
                match answers.len() {
                    0 => Err(ToolError::paused(
                        Pause::new(PauseKind::Elicitation, "first?").with_schema(schema),
                    )),
                    1 => Err(ToolError::paused(
                        Pause::new(PauseKind::Elicitation, "second?").with_schema(schema),
                    )),
                    _ => Ok(format!("{}+{}", answers[0]["content"]["n"], answers[1]["content"]["n"]).into()),
                }
            }
        }),
    )
}

fn results(journal: &SqliteJournal, run: &str) -> usize {
    let (_, entries) = journal.load_run(run).unwrap().unwrap();
    entries.iter().filter(|e| matches!(e.entry, Entry::CallResult { .. })).count()
}

#[tokio::test]
async fn a_call_that_needs_a_login_pauses_and_runs_again_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    let (runs, logged_in) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(false)));
    let runtime = AgentRuntime::new(
        agent(model("login"), login_tool(runs.clone(), logged_in.clone())),
        journal.clone(),
    );

    let paused = runtime.start("r", "Go.").await.unwrap();
    assert_eq!(paused.status, RunStatus::NeedsInput);
    let need = &paused.needs_input[0];
    assert_eq!((need.kind, need.call_id.as_str()), (NeedsInputKind::Auth, "c1"));
    assert!(need.reason.contains("run `login S`"), "{}", need.reason);
    assert_eq!(results(&journal, "r"), 0, "a paused call's result is not journaled");
    // `answer` is not what a login waits for.
    let refused = runtime.answer("r", "c1", "done").unwrap_err();
    assert!(matches!(refused, DurableError::NotAwaited { .. }), "{refused}");

    // Not logged in yet: the call runs again, and pauses again.
    let again = runtime.resume("r").await.unwrap();
    assert_eq!(again.needs_input[0].kind, NeedsInputKind::Auth);
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    *logged_in.lock().unwrap() = true;
    let done = runtime.resume("r").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.output, "got: welcome");
    // `manual`, and still run again: it stopped before doing anything.
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(results(&journal, "r"), 1);

    // A direct run cannot pause: the call fails with the line, and the run goes on.
    *logged_in.lock().unwrap() = false;
    let direct = agent(model("login"), login_tool(runs.clone(), logged_in)).run("Go.").await.unwrap();
    assert_eq!(direct.output, "got: the server `S` needs a login: run `login S`");
}

#[tokio::test]
async fn a_calls_questions_are_answered_in_order_and_a_wrong_answer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = AgentRuntime::new(agent(model("ask"), asking_tool(runs.clone())), journal.clone());

    let paused = runtime.start("q", "Go.").await.unwrap();
    let need = &paused.needs_input[0];
    assert_eq!((need.kind, need.reason.as_str()), (NeedsInputKind::Elicitation, "first?"));
    assert_eq!(need.schema.as_ref().unwrap()["required"], json!(["n"]));

    for (wrong, says) in [
        (r#"{"n": "three"}"#, "the answer: n: \"three\" is not of type \"integer\""),
        ("{}", "the answer: \"n\" is a required property"),
        ("three", "the answer is not JSON"),
        ("[3]", "the answer is not a JSON object"),
    ] {
        let error = runtime.answer("q", "c1", wrong).unwrap_err();
        assert!(matches!(error, DurableError::BadAnswer(_)), "{wrong}: {error}");
        assert!(error.to_string().starts_with(says), "{wrong}: {error}");
        assert!(!error.to_string().contains('\n'));
    }
    // A resume before the answer waits again, running nothing.
    let waiting = runtime.resume("q").await.unwrap();
    assert_eq!(waiting.needs_input[0].reason, "first?");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    runtime.answer("q", "c1", r#"{"n": 3}"#).unwrap();
    let second = runtime.resume("q").await.unwrap();
    assert_eq!(second.needs_input[0].reason, "second?");
    runtime.answer("q", "c1", r#"{"n": 4}"#).unwrap();
    let done = runtime.resume("q").await.unwrap();
    assert_eq!(done.output, "got: 3+4", "{done:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(results(&journal, "q"), 1);
    // Replayed from the journal by another runtime: nothing runs again.
    let other = AgentRuntime::new(agent(model("ask"), asking_tool(runs.clone())), journal);
    assert_eq!(other.transcript("q").await.unwrap().len(), 4);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}
