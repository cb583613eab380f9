//! Every kind of decision on an ASK call — approve, for the session, deny, approve with
//! edited arguments, deny with a message — on a direct run and on durable runs (in memory
//! and in SQLite): journaled, replayed exactly, never asked twice, an edited call run
//! once with the edited arguments, and the model's next request showing what ran.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, NeedsInputKind};
use harnessx_core::{
    ApprovalDecision, PermissionLevel, PermissionManager, PermissionRules, ReplayPolicy, ToolCall,
    ToolDefinition, ToolHandler,
};
use harnessx_durable::{AgentRuntime, Entry, JournalStore, MemoryJournal, SqliteJournal};
use serde_json::{Value, json};

/// The `path` of every run of `write`, in order.
#[derive(Default)]
struct Runs(Mutex<Vec<String>>);

impl Runs {
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

fn write_tool(runs: &Arc<Runs>, hang_once: Arc<AtomicUsize>) -> ToolDefinition {
    let runs = runs.clone();
    ToolDefinition::new(
        "write",
        "Write a file.",
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": false
        }),
        ToolHandler::from_async(move |args: Value, _ctx| {
            let (runs, hang) = (runs.clone(), hang_once.clone());
            async move {
                let path = args["path"].as_str().unwrap_or_default().to_owned();
                runs.0.lock().unwrap().push(path.clone());
                if hang.fetch_sub(1, Ordering::SeqCst) == 1 {
                    std::future::pending::<()>().await;
                }
                Ok(format!("wrote {path}").into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Idempotent)
    .with_permission(PermissionLevel::Ask)
}

/// The arguments of the calls in the last assistant message, and the tool results.
fn seen(req: &ModelRequest) -> String {
    let calls = req
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                Some(tool_calls.iter().map(|c| c.arguments.clone()).collect::<Vec<_>>().join(","))
            }
            _ => None,
        })
        .unwrap_or_default();
    format!("calls {calls} | results {}", crate::common::tool_contents(req))
}

/// Turn 1 writes `model.txt`; turn 2 says what it saw.
fn agent(runs: &Arc<Runs>, permissions: PermissionManager, hang_once: usize) -> Agent {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => {
                ModelResponse::tool_calls(vec![ToolCall::new("c1", "write", r#"{"path":"model.txt"}"#)])
            }
            _ => ModelResponse::text(seen(req)),
        })
    });
    Agent::builder()
        .model(model)
        .tool(write_tool(runs, Arc::new(AtomicUsize::new(hang_once))))
        .permissions(permissions)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

fn edited() -> ApprovalDecision {
    ApprovalDecision::ApproveEdited { arguments: json!({"path": "user.txt"}), for_session: false }
}

const NOTE: &str = "[The user changed this call's arguments before it ran; it ran with {\"path\":\"user.txt\"}]\nwrote user.txt";

/// A manager that answers `decision` and counts how often it was asked.
fn answering(decision: ApprovalDecision, asked: &Arc<AtomicUsize>) -> PermissionManager {
    let asked = asked.clone();
    PermissionManager::default().with_approval_fn(move |_| {
        asked.fetch_add(1, Ordering::SeqCst);
        let decision = decision.clone();
        async move { decision }
    })
}

