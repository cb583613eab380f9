//! Forks (`AgentRuntime::fork`) on SQLite: a new run from a journaled run's history up to
//! a turn, asked anew from there by another agent. A `manual` call of a copied turn never
//! runs again (its result is copied); the new model sees it; the source is untouched;
//! the origin is journaled; a turn the run lacks, or a source that does not exist, is
//! refused with nothing written.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelError, ModelRequest, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, RunStatus};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{
    AgentRuntime, DurableError, Entry, ForkedFrom, JournalError, JournalStore, SqliteJournal, StartOptions,
};
use serde_json::json;

use crate::common::tool_contents;

/// `send`: `manual` (its effect cannot be taken back); counts its runs and says which
/// run it was.
fn send(runs: Arc<AtomicUsize>) -> ToolDefinition {
    ToolDefinition::new(
        "send",
        "Sends a message.",
        json!({"type": "object"}),
        ToolHandler::from_async(move |_args, _ctx| {
            let runs = runs.clone();
            async move { Ok(format!("sent #{}", runs.fetch_add(1, Ordering::SeqCst) + 1).into()) }
        }),
    )
    .with_replay_policy(ReplayPolicy::Manual)
}

fn agent(model: FunctionModel, system: &str, runs: &Arc<AtomicUsize>) -> Agent {
    let config = AgentConfig { planning: false, ..AgentConfig::default() };
    Agent::builder()
        .model(model)
        .system_prompt(system)
        .tool(send(runs.clone()))
        .config(config)
        .build()
        .unwrap()
}

/// The source's model: turn 1 calls `send`, turn 2 answers with what it saw.
fn source_model() -> FunctionModel {
    FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::Tool { .. }) => ModelResponse::text(format!("source: {}", tool_contents(req))),
            _ => ModelResponse::tool_calls(vec![ToolCall::new("c1", "send", "{}")]),
        })
    })
    .with_name("source-model")
}

/// The fork's model: records every request; calls `send` when the history has no
/// result yet, then answers with the results it saw.
fn fork_model(seen: &Arc<Mutex<Vec<ModelRequest>>>) -> FunctionModel {
    let seen = seen.clone();
    FunctionModel::new(move |req| {
        seen.lock().unwrap().push(req.clone());
        Ok(match tool_contents(req) {
            results if results.is_empty() => {
                ModelResponse::tool_calls(vec![ToolCall::new("n1", "send", "{}")])
            }
            results => ModelResponse::text(format!("fork: {results}")),
        })
    })
    .with_name("fork-model")
}

/// A journal with run `src` done by the source agent (two turns, `send` run once).
async fn journaled(dir: &tempfile::TempDir, runs: &Arc<AtomicUsize>) -> Arc<SqliteJournal> {
    let journal = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    let source = AgentRuntime::new(agent(source_model(), "Be brief.", runs), journal.clone());
    let done = source.start("src", "Send the message.").await.unwrap();
    assert_eq!((done.status, done.output.as_str(), done.turns), (RunStatus::Completed, "source: sent #1", 2));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    journal
}

#[tokio::test]
async fn a_fork_after_a_manual_call_does_not_run_it_again_and_its_model_sees_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let journal = journaled(&dir, &runs).await;
    let before = journal.load_run("src").unwrap().unwrap();

    let seen = Arc::new(Mutex::new(Vec::new()));
    let forks = AgentRuntime::new(agent(fork_model(&seen), "Be thorough.", &runs), journal.clone());
    let forked = forks.fork("src", 2, "f2", StartOptions::default(), None).await.unwrap();
    assert_eq!(forked.status, RunStatus::Completed, "{forked:?}");
    assert_eq!(forked.output, "fork: sent #1", "the copied result, not a new one");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the manual call of turn 1 did not run again");
    assert_eq!(forked.turns, 2);
    // The new model was asked once, for turn 2, with turn 1 in its history.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(
        matches!(&seen[0].messages[..], [.., Message::Assistant { tool_calls, .. }, Message::Tool { content, .. }]
            if tool_calls[0].id == "c1" && content == "sent #1"),
        "{:?}",
        seen[0].messages
    );
    assert!(
        seen[0]
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { content, .. } if content == "Send the message."))
    );

    // The origin is journaled first and reported; the source is as it was.
    let (record, entries) = journal.load_run("f2").unwrap().unwrap();
    assert_eq!(entries[0].entry, Entry::Forked { run_id: "src".into(), turn: 2 });
    assert_eq!(record.prompt, "Send the message.");
    assert_ne!(record.fingerprint, before.0.fingerprint, "fingerprinted with the fork's agent");
    let report = forks.status("f2").unwrap();
    assert_eq!(report.forked_from, Some(ForkedFrom { run_id: "src".into(), turn: 2 }));
    assert_eq!(serde_json::to_value(&report).unwrap()["forked_from"], json!({"run_id": "src", "turn": 2}));
    assert_eq!(forks.status("src").unwrap().forked_from, None);
    assert_eq!(journal.load_run("src").unwrap().unwrap(), before, "the source's header and entries");
}

