//! Tool choice under `AgentRuntime`: reset to `auto` after a turn with calls as a direct
//! run does, the same after a resume that replays that turn; the settings are part of
//! the fingerprint only when set; an unknown forced tool journals nothing.

use crate::common;
use common::*;

use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, AgentError, ToolChoice};
use harnessx_core::{
    ApprovalDecision, PermissionLevel, PermissionManager, ToolCall, ToolDefinition, ToolHandler,
};
use harnessx_durable::{AgentRuntime, DurableError, JournalStore, MemoryJournal};
use serde_json::json;

fn send() -> ToolDefinition {
    ToolDefinition::new(
        "send",
        "Send it.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(|_, _| async { Ok("sent".to_string().into()) }),
    )
}

/// Calls `send` on the first turn, then answers with the results; records each
/// request's tool choice in `log`.
fn agent(log: Arc<Mutex<Vec<ToolChoice>>>, tool_choice: ToolChoice, permissions: PermissionManager) -> Agent {
    let model = FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.tool_choice.clone());
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new("c1", "send", "{}")]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    Agent::builder()
        .model(model)
        .tool(send())
        .permissions(permissions)
        .config(AgentConfig { planning: false, tool_choice, ..AgentConfig::default() })
        .build()
        .unwrap()
}

#[tokio::test]
async fn required_resets_to_auto_after_the_calls_and_again_after_a_resume_replays_them() {
    let journal = MemoryJournal::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let allow = PermissionManager::new(PermissionLevel::Allow);
    let runtime =
        AgentRuntime::new(agent(log.clone(), ToolChoice::Required, allow), Arc::new(journal.clone()));
    assert_eq!(runtime.start("r1", "go").await.unwrap().output, "saw: sent");
    assert_eq!(*log.lock().unwrap(), [ToolChoice::Required, ToolChoice::Auto]);

    // Paused on an approval after turn 1; another process resumes: turn 1 is replayed
    // from the journal (no request), and turn 2 is asked with `auto` all the same.
    let ask = || PermissionManager::new(PermissionLevel::Ask);
    let first = Arc::new(Mutex::new(Vec::new()));
    let runtime =
        AgentRuntime::new(agent(first.clone(), ToolChoice::Required, ask()), Arc::new(journal.clone()));
    assert!(!runtime.start("r2", "go").await.unwrap().needs_input.is_empty());
    assert_eq!(*first.lock().unwrap(), [ToolChoice::Required]);
    let second = Arc::new(Mutex::new(Vec::new()));
    let other = AgentRuntime::new(agent(second.clone(), ToolChoice::Required, ask()), Arc::new(journal));
    other.approve("r2", "c1", ApprovalDecision::Approve).unwrap();
    assert_eq!(other.resume("r2").await.unwrap().output, "saw: sent");
    assert_eq!(*second.lock().unwrap(), [ToolChoice::Auto]);
}

#[tokio::test]
async fn the_fingerprint_holds_the_tool_choice_only_when_set() {
    let journal = MemoryJournal::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let allow = || PermissionManager::new(PermissionLevel::Allow);
    let plain = AgentRuntime::new(agent(log.clone(), ToolChoice::Auto, allow()), Arc::new(journal.clone()));
    plain.start("plain", "go").await.unwrap();
    let (run, _) = journal.load_run("plain").unwrap().unwrap();
    // As before tool choice existed, so runs journaled then still resume.
    assert!(!run.fingerprint.contains("tool_choice"), "{}", run.fingerprint);
    assert!(
        run.fingerprint_summary.ends_with("a system prompt of 0 characters"),
        "{}",
        run.fingerprint_summary
    );

    // Paused after turn 1, then resumed by an agent without the choice: refused.
    let ask = PermissionManager::new(PermissionLevel::Ask);
    let required =
        AgentRuntime::new(agent(log.clone(), ToolChoice::Required, ask), Arc::new(journal.clone()));
    required.start("set", "go").await.unwrap();
    let (run, _) = journal.load_run("set").unwrap().unwrap();
    assert!(run.fingerprint.contains("tool_choice"), "{}", run.fingerprint);
    let other = AgentRuntime::new(agent(log, ToolChoice::Auto, allow()), Arc::new(journal));
    let err = other.resume("set").await.unwrap_err().to_string();
    assert!(err.contains("a system prompt of 0 characters, tool choice required; this agent has"), "{err}");
}

#[tokio::test]
async fn an_unknown_forced_tool_fails_the_start_and_journals_nothing() {
    let journal = MemoryJournal::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let forced = ToolChoice::Tool("sned".into());
    let runtime = AgentRuntime::new(
        agent(log.clone(), forced, PermissionManager::new(PermissionLevel::Allow)),
        Arc::new(journal.clone()),
    );
    let err = runtime.start("r", "go").await.unwrap_err();
    assert!(
        matches!(&err, DurableError::Agent(AgentError::UnknownToolChoice { name, .. }) if name == "sned"),
        "{err:?}"
    );
    assert!(journal.load_run("r").unwrap().is_none());
    assert!(log.lock().unwrap().is_empty());
}
