//! Conversations: a run that continues the conversation of a completed one
//! (`AgentRuntime::continue_conversation`), rebuilt from the journal alone by a fresh
//! runtime (another process, after a crash) without asking the model or running a tool
//! again; the transcript; and what cannot be continued.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx_agent::Agent;
use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{AgentRuntime, DurableError, Entry, JournalStore, MemoryJournal, RunStatus};
use serde_json::json;

/// An agent whose model calls `echo` (`safe`) once per prompt, then answers with the
/// prompts it has seen; counts model requests and tool runs. The run of `echo` numbered
/// `hang_at` (from 1) never ends: a crash in the middle of it.
fn agent_hanging(requests: &Arc<AtomicUsize>, runs: &Arc<AtomicUsize>, hang_at: usize) -> Agent {
    let requests = requests.clone();
    let model = FunctionModel::new(move |req: &ModelRequest| {
        requests.fetch_add(1, Ordering::SeqCst);
        let prompts: Vec<&str> = req
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let answered = matches!(req.messages.last(), Some(Message::Tool { .. }));
        if answered {
            Ok(ModelResponse::text(format!("seen: {}", prompts.join(" | "))))
        } else {
            let turn = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(format!("c{turn}"), "echo", "{}")]))
        }
    });
    let runs = runs.clone();
    let echo = ToolDefinition::new(
        "echo",
        "Echo.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, _ctx| {
            let runs = runs.clone();
            async move {
                if runs.fetch_add(1, Ordering::SeqCst) + 1 == hang_at {
                    std::future::pending::<()>().await;
                }
                Ok("echoed".into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    Agent::builder().model(model).tool(echo).build().unwrap()
}

fn agent(requests: &Arc<AtomicUsize>, runs: &Arc<AtomicUsize>) -> Agent {
    agent_hanging(requests, runs, 0)
}

#[tokio::test]
async fn a_conversation_goes_on_from_the_journal_in_a_fresh_runtime() {
    let (requests, runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let journal: Arc<dyn JournalStore> = Arc::new(MemoryJournal::new());
    let first = AgentRuntime::new(agent(&requests, &runs), journal.clone());
    let one = first.start("s.1", "first question").await.unwrap();
    assert_eq!(one.output, "seen: first question");
    let two = first.continue_conversation("s.2", "s.1", "second question", None).await.unwrap();
    assert_eq!(two.output, "seen: first question | second question");
    assert_eq!((requests.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)), (4, 2));

    // Another runtime (another process) over the same journal: the third turn sees the
    // whole conversation, and the earlier turns are replayed, not asked or run again.
    let later = AgentRuntime::new(agent(&requests, &runs), journal.clone());
    let three = later.continue_conversation("s.3", "s.2", "third question", None).await.unwrap();
    assert_eq!(three.output, "seen: first question | second question | third question");
    assert_eq!((requests.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)), (6, 3));

    let transcript = later.transcript("s.3").await.unwrap();
    assert_eq!(transcript, three.messages);
    let users = transcript.iter().filter(|m| matches!(m, Message::User { .. })).count();
    assert_eq!(users, 3);
    assert_eq!(
        (requests.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)),
        (6, 3),
        "a transcript asks nothing"
    );
    // The link is journaled first.
    let (_, entries) = journal.load_run("s.3").unwrap().unwrap();
    assert_eq!(entries[0].entry, Entry::Continues { run_id: "s.2".into() });
}

#[tokio::test]
async fn a_continued_turn_cut_off_by_a_crash_resumes_with_its_history() {
    let (requests, runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let journal: Arc<dyn JournalStore> = Arc::new(MemoryJournal::new());
    // The second turn's call hangs: the run's future is dropped there, as a crash leaves it.
    let runtime = AgentRuntime::new(agent_hanging(&requests, &runs, 2), journal.clone());
    runtime.start("c.1", "one").await.unwrap();
    let cut = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        runtime.continue_conversation("c.2", "c.1", "two", None),
    )
    .await;
    assert!(cut.is_err(), "the call hangs");
    assert_eq!(runtime.status("c.2").unwrap().run.status, RunStatus::Running);
    // Nothing can continue from a turn without its answer...
    let e = runtime.continue_conversation("c.3", "c.2", "three", None).await.unwrap_err();
    assert!(matches!(e, DurableError::Conversation(_)), "{e}");
    assert!(journal.load_run("c.3").unwrap().is_none(), "nothing was journaled");
    // ...until it is resumed (another process), with the conversation before it.
    let again = AgentRuntime::new(agent(&requests, &runs), journal);
    let done = again.resume("c.2").await.unwrap();
    assert_eq!(done.output, "seen: one | two");
    let e = again.continue_conversation("c.3", "nope", "three", None).await.unwrap_err();
    assert!(e.to_string().contains("no run with id \"nope\""), "{e}");
}