#[tokio::test]
async fn a_fork_at_turn_one_copies_the_prompt_alone_and_its_model_may_call_again() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let journal = journaled(&dir, &runs).await;
    let before = journal.load_run("src").unwrap().unwrap();

    let seen = Arc::new(Mutex::new(Vec::new()));
    let forks = AgentRuntime::new(agent(fork_model(&seen), "Be thorough.", &runs), journal.clone());
    let forked = forks.fork("src", 1, "f1", StartOptions::default(), None).await.unwrap();
    assert_eq!(forked.output, "fork: sent #2");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the new model called it: it ran");
    let seen = seen.lock().unwrap();
    assert!(
        matches!(&seen[0].messages[..], [Message::User { content, .. }] if content == "Send the message."),
        "{:?}",
        seen[0].messages
    );
    let (_, entries) = journal.load_run("f1").unwrap().unwrap();
    assert_eq!(entries[0].entry, Entry::Forked { run_id: "src".into(), turn: 1 });
    assert!(
        !entries
            .iter()
            .any(|e| matches!(&e.entry, Entry::CallResult { result, .. } if result.call_id == "c1"))
    );
    assert_eq!(journal.load_run("src").unwrap().unwrap(), before);
}

#[tokio::test]
async fn a_fork_that_fails_resumes_with_its_own_agent_not_the_sources() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let journal = journaled(&dir, &runs).await;
    // The fork's model is down for its first request.
    let down = Arc::new(AtomicUsize::new(1));
    let model = |down: Arc<AtomicUsize>| {
        FunctionModel::new(move |req| {
            if down.load(Ordering::SeqCst) > 0 {
                down.fetch_sub(1, Ordering::SeqCst);
                return Err(ModelError::Auth("the key was revoked".into()));
            }
            Ok(ModelResponse::text(format!("fork: {}", tool_contents(req))))
        })
        .with_name("fork-model")
    };
    let forks = AgentRuntime::new(agent(model(down.clone()), "Be thorough.", &runs), journal.clone());
    let failed = forks.fork("src", 2, "f", StartOptions::default(), None).await.unwrap_err();
    assert!(matches!(failed, DurableError::Agent(_)), "{failed}");
    assert_eq!(forks.status("f").unwrap().state.status, RunStatus::Failed);

    let source = AgentRuntime::new(agent(source_model(), "Be brief.", &runs), journal.clone());
    let refused = source.resume("f").await.unwrap_err();
    assert!(matches!(refused, DurableError::Mismatch { .. }), "{refused}");
    let done = forks.resume("f").await.unwrap();
    assert_eq!((done.status, done.output.as_str()), (RunStatus::Completed, "fork: sent #1"));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "not run on the resume either");
    assert_eq!(forks.status("f").unwrap().forked_from, Some(ForkedFrom { run_id: "src".into(), turn: 2 }));
}

#[tokio::test]
async fn a_fork_at_a_turn_the_run_lacks_or_of_no_run_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let journal = journaled(&dir, &runs).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let forks = AgentRuntime::new(agent(fork_model(&seen), "Be thorough.", &runs), journal.clone());
    for at in [0, 3, 99] {
        let refused = forks.fork("src", at, "f", StartOptions::default(), None).await.unwrap_err();
        assert!(matches!(refused, DurableError::NoSuchTurn { turns: 2, .. }), "{refused}");
        assert!(refused.to_string().contains("has 2 turns"), "{refused}");
    }
    let refused = forks.fork("nope", 1, "f", StartOptions::default(), None).await.unwrap_err();
    assert!(
        matches!(refused, DurableError::Journal(JournalError::NoSuchRun(ref id)) if id == "nope"),
        "{refused}"
    );
    // A fork under an id in use is refused too.
    let refused = forks.fork("src", 1, "src", StartOptions::default(), None).await.unwrap_err();
    assert!(matches!(refused, DurableError::Journal(JournalError::RunExists(_))), "{refused}");
    assert!(journal.load_run("f").unwrap().is_none());
    assert_eq!(journal.list_runs().unwrap().len(), 1);
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
