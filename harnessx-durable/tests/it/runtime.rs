//! `AgentRuntime` in one process: journaled steps are never repeated, a crash (the run's
//! future dropped mid-batch, as a killed process leaves its journal) is recovered per
//! replay policy, approvals and unknown outcomes pause the run durably.

use crate::common;
use common::*;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, NeedsInputKind};
use harnessx_core::{
    ApprovalDecision, PermissionLevel, PermissionManager, ReplayPolicy, ToolCall, ToolDefinition,
    ToolHandler, ToolRetry,
};
use harnessx_durable::{AgentRuntime, DurableError, Entry, JournalStore, MemoryJournal, RunStatus};
use serde_json::json;

/// Counters and switches shared by every agent a test builds (they outlive "crashes").
#[derive(Default)]
struct World {
    model_requests: AtomicUsize,
    runs: Mutex<Vec<String>>,
    /// Tools named here hang (until the run is dropped) the first time they run.
    hang_once: Mutex<Vec<String>>,
}

impl World {
    fn runs_of(&self, tool: &str) -> Vec<String> {
        self.runs.lock().unwrap().iter().filter(|r| r.starts_with(&format!("{tool} "))).cloned().collect()
    }
}

fn tool(world: &Arc<World>, name: &str, policy: ReplayPolicy) -> ToolDefinition {
    let (w, n) = (world.clone(), name.to_owned());
    ToolDefinition::new(
        name,
        "A tool.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, ctx| {
            let (w, n) = (w.clone(), n.clone());
            async move {
                w.runs.lock().unwrap().push(format!("{n} key={}", ctx.idempotency_key().unwrap_or("-")));
                let hang = {
                    let mut h = w.hang_once.lock().unwrap();
                    let found = h.iter().position(|t| *t == n);
                    found.map(|i| h.remove(i)).is_some()
                };
                if hang {
                    std::future::pending::<()>().await;
                }
                Ok(format!("{n} done").into())
            }
        }),
    )
    .with_replay_policy(policy)
}