#[tokio::test]
async fn direct_runs_apply_every_decision_kind() {
    let cases = [
        (
            ApprovalDecision::Approve,
            vec!["model.txt"],
            r#"calls {"path":"model.txt"} | results wrote model.txt"#.to_owned(),
        ),
        (
            ApprovalDecision::ApproveForSession,
            vec!["model.txt"],
            r#"calls {"path":"model.txt"} | results wrote model.txt"#.to_owned(),
        ),
        (
            ApprovalDecision::Deny,
            vec![],
            r#"calls {"path":"model.txt"} | results Permission denied"#.to_owned(),
        ),
        (
            ApprovalDecision::DenyWithMessage { message: "write to user.txt instead".into() },
            vec![],
            r#"calls {"path":"model.txt"} | results write to user.txt instead"#.to_owned(),
        ),
        (edited(), vec!["user.txt"], format!(r#"calls {{"path":"user.txt"}} | results {NOTE}"#)),
    ];
    for (decision, ran, output) in cases {
        let runs = Arc::new(Runs::default());
        let asked = Arc::new(AtomicUsize::new(0));
        let agent = agent(&runs, answering(decision.clone(), &asked), 0);
        let result = agent.run("go").await.unwrap();
        assert_eq!(result.output, output, "{decision:?}");
        assert_eq!(runs.all(), ran, "{decision:?}");
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert_eq!(agent.permissions().has_session_grant("write"), decision.grants_session(), "{decision:?}");
    }
}

#[tokio::test]
async fn edited_arguments_are_validated_and_checked_against_deny_rules() {
    let runs = Arc::new(Runs::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let bad = ApprovalDecision::ApproveEdited { arguments: json!({"path": 7}), for_session: false };
    let result = agent(&runs, answering(bad, &asked), 0).run("go").await.unwrap();
    assert!(result.output.contains("the new ones are invalid"), "{}", result.output);
    assert!(runs.all().is_empty());

    let rules = PermissionRules::new().with(PermissionLevel::Deny, "write(path=user*)").unwrap();
    let manager = answering(edited(), &asked).with_rules(rules);
    let result = agent(&runs, manager, 0).run("go").await.unwrap();
    assert!(result.output.ends_with("results Permission denied"), "{}", result.output);
    assert!(runs.all().is_empty(), "a deny rule refuses edited arguments too");
}

fn journals() -> Vec<(&'static str, Arc<dyn JournalStore>, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn JournalStore> = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    vec![("memory", Arc::new(MemoryJournal::new()), tempfile::tempdir().unwrap()), ("sqlite", sqlite, dir)]
}

fn approvals(journal: &Arc<dyn JournalStore>, run: &str) -> Vec<ApprovalDecision> {
    let (_, entries) = journal.load_run(run).unwrap().unwrap();
    entries
        .into_iter()
        .filter_map(|e| match e.entry {
            Entry::Approval { decision, .. } => Some(decision),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn durable_runs_journal_each_decision_and_replay_it_exactly() {
    for (backend, journal, _dir) in journals() {
        let cases = [
            (ApprovalDecision::Approve, vec!["model.txt"], "results wrote model.txt"),
            (ApprovalDecision::ApproveForSession, vec!["model.txt"], "results wrote model.txt"),
            (ApprovalDecision::Deny, vec![], "results Permission denied"),
            (ApprovalDecision::DenyWithMessage { message: "not now".into() }, vec![], "results not now"),
            (edited(), vec!["user.txt"], NOTE),
        ];
        for (i, (decision, ran, ends)) in cases.into_iter().enumerate() {
            let run = format!("{backend}-{i}");
            let runs = Arc::new(Runs::default());
            // Nobody to ask: the run pauses, another process decides, a third resumes.
            let runtime = AgentRuntime::new(agent(&runs, PermissionManager::default(), 0), journal.clone());
            let paused = runtime.start(&run, "go").await.unwrap();
            assert_eq!(paused.needs_input[0].kind, NeedsInputKind::Approval);
            AgentRuntime::new(agent(&runs, PermissionManager::default(), 0), journal.clone())
                .approve(&run, "c1", decision.clone())
                .unwrap();
            let resumed = AgentRuntime::new(agent(&runs, PermissionManager::default(), 0), journal.clone());
            let done = resumed.resume(&run).await.unwrap();
            assert!(done.output.ends_with(ends), "{backend} {decision:?}: {}", done.output);
            if decision == edited() {
                assert!(done.output.starts_with(r#"calls {"path":"user.txt"}"#), "{}", done.output);
            }
            assert_eq!(runs.all(), ran, "{backend} {decision:?}");
            assert_eq!(
                approvals(&journal, &run),
                std::slice::from_ref(&decision),
                "{backend}: journaled as given"
            );
            // Replayed from the journal: the same state, and nothing runs again (a
            // completed run is not resumed).
            let again = resumed.status(&run).unwrap();
            assert_eq!(again.state.output, done.output);
            assert!(resumed.resume(&run).await.is_err());
            assert_eq!(runs.all(), ran, "{backend} {decision:?}: replayed, not run again");
        }
    }
}

#[tokio::test]
async fn a_resume_after_a_crash_never_asks_again_and_runs_the_edited_call_with_its_arguments() {
    for (backend, journal, _dir) in journals() {
        let run = format!("{backend}-crash");
        let runs = Arc::new(Runs::default());
        let asked = Arc::new(AtomicUsize::new(0));
        // The first run decides (journaled), starts the edited call, and "crashes" while
        // it runs: its future is dropped.
        let runtime = AgentRuntime::new(agent(&runs, answering(edited(), &asked), 1), journal.clone());
        let crashed =
            tokio::time::timeout(std::time::Duration::from_millis(300), runtime.start(&run, "go")).await;
        assert!(crashed.is_err(), "the call hangs");
        assert_eq!(runs.all(), ["user.txt"]);
        // A new process resumes: the idempotent call runs again, with the edited
        // arguments, and nobody is asked again.
        let runtime = AgentRuntime::new(agent(&runs, answering(edited(), &asked), 0), journal.clone());
        let done = runtime.resume(&run).await.unwrap();
        assert_eq!(asked.load(Ordering::SeqCst), 1, "{backend}: asked once");
        assert_eq!(runs.all(), ["user.txt", "user.txt"], "{backend}");
        assert_eq!(done.output, format!(r#"calls {{"path":"user.txt"}} | results {NOTE}"#), "{backend}");
        assert_eq!(approvals(&journal, &run), [edited()]);
    }
}
