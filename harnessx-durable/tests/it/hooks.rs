//! Hooks on a durable run: what they decided is journaled (with the call, before the
//! first request, with each response), and a resume after a crash applies it without
//! asking them again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, RunStatus};
use harnessx_core::hooks::{
    HookError, ModelTurn, PreDecision, PreToolUse, PromptDecision, ResponseDecision, RunEnd, ToolHook,
    UserPrompt,
};
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

/// Adds context to the prompt (or blocks it), stops the response of `stop_at`;
/// counts its asks of each point.
#[derive(Clone, Default)]
struct Gate {
    block: bool,
    stop_at: Option<u32>,
    prompts: Arc<AtomicUsize>,
    responses: Arc<AtomicUsize>,
    ends: Arc<Mutex<Vec<String>>>,
}

impl ToolHook for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn user_prompt<'a>(&'a self, _: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
        let n = self.prompts.fetch_add(1, Ordering::SeqCst) + 1;
        let decision = match self.block {
            true => PromptDecision::Block { message: "not today".into() },
            false => PromptDecision::AddContext { text: format!("asked {n}") },
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn model_response<'a>(&'a self, r: ModelTurn<'a>) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
        self.responses.fetch_add(1, Ordering::SeqCst);
        let decision = match self.stop_at == Some(r.turn) {
            true => ResponseDecision::Stop { message: "leak".into() },
            false => ResponseDecision::Continue,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn run_end<'a>(&'a self, end: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
        self.ends.lock().unwrap().push(end.status.to_owned());
        Box::pin(std::future::ready(Ok(())))
    }
}

/// [`agent`], with `gate` as its hook and a model that answers with the prompt it saw.
fn gated(gate: &Gate, wrote: &Arc<Mutex<Vec<String>>>, hang: &Arc<AtomicUsize>) -> Agent {
    let model = FunctionModel::new(|req| {
        let prompt = req.messages.iter().find_map(|m| match m {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        });
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => {
                ModelResponse::tool_calls(vec![ToolCall::new("c1", "write", r#"{"path": "notes.md"}"#)])
            }
            _ => ModelResponse::text(format!("prompt: {}", prompt.unwrap_or_default())),
        })
    });
    let plain = agent(&Arc::default(), wrote, hang);
    Agent::builder()
        .model(model)
        .tool(plain.tools().get_tool("write").unwrap())
        .hook(gate.clone())
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

fn journals(dir: &tempfile::TempDir) -> [(&'static str, Arc<dyn JournalStore>); 2] {
    let sqlite: Arc<dyn JournalStore> = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    [("memory", Arc::new(MemoryJournal::new()) as Arc<dyn JournalStore>), ("sqlite", sqlite)]
}

#[tokio::test]
async fn a_resume_after_a_crash_keeps_the_prompts_context_and_asks_neither_run_hook_again() {
    let dir = tempfile::tempdir().unwrap();
    for (backend, journal) in journals(&dir) {
        let (gate, wrote, hang) = (Gate::default(), Arc::default(), Arc::default());
        // The prompt's hook adds context, the response's lets the call run, the call
        // hangs, and the process "dies".
        let first = AgentRuntime::new(gated(&gate, &wrote, &hang), journal.clone());
        let crashed = tokio::time::timeout(Duration::from_millis(300), first.start("r", "go")).await;
        assert!(crashed.is_err(), "{backend}: the call hangs");
        let (_, entries) = journal.load_run("r").unwrap().unwrap();
        let kinds: Vec<_> = entries
            .iter()
            .filter_map(|e| match &e.entry {
                Entry::PromptHook { outcome } => Some(format!("prompt {}", outcome.context[0].text)),
                Entry::ResponseHook { turn, outcome } => {
                    Some(format!("response {turn} {:?}", outcome.stopped))
                }
                _ => None,
            })
            .collect();
        assert_eq!(kinds, ["prompt asked 1", "response 1 None"], "{backend}: journaled before the call ran");

        // A new process resumes: the prompt keeps the context it was given, and neither
        // hook is asked again about what it decided (the new response of turn 2 is).
        let second = AgentRuntime::new(gated(&gate, &wrote, &hang), journal.clone());
        let done = second.resume("r").await.unwrap();
        assert_eq!(done.output, "prompt: go\n\nasked 1", "{backend}");
        assert_eq!(gate.prompts.load(Ordering::SeqCst), 1, "{backend}: the prompt's hooks asked once");
        assert_eq!(gate.responses.load(Ordering::SeqCst), 2, "{backend}: once per response");
        assert_eq!(*gate.ends.lock().unwrap(), ["completed"], "{backend}: the crashed drive never ended");
    }
}

#[tokio::test]
async fn a_blocked_prompt_or_a_stopped_response_is_journaled_and_a_resume_applies_it_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    for (backend, journal) in journals(&dir) {
        let (wrote, hang) = (Arc::default(), Arc::new(AtomicUsize::new(1)));
        let blocker = Gate { block: true, ..Gate::default() };
        let stopper = Gate { stop_at: Some(1), ..Gate::default() };
        for (id, gate, message, turns) in [("b", &blocker, "not today", 0), ("s", &stopper, "leak", 1)] {
            let runtime = AgentRuntime::new(gated(gate, &wrote, &hang), journal.clone());
            let state = runtime.start(id, "go").await.unwrap();
            assert_eq!((state.status, state.turns), (RunStatus::Blocked, turns), "{backend} {id}");
            let report = runtime.status(id).unwrap();
            assert_eq!(report.run.status, RunStatus::Blocked, "{backend} {id}");
            assert_eq!(report.run.output.as_deref(), Some(message), "{backend} {id}");
            assert_eq!(
                report.state.blocked.as_ref().map(|b| b.hook.as_str()),
                Some("gate"),
                "{backend} {id}"
            );
            // Resumed: the same end, from the journal.
            let again = runtime.resume(id).await.unwrap();
            assert_eq!(again.blocked, state.blocked, "{backend} {id}");
        }
        assert_eq!(blocker.prompts.load(Ordering::SeqCst), 1, "{backend}: the block was not asked again");
        assert_eq!(blocker.responses.load(Ordering::SeqCst), 0, "{backend}: no response to judge");
        assert_eq!(stopper.responses.load(Ordering::SeqCst), 1, "{backend}: the stop was not asked again");
        assert!(wrote.lock().unwrap().is_empty(), "{backend}: the stopped response's call never ran");
        assert_eq!(*stopper.ends.lock().unwrap(), ["blocked", "blocked"], "{backend}: each drive ends");
    }
}