/// Turn 1 calls `calls`; turn 2 answers with every tool message it saw.
fn agent(world: &Arc<World>, calls: Vec<ToolCall>, permissions: Option<PermissionManager>) -> Agent {
    let w = world.clone();
    let model = FunctionModel::new(move |req| {
        w.model_requests.fetch_add(1, Ordering::SeqCst);
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(calls.clone()),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    let mut builder = Agent::builder()
        .model(model)
        .tool(tool(world, "read", ReplayPolicy::Safe))
        .tool(tool(world, "charge", ReplayPolicy::Idempotent))
        .tool(tool(world, "send", ReplayPolicy::Manual))
        .config(AgentConfig { planning: false, ..AgentConfig::default() });
    if let Some(p) = permissions {
        builder = builder.permissions(p);
    }
    builder.build().unwrap()
}

fn three_calls() -> Vec<ToolCall> {
    vec![
        ToolCall::new("c1", "read", "{}"),
        ToolCall::new("c2", "send", "{}"),
        ToolCall::new("c3", "charge", "{}"),
    ]
}

fn kinds(journal: &MemoryJournal, run: &str) -> Vec<String> {
    let (_, entries) = journal.load_run(run).unwrap().unwrap();
    entries
        .iter()
        .map(|e| serde_json::to_value(&e.entry).unwrap()["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_run_journals_every_step_and_a_completed_run_is_not_run_again() {
    let world = Arc::new(World::default());
    let journal = MemoryJournal::new();
    let runtime = AgentRuntime::new(agent(&world, three_calls(), None), Arc::new(journal.clone()));
    let result = runtime.start("r1", "go").await.unwrap();
    assert_eq!(result.output, "saw: read done | send done | charge done");
    assert!(result.needs_input.is_empty());
    let k = kinds(&journal, "r1");
    assert_eq!(&k[..4], ["model_response", "call_start", "call_start", "call_start"], "{k:?}");
    assert_eq!(k.iter().filter(|k| *k == "call_result").count(), 3);
    assert_eq!(&k[k.len() - 2..], ["model_response", "final"]);
    let report = runtime.status("r1").unwrap();
    assert_eq!(report.run.status, RunStatus::Completed);
    assert_eq!(report.run.output.as_deref(), Some(result.output.as_str()));
    assert_eq!((report.state.turns, report.calls), (2, 3));
    assert!(matches!(runtime.resume("r1").await, Err(DurableError::Completed(_))));
    assert!(matches!(runtime.start("r1", "again").await, Err(DurableError::Journal(_))), "ids are unique");
    assert_eq!(world.model_requests.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn after_a_crash_mid_batch_safe_and_idempotent_calls_run_again_and_manual_asks() {
    let world = Arc::new(World::default());
    *world.hang_once.lock().unwrap() = vec!["send".into(), "charge".into()];
    let journal = MemoryJournal::new();
    {
        let runtime = AgentRuntime::new(agent(&world, three_calls(), None), Arc::new(journal.clone()));
        let run = runtime.start("r2", "go");
        tokio::pin!(run);
        // Let all three handlers start (read finishes, send and charge hang), then
        // "kill the process": the run's future is dropped.
        let waited = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::select! {
                _ = &mut run => panic!("the run cannot finish while two tools hang"),
                _ = async {
                    while world.runs.lock().unwrap().len() < 3 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                } => {}
            }
        })
        .await;
        assert!(waited.is_ok(), "the three handlers started");
    }
    assert_eq!(journal.load_run("r2").unwrap().unwrap().0.status, RunStatus::Running, "interrupted");

    // A new process: same tools, same journal.
    let runtime = AgentRuntime::new(agent(&world, three_calls(), None), Arc::new(journal.clone()));
    let result = runtime.resume("r2").await.unwrap();
    let needs = result.needs_input.into_iter().next().expect("send is manual and its outcome is unknown");
    assert_eq!(
        (needs.kind, needs.call_id.as_str(), needs.tool.as_str()),
        (NeedsInputKind::Outcome, "c2", "send")
    );
    assert!(needs.reason.contains("not run again"), "{}", needs.reason);
    assert_eq!(runtime.status("r2").unwrap().run.status, RunStatus::NeedsInput);
    assert_eq!(world.model_requests.load(Ordering::SeqCst), 1, "turn 1's response came from the journal");
    assert_eq!(world.runs_of("send").len(), 1, "a manual call never runs twice");
    // Nothing of the batch ran while it waits.
    assert_eq!(world.runs_of("charge").len(), 1);

    // Answering the wrong call, or approving instead, is refused with what it waits for.
    let err = runtime.answer("r2", "c1", "x").unwrap_err().to_string();
    assert!(
        err.contains("not waiting for an answer of call \"c1\"") && err.contains("answer of \"c2\""),
        "{err}"
    );
    assert!(runtime.approve("r2", "c2", ApprovalDecision::Approve).is_err());

    runtime.answer("r2", "c2", "the message was sent").unwrap();
    let result = runtime.resume("r2").await.unwrap();
    assert_eq!(result.output, "saw: read done | the message was sent | charge done");
    assert_eq!(world.runs_of("send").len(), 1);
    let charges = world.runs_of("charge");
    assert_eq!(charges, ["charge key=r2/c3", "charge key=r2/c3"], "idempotent: re-run with the same key");
    assert!(world.runs_of("read").len() <= 2, "safe: at most once more per crash");
    assert_eq!(world.model_requests.load(Ordering::SeqCst), 2);
    assert_eq!(runtime.status("r2").unwrap().run.status, RunStatus::Completed);
}

#[tokio::test]
async fn an_ask_without_an_approver_pauses_durably_until_approved() {
    let world = Arc::new(World::default());
    let journal = MemoryJournal::new();
    let ask = || PermissionManager::new(PermissionLevel::Ask);
    let calls = vec![ToolCall::new("c1", "send", "{}"), ToolCall::new("c2", "send", "{}")];
    let runtime = AgentRuntime::new(agent(&world, calls.clone(), Some(ask())), Arc::new(journal.clone()));
    let result = runtime.start("r3", "go").await.unwrap();
    let needs = result.needs_input.into_iter().next().unwrap();
    assert_eq!((needs.kind, needs.call_id.as_str()), (NeedsInputKind::Approval, "c1"));
    let report = runtime.status("r3").unwrap();
    assert_eq!(report.state.needs_input.len(), 2, "both calls wait");
    assert!(world.runs_of("send").is_empty(), "nothing ran");

    // Another process decides; a third resumes. The session grant covers c2 as well?
    // No: c2 was asked on its own and still waits.
    let other = AgentRuntime::new(agent(&world, calls.clone(), Some(ask())), Arc::new(journal.clone()));
    other.approve("r3", "c1", ApprovalDecision::Approve).unwrap();
    let result = other.resume("r3").await.unwrap();
    assert_eq!(result.needs_input[0].call_id, "c2");
    other.approve("r3", "c2", ApprovalDecision::Deny).unwrap();
    let result = other.resume("r3").await.unwrap();
    assert_eq!(result.output, "saw: send done | Permission denied");
    assert_eq!(world.runs_of("send").len(), 1);
}

#[tokio::test]
async fn a_session_grant_is_kept_in_the_journal_and_deny_still_wins() {
    let world = Arc::new(World::default());
    let journal = MemoryJournal::new();
    let calls = vec![ToolCall::new("c1", "send", "{}"), ToolCall::new("c2", "send", "{}")];
    let runtime = AgentRuntime::new(
        agent(&world, calls.clone(), Some(PermissionManager::new(PermissionLevel::Ask))),
        Arc::new(journal.clone()),
    );
    runtime.start("r4", "go").await.unwrap();
    runtime.approve("r4", "c1", ApprovalDecision::ApproveForSession).unwrap();
    let result = runtime.resume("r4").await.unwrap();
    assert_eq!(result.output, "saw: send done | send done", "the grant covers c2");
    let (_, entries) = journal.load_run("r4").unwrap().unwrap();
    assert!(
        entries.iter().any(|e| matches!(
            &e.entry,
            Entry::Approval { decision: ApprovalDecision::ApproveForSession, .. }
        ))
    );

    // DENY beats a grant: an override on the manager.
    let deny = PermissionManager::new(PermissionLevel::Ask).with_override("send", PermissionLevel::Deny);
    let runtime = AgentRuntime::new(agent(&world, calls, Some(deny)), Arc::new(journal.clone()));
    let result = runtime.start("r5", "go").await.unwrap();
    assert_eq!(result.output, "saw: Permission denied | Permission denied");
}

#[tokio::test]
async fn a_resume_with_other_tools_is_refused() {
    let world = Arc::new(World::default());
    *world.hang_once.lock().unwrap() = vec!["send".into()];
    let journal = MemoryJournal::new();
    let runtime = AgentRuntime::new(agent(&world, three_calls(), None), Arc::new(journal.clone()));
    {
        let run = runtime.start("r6", "go");
        let _ = tokio::time::timeout(Duration::from_millis(300), run).await;
    }
    let other = Agent::builder()
        .model(FunctionModel::new(|_| Ok(ModelResponse::text("x"))))
        .tool(tool(&world, "read", ReplayPolicy::Safe))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let err = AgentRuntime::new(other, Arc::new(journal)).resume("r6").await.unwrap_err().to_string();
    assert!(err.contains("run \"r6\" was started with tools [read, charge, send]"), "{err}");
    assert!(err.contains("this agent has tools [read]"), "{err}");
}

fn slow_tool(name: &str, policy: ReplayPolicy, hits: Arc<AtomicUsize>) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Slow the first time.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, _ctx| {
            let hits = hits.clone();
            async move {
                if hits.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Ok("finished".into())
            }
        }),
    )
    .with_replay_policy(policy)
    .with_timeout_seconds(0.2)
    .with_retry(ToolRetry::immediate(2))
}

#[tokio::test]
async fn timeouts_retry_safe_and_idempotent_and_stop_manual_for_an_answer() {
    let (safe, idem, manual) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let calls = vec![
        ToolCall::new("a", "safe_slow", "{}"),
        ToolCall::new("b", "idem_slow", "{}"),
        ToolCall::new("c", "manual_slow", "{}"),
    ];
    let agent = Agent::builder()
        .model(FunctionModel::new(move |req| {
            Ok(match req.messages.last() {
                Some(Message::User { .. }) => ModelResponse::tool_calls(calls.clone()),
                _ => ModelResponse::text(format!("{} messages", req.messages.len())),
            })
        }))
        .tool(slow_tool("safe_slow", ReplayPolicy::Safe, safe.clone()))
        .tool(slow_tool("idem_slow", ReplayPolicy::Idempotent, idem.clone()))
        .tool(slow_tool("manual_slow", ReplayPolicy::Manual, manual.clone()))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let journal = MemoryJournal::new();
    let runtime = AgentRuntime::new(agent, Arc::new(journal.clone()));
    let result = runtime.start("t1", "go").await.unwrap();
    let needs = result.needs_input.into_iter().next().expect("the manual tool timed out");
    assert_eq!((needs.kind, needs.call_id.as_str()), (NeedsInputKind::Outcome, "c"));
    assert!(needs.reason.contains("timed out"), "{}", needs.reason);
    assert_eq!(
        (safe.load(Ordering::SeqCst), idem.load(Ordering::SeqCst), manual.load(Ordering::SeqCst)),
        (2, 2, 1)
    );
    runtime.answer("t1", "c", "it did not run").unwrap();
    let result = runtime.resume("t1").await.unwrap();
    assert_eq!(result.output, "5 messages");
    assert_eq!(manual.load(Ordering::SeqCst), 1, "never re-run");
    assert_eq!(safe.load(Ordering::SeqCst), 2, "results were journaled; not run again on resume");
}

#[tokio::test]
async fn a_serial_call_queued_behind_a_crash_is_not_taken_for_started() {
    let world = Arc::new(World::default());
    *world.hang_once.lock().unwrap() = vec!["first".into()];
    let journal = MemoryJournal::new();
    let build = |world: &Arc<World>| {
        let calls = vec![ToolCall::new("s1", "first", "{}"), ToolCall::new("s2", "second", "{}")];
        Agent::builder()
            .model(FunctionModel::new(move |req| {
                Ok(match req.messages.last() {
                    Some(Message::User { .. }) => ModelResponse::tool_calls(calls.clone()),
                    _ => ModelResponse::text("end"),
                })
            }))
            .tool(tool(world, "first", ReplayPolicy::Manual).with_concurrent(false))
            .tool(tool(world, "second", ReplayPolicy::Manual).with_concurrent(false))
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap()
    };
    {
        let runtime = AgentRuntime::new(build(&world), Arc::new(journal.clone()));
        let run = runtime.start("q", "go");
        tokio::pin!(run);
        let started = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::select! {
                _ = &mut run => panic!("first hangs"),
                _ = async { while world.runs_of("first").is_empty() { tokio::time::sleep(Duration::from_millis(5)).await } } => {}
            }
        })
        .await;
        assert!(started.is_ok());
    }
    let starts: Vec<String> = journal
        .load_run("q")
        .unwrap()
        .unwrap()
        .1
        .iter()
        .filter_map(|e| match &e.entry {
            Entry::CallStart { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts, ["s1"], "s2 waited for its turn and never started");
    let runtime = AgentRuntime::new(build(&world), Arc::new(journal.clone()));
    let needs = runtime.resume("q").await.unwrap().needs_input.into_iter().next().unwrap();
    assert_eq!((needs.kind, needs.call_id.as_str()), (NeedsInputKind::Outcome, "s1"), "only s1 is in doubt");
    runtime.answer("q", "s1", "first done").unwrap();
    assert_eq!(runtime.resume("q").await.unwrap().output, "end");
    assert_eq!((world.runs_of("first").len(), world.runs_of("second").len()), (1, 1));
}

#[tokio::test]
async fn a_second_resume_while_one_drives_the_run_is_refused() {
    let world = Arc::new(World::default());
    *world.hang_once.lock().unwrap() = vec!["send".into()];
    let journal = MemoryJournal::new();
    let first = AgentRuntime::new(agent(&world, three_calls(), None), Arc::new(journal.clone()));
    let second = AgentRuntime::new(agent(&world, three_calls(), None), Arc::new(journal.clone()));
    let run = first.start("d", "go");
    tokio::pin!(run);
    let refused = tokio::select! {
        _ = &mut run => panic!("send hangs"),
        r = async {
            while world.runs_of("send").is_empty() { tokio::time::sleep(Duration::from_millis(5)).await }
            second.resume("d").await
        } => r,
    };
    let err = refused.unwrap_err().to_string();
    assert!(err.contains("run \"d\" is being driven by another process or task"), "{err}");
    assert_eq!(world.runs_of("send").len(), 1, "the second driver ran nothing");
}

/// Spec: no untrusted input recurses without bound. A tool result whose structured content
/// nests 1 to 1,000,000 levels, journaled in SQLite: every run completes and its journal
/// reads back. Before the fix a result 126 levels deep was written but made the journal
/// unreadable (serde_json stops at 127 levels, the entry adds two), and one 10,000 deep
/// aborted the process.
#[tokio::test]
async fn a_deeply_nested_result_is_journaled_as_an_error_the_journal_can_read_back() {
    use harnessx_core::{MAX_JSON_DEPTH, Parts, ToolOutput};
    use harnessx_durable::SqliteJournal;
    use harnessx_test_support::deep::{DEPTHS, nested_value};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    for depth in DEPTHS.into_iter().chain([MAX_JSON_DEPTH + 1, 126]) {
        let tree = ToolDefinition::new(
            "tree",
            "A deep tree.",
            json!({"type": "object", "properties": {}}),
            ToolHandler::from_blocking(move |_args, _ctx| {
                Ok(ToolOutput {
                    content: "tree".into(),
                    structured_content: Some(nested_value(depth)),
                    parts: Parts::new(),
                })
            }),
        );
        let model = FunctionModel::new(|req| {
            Ok(match req.messages.last() {
                Some(Message::User { .. }) => {
                    ModelResponse::tool_calls(vec![ToolCall::new("c1", "tree", "{}")])
                }
                _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
            })
        });
        let agent = Agent::builder()
            .model(model)
            .tool(tree)
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap();
        let run = format!("deep-{depth}");
        let runtime = AgentRuntime::new(agent, Arc::new(SqliteJournal::open(&path).unwrap()));
        let result = runtime.start(&run, "go").await.unwrap();
        let (_, entries) = SqliteJournal::open(&path)
            .unwrap()
            .load_run(&run)
            .unwrap_or_else(|e| panic!("depth {depth}: {e}"))
            .unwrap();
        let Some(Entry::CallResult { result: call, .. }) =
            entries.into_iter().map(|e| e.entry).find(|e| matches!(e, Entry::CallResult { .. }))
        else {
            panic!("depth {depth}: no call result")
        };
        if depth <= MAX_JSON_DEPTH {
            assert_eq!(result.output, "saw: tree", "{depth}");
            assert_eq!(call.structured_content, Some(nested_value(depth)), "{depth}");
        } else {
            assert!(call.is_error && call.content.contains("nested too deeply"), "{depth}: {}", call.content);
            assert!(result.output.contains("nested too deeply"), "{depth}: {}", result.output);
        }
    }
}

// Regression: a decision was looked up by call id alone, so a journal holding a decision
// for a call whose response was never journaled (the old commit order) applied it to
// whatever arguments the model sent under that id when asked again.
#[tokio::test]
async fn a_journaled_decision_is_never_applied_to_other_arguments() {
    use harnessx_durable::{RunRecord, arguments_hash};
    let world = Arc::new(World::default());
    let ask = || Some(PermissionManager::new(PermissionLevel::Ask));
    let record = |id: &str| RunRecord {
        run_id: id.to_owned(),
        prompt: "go".to_owned(),
        prompt_parts: Default::default(),
        fingerprint: String::new(),
        fingerprint_summary: String::new(),
        status: RunStatus::Running,
        created_at_ms: 0,
        updated_at_ms: 0,
        output: None,
    };
    let decided = |hash: Option<String>| Entry::Approval {
        call_id: "c1".to_owned(),
        tool: "send".to_owned(),
        decision: ApprovalDecision::Approve,
        arguments_hash: hash,
    };
    for (run, journaled, sent, runs) in [
        // Decided on other arguments: asked again, nothing runs.
        ("other", Some(arguments_hash(r#"{"to":"alice"}"#)), r#"{"to":"mallory"}"#, false),
        // A decision from a journal that did not bind decisions: asked again.
        ("unbound", None, r#"{"to":"alice"}"#, false),
        // The same arguments: the decision holds.
        ("same", Some(arguments_hash(r#"{"to":"alice"}"#)), r#"{"to":"alice"}"#, true),
    ] {
        let journal = MemoryJournal::new();
        let calls = vec![ToolCall::new("c1", "send", sent)];
        let runtime = AgentRuntime::new(agent(&world, calls, ask()), Arc::new(journal.clone()));
        let mut header = record(run);
        (header.fingerprint, header.fingerprint_summary) = {
            // The fingerprint of this agent, taken from a run it starts.
            runtime.start(&format!("{run}-probe"), "go").await.unwrap();
            let (probe, _) = journal.load_run(&format!("{run}-probe")).unwrap().unwrap();
            (probe.fingerprint, probe.fingerprint_summary)
        };
        journal.create_run(&header).unwrap();
        journal.append(run, &[decided(journaled)], None).unwrap();
        let before = world.runs_of("send").len();
        let result = runtime.resume(run).await.unwrap();
        if runs {
            assert_eq!(result.status, RunStatus::Completed, "{run}: {result:?}");
            assert_eq!(world.runs_of("send").len(), before + 1, "{run}");
        } else {
            assert_eq!(result.status, RunStatus::NeedsInput, "{run}: {result:?}");
            assert_eq!(result.needs_input[0].kind, NeedsInputKind::Approval, "{run}");
            assert_eq!(result.needs_input[0].arguments, sent, "{run}");
            assert_eq!(world.runs_of("send").len(), before, "{run}: nothing ran");
        }
    }
}

// The fingerprint rule (docs/durable.md): a run is compared with the tools it started
// with, whatever its tool list became while it ran; the new tools reach the model.
#[tokio::test]
async fn a_tool_registered_mid_run_reaches_the_model_and_a_resume_is_compared_with_the_start() {
    use harnessx_agent::model::ModelError;
    let fail_turn_two = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let late = || {
        ToolDefinition::new(
            "late",
            "Registered mid-run.",
            json!({"type": "object", "properties": {}}),
            ToolHandler::from_async(|_, _| async { Ok("late ran".into()) }),
        )
        .with_replay_policy(ReplayPolicy::Safe)
    };
    let build = |with_late: bool| {
        let (fail, seen) = (fail_turn_two.clone(), seen.clone());
        let model = FunctionModel::new(move |req| {
            seen.lock().unwrap().push(req.tools.iter().map(|t| t.name.clone()).collect());
            let turn = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
            match turn {
                0 => Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "learn", "{}")])),
                _ if fail.swap(false, Ordering::SeqCst) => {
                    Err(ModelError::Other("the provider went away".into()))
                }
                1 => Ok(ModelResponse::tool_calls(vec![ToolCall::new("c2", "late", "{}")])),
                _ => Ok(ModelResponse::text(format!("saw: {}", tool_contents(req)))),
            }
        });
        let agent = Agent::builder()
            .model(model)
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap();
        let registry = agent.tools().downgrade();
        agent
            .tools()
            .register_tool(
                ToolDefinition::new(
                    "learn",
                    "Learn a tool.",
                    json!({"type": "object", "properties": {}}),
                    ToolHandler::from_async(move |_, _| {
                        let (registry, late) = (registry.clone(), late());
                        async move {
                            if let Some(r) = registry.upgrade()
                                && !r.contains("late")
                            {
                                r.register_tool(late).unwrap();
                            }
                            Ok("learned".into())
                        }
                    }),
                )
                .with_replay_policy(ReplayPolicy::Safe),
            )
            .unwrap();
        if with_late {
            agent.tools().register_tool(late()).unwrap();
        }
        agent
    };
    let journal = MemoryJournal::new();
    let first = AgentRuntime::new(build(false), Arc::new(journal.clone()));
    let err = first.start("t1", "go").await.unwrap_err().to_string();
    assert!(err.contains("the provider went away"), "{err}");
    let tools = seen.lock().unwrap().clone();
    assert_eq!(tools, [vec!["learn".to_owned()], vec!["learn".to_owned(), "late".to_owned()]], "refreshed");

    // A process whose agent has `late` from the start differs from the run's start.
    let err = AgentRuntime::new(build(true), Arc::new(journal.clone())).resume("t1").await.unwrap_err();
    assert!(matches!(err, DurableError::Mismatch { .. }), "{err}");
    // One with the run's starting tools resumes it; `learn` is replayed, not run again,
    // so `late` is unknown there and the model reads why.
    let done = AgentRuntime::new(build(false), Arc::new(journal)).resume("t1").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert!(done.output.starts_with("saw: learned | Unknown tool \"late\""), "{}", done.output);
}
