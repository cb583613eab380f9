//! Hooks on a durable run: what they decided is journaled with the call, and a resume
//! after a crash applies it without asking them again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::hooks::{HookError, PreDecision, PreToolUse, ToolHook};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{AgentRuntime, Entry, JournalStore, MemoryJournal, SqliteJournal};
use serde_json::json;

/// Moves every write into `sandbox/`, counting how often it was asked.
struct Mover(Arc<AtomicUsize>);

impl ToolHook for Mover {
    fn name(&self) -> &str {
        "mover"
    }
    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let path = call.arguments["path"].as_str().unwrap_or_default();
        Box::pin(std::future::ready(Ok(PreDecision::Rewrite {
            arguments: json!({"path": format!("sandbox/{path}")}),
        })))
    }
}

/// An agent whose model asks for one idempotent `write` of `notes.md`, which hangs the
/// first time it runs (until the run is dropped), then answers with what it saw.
fn agent(asked: &Arc<AtomicUsize>, wrote: &Arc<Mutex<Vec<String>>>, hang: &Arc<AtomicUsize>) -> Agent {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => {
                ModelResponse::tool_calls(vec![ToolCall::new("c1", "write", r#"{"path": "notes.md"}"#)])
            }
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("saw: {content}")),
            _ => ModelResponse::text("?"),
        })
    });
    let (w, h) = (wrote.clone(), hang.clone());
    let write = ToolDefinition::new(
        "write",
        "Write a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ToolHandler::from_async(move |args: serde_json::Value, _| {
            let (w, h) = (w.clone(), h.clone());
            async move {
                let path = args["path"].as_str().unwrap_or_default().to_owned();
                w.lock().unwrap().push(path.clone());
                if h.fetch_add(1, Ordering::SeqCst) == 0 {
                    std::future::pending::<()>().await;
                }
                Ok(format!("wrote {path}").into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Idempotent);
    Agent::builder()
        .model(model)
        .tool(write)
        .hook(Mover(asked.clone()))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_resume_after_a_crash_applies_the_journaled_hook_decision_without_asking_again() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn JournalStore> = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    for (backend, journal) in
        [("memory", Arc::new(MemoryJournal::new()) as Arc<dyn JournalStore>), ("sqlite", sqlite)]
    {
        let (asked, wrote, hang) = (Arc::default(), Arc::default(), Arc::default());
        // The hook decides, the decision is committed with the call's start, the call
        // hangs, and the process "dies": the run's future is dropped.
        let first = AgentRuntime::new(agent(&asked, &wrote, &hang), journal.clone());
        let crashed = tokio::time::timeout(Duration::from_millis(300), first.start("r", "go")).await;
        assert!(crashed.is_err(), "{backend}: the call hangs");
        let (_, entries) = journal.load_run("r").unwrap().unwrap();
        let hooks: Vec<_> = entries
            .iter()
            .filter_map(|e| match &e.entry {
                Entry::Hook { outcome, .. } => Some(outcome.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(hooks.len(), 1, "{backend}: journaled before the call ran");
        assert_eq!(hooks[0].rewritten, Some(json!({"path": "sandbox/notes.md"})));

        // A new process resumes: the idempotent call runs again, with the rewritten
        // arguments, and the hook is not asked again.
        let second = AgentRuntime::new(agent(&asked, &wrote, &hang), journal.clone());
        let done = second.resume("r").await.unwrap();
        assert_eq!(done.output, "saw: wrote sandbox/notes.md", "{backend}");
        assert_eq!(asked.load(Ordering::SeqCst), 1, "{backend}: asked once");
        assert_eq!(*wrote.lock().unwrap(), ["sandbox/notes.md", "sandbox/notes.md"], "{backend}");
    }
}
