//! A durable run that pauses for an approval and is resumed from the journal, as a
//! second process would, printing the events of the one run loop as a direct
//! `run_stream` would; then forked at its second turn to ask "what if another model had
//! answered": `cargo run --example durable_run`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx::agent::{Agent, AgentConfig};
use harnessx::durable::{AgentRuntime, RunStatus, SqliteJournal, StartOptions};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{ApprovalDecision, PermissionLevel, PermissionManager, ToolCall, ToolDefinition, ToolHandler};
use serde_json::json;

/// Invoices sent, by every agent of this example.
static SENT: AtomicUsize = AtomicUsize::new(0);

/// The agent; its model signs its answer with `sign_off`.
fn agent(sign_off: &'static str) -> Agent {
    let model = FunctionModel::new(move |req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "send_invoice",
                r#"{"to":"ada@example.com"}"#,
            )]),
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("{sign_off}: {content}")),
            _ => ModelResponse::text("?"),
        })
    });
    let send = ToolDefinition::new(
        "send_invoice",
        "Send the invoice by email.",
        json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}),
        ToolHandler::from_async(|args, _ctx| async move {
            SENT.fetch_add(1, Ordering::SeqCst);
            Ok(format!("invoice sent to {}", args["to"]).into())
        }),
    );
    Agent::builder()
        .model(model)
        .tool(send)
        // Every call asks; nobody is at the keyboard, so the run pauses instead of denying.
        .permissions(PermissionManager::new(PermissionLevel::Ask))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .expect("a valid agent")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("runs.db");

    let first = AgentRuntime::new(agent("Done"), Arc::new(SqliteJournal::open(&path)?));
    let paused = first.start("invoice-42", "Send Ada her invoice").await?;
    let waiting = paused.needs_input.into_iter().next().expect("the ASK call waits for approval");
    println!("paused: {} ({:?} of {})", waiting.reason, waiting.kind, waiting.call_id);

    // Later, perhaps in another process: approve, then resume from the same file.
    let second = AgentRuntime::new(agent("Done"), Arc::new(SqliteJournal::open(&path)?));
    second.approve("invoice-42", &waiting.call_id, ApprovalDecision::Approve)?;
    // The same loop as `Agent::run_stream`, so the same events, for what happens now (the
    // journaled response of turn 1 is replayed, not requested or streamed again).
    let (events, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let done = second.resume_with_events("invoice-42", events).await?;
    while let Ok(event) = seen.try_recv() {
        println!("event: {}", serde_json::to_string(&event)?);
    }
    println!("answer: {} ({} turns, {:?})", done.output, done.turns, done.status);
    assert_eq!(second.status("invoice-42")?.run.status, RunStatus::Completed);

    // What if another model had answered turn 2? A fork copies turn 1 from the journal
    // (the call, its approval and its result: the invoice is not sent again) and asks the
    // new agent from turn 2 on. (`harnessx runs fork invoice-42 --at 2 --durable FILE`.)
    let what_if = AgentRuntime::new(agent("All set"), Arc::new(SqliteJournal::open(&path)?));
    let forked = what_if.fork("invoice-42", 2, "invoice-42-b", StartOptions::default(), None).await?;
    println!("fork: {} (invoices sent in all: {})", forked.output, SENT.load(Ordering::SeqCst));
    assert_eq!(SENT.load(Ordering::SeqCst), 1);
    let origin = what_if.status("invoice-42-b")?.forked_from.expect("a fork says where it came from");
    println!("forked from {} at turn {}", origin.run_id, origin.turn);
    Ok(())
}
