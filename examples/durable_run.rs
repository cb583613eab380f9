//! A durable run that pauses for an approval and is resumed from the journal, as a
//! second process would, printing the events of the one run loop as a direct
//! `run_stream` would: `cargo run --example durable_run`.

use std::sync::Arc;

use harnessx::agent::{Agent, AgentConfig};
use harnessx::durable::{AgentRuntime, RunStatus, SqliteJournal};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{ApprovalDecision, PermissionLevel, PermissionManager, ToolCall, ToolDefinition, ToolHandler};
use serde_json::json;

fn agent() -> Agent {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "send_invoice",
                r#"{"to":"ada@example.com"}"#,
            )]),
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("Done: {content}")),
            _ => ModelResponse::text("?"),
        })
    });
    let send = ToolDefinition::new(
        "send_invoice",
        "Send the invoice by email.",
        json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}),
        ToolHandler::from_async(
            |args, _ctx| async move { Ok(format!("invoice sent to {}", args["to"]).into()) },
        ),
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

    let first = AgentRuntime::new(agent(), Arc::new(SqliteJournal::open(&path)?));
    let paused = first.start("invoice-42", "Send Ada her invoice").await?;
    let waiting = paused.needs_input.into_iter().next().expect("the ASK call waits for approval");
    println!("paused: {} ({:?} of {})", waiting.reason, waiting.kind, waiting.call_id);

    // Later, perhaps in another process: approve, then resume from the same file.
    let second = AgentRuntime::new(agent(), Arc::new(SqliteJournal::open(&path)?));
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
    Ok(())
}
