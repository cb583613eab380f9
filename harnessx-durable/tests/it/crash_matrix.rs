//! The crash matrix: a real child process runs a durable agent on a SQLite journal and
//! is killed with SIGKILL at every journal commit in turn, just before it and just after
//! it; each run is then resumed (and its questions answered) until it completes.
//! Counters kept in files outside the process prove that no journaled model response
//! is requested again, no `manual` tool body runs twice, `safe` and `idempotent` tools
//! run at most once more per crash (the idempotent one with the same key), and the
//! final transcript is the one an uncrashed run produces.
//!
//! The children are this test binary run again with `HX_CRASH_ROLE` set.

use crate::common;
use common::*;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, NeedsInputKind};
use harnessx_core::{ApprovalDecision, PermissionLevel, ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::{
    AgentRuntime, Entry, JournalEntry, JournalError, JournalStore, RunLock, RunRecord, RunStatus,
    SqliteJournal,
};
use serde_json::json;

const ROLE: &str = "HX_CRASH_ROLE";
const DIR: &str = "HX_CRASH_DIR";
const AT: &str = "HX_CRASH_AT";
const WHEN: &str = "HX_CRASH_WHEN";
const RUN: &str = "r";
/// Set in a child whose agent has an approval callback (a terminal, say): `publish` is
/// approved in the child, and the decision is journaled there.
const APPROVER: &str = "HX_CRASH_APPROVER";

fn tool(dir: &Path, name: &str, policy: ReplayPolicy) -> ToolDefinition {
    let (dir, n) = (dir.to_path_buf(), name.to_owned());
    ToolDefinition::new(
        name,
        "A tool with an effect outside the process.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, ctx| {
            let (dir, n) = (dir.clone(), n.clone());
            async move {
                // Different lengths, so the results of the batch are committed one by
                // one and a kill can fall between them, with handlers still running.
                let ms = match n.as_str() {
                    "charge" => 40,
                    "send" => 80,
                    _ => 5,
                };
                tokio::time::sleep(Duration::from_millis(ms)).await;
                log(
                    &dir,
                    &format!("{n}.log"),
                    &format!("{} {}", ctx.call_id(), ctx.idempotency_key().unwrap_or("-")),
                );
                Ok(format!("{n} done").into())
            }
        }),
    )
    .with_replay_policy(policy)
}

/// Turn 1: three concurrent calls (safe, idempotent, manual); turn 2: a manual call
/// that asks (no one approves in the child, so the run pauses); turn 3: the answer.
fn agent(dir: &Path, approver: bool) -> Agent {
    let d = dir.to_path_buf();
    let mut permissions = harnessx_core::PermissionManager::default();
    if approver {
        let d = dir.to_path_buf();
        permissions = permissions.with_approval_fn(move |request| {
            log(&d, "approvals.log", &request.call_id);
            async { ApprovalDecision::Approve }
        });
    }
    let model = FunctionModel::new(move |req| {
        let turn = 1 + req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        log(&d, "model.log", &turn.to_string());
        Ok(match turn {
            1 => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "read", "{}"),
                ToolCall::new("c2", "charge", "{}"),
                ToolCall::new("c3", "send", "{}"),
            ]),
            2 => ModelResponse::tool_calls(vec![ToolCall::new("c4", "publish", "{}")]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    Agent::builder()
        .model(model)
        .tool(tool(dir, "read", ReplayPolicy::Safe))
        .tool(tool(dir, "charge", ReplayPolicy::Idempotent))
        .tool(tool(dir, "send", ReplayPolicy::Manual))
        .tool(tool(dir, "publish", ReplayPolicy::Manual).with_permission(PermissionLevel::Ask))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .permissions(permissions)
        .build()
        .unwrap()
}

/// A SQLite journal that kills its own process with SIGKILL at its `at`-th append,
/// just before or just after the commit.
struct Crashing {
    inner: SqliteJournal,
    appends: AtomicUsize,
    at: Option<usize>,
    after: bool,
}

fn kill_self() -> ! {
    let _ = Command::new("kill").args(["-KILL", &std::process::id().to_string()]).status();
    std::thread::sleep(Duration::from_secs(10));
    unreachable!("SIGKILL did not arrive");
}

impl JournalStore for Crashing {
    fn create_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        self.inner.create_run(run)
    }
    fn load_run(&self, run_id: &str) -> Result<Option<(RunRecord, Vec<JournalEntry>)>, JournalError> {
        self.inner.load_run(run_id)
    }
    fn append(
        &self,
        run_id: &str,
        entries: &[Entry],
        status: Option<(RunStatus, Option<String>)>,
    ) -> Result<u64, JournalError> {
        let n = self.appends.fetch_add(1, Ordering::SeqCst) + 1;
        let crash = self.at == Some(n);
        if crash && !self.after {
            kill_self();
        }
        let out = self.inner.append(run_id, entries, status);
        if crash {
            kill_self();
        }
        out
    }
    fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
        self.inner.list_runs()
    }
    fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError> {
        self.inner.lock_run(run_id)
    }
}

/// The child's side; a no-op in an ordinary test run.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let journal = Arc::new(Crashing {
        inner: SqliteJournal::open(dir.join("journal.db")).unwrap(),
        appends: AtomicUsize::new(0),
        at: std::env::var(AT).ok().and_then(|n| n.parse().ok()),
        after: std::env::var(WHEN).as_deref() == Ok("after"),
    });
    let runtime = AgentRuntime::new(agent(&dir, std::env::var(APPROVER).is_ok()), journal.clone());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = rt.block_on(async {
        match role.as_str() {
            "start" => runtime.start(RUN, "go").await,
            _ => runtime.resume(RUN).await,
        }
    });
    let result = result.unwrap();
    if result.needs_input.is_empty() {
        std::fs::write(dir.join("final.json"), serde_json::to_string_pretty(&result.messages).unwrap())
            .unwrap();
    }
    log(&dir, "appends.log", &journal.appends.load(Ordering::SeqCst).to_string());
}

/// Runs one child; returns whether it was killed.
fn run_child(dir: &Path, role: &str, crash: Option<(usize, &str)>, approver: bool) -> bool {
    let mut command = Command::new(std::env::current_exe().unwrap());
    if approver {
        command.env(APPROVER, "1");
    }
    command
        .args(["crash_matrix::child", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DIR, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((at, when)) = crash {
        command.env(AT, at.to_string()).env(WHEN, when);
    }
    let out = command.output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    if out.status.signal() == Some(9) {
        return true;
    }
    assert!(out.status.success(), "child {role} failed: {}", String::from_utf8_lossy(&out.stderr));
    false
}

/// Drives a scenario to completion: starts (crashing the `crash_in`-th child as told),
/// then resumes, approving `publish` and answering unknown outcomes with exactly what
/// the tool says, so the transcript can equal an uncrashed run's. Returns how many
/// children were killed, and, when the targeted child was not, how many commits it made
/// (the results of a batch are grouped by timing, so a child may make fewer commits than
/// the uncrashed run's and never reach the one it was to die at).
fn scenario(
    dir: &Path,
    crash_in: usize,
    crash: Option<(usize, &str)>,
    approver: bool,
) -> (usize, Option<usize>) {
    let mut killed = 0;
    let mut reached = None;
    let mut children = 0;
    let parent =
        AgentRuntime::new(agent(dir, false), Arc::new(SqliteJournal::open(dir.join("journal.db")).unwrap()));
    loop {
        let role = if children == 0 { "start" } else { "resume" };
        let this_crash = if children == crash_in { crash } else { None };
        if run_child(dir, role, this_crash, approver) {
            killed += 1;
        } else if this_crash.is_some() {
            reached = lines(dir, "appends.log").last().map(|n| n.parse().unwrap());
        }
        children += 1;
        assert!(children < 8, "the run did not complete: {:?}", parent.status(RUN).map(|r| r.run.status));
        // The run is created before the first commit, so it exists whatever was killed.
        let report = parent.status(RUN).unwrap();
        match report.run.status {
            RunStatus::Completed => return (killed, reached),
            RunStatus::NeedsInput => {
                for need in &report.state.needs_input {
                    match need.kind {
                        NeedsInputKind::Approval => {
                            parent.approve(RUN, &need.call_id, ApprovalDecision::Approve).unwrap()
                        }
                        NeedsInputKind::Outcome | NeedsInputKind::Question => {
                            parent.answer(RUN, &need.call_id, &format!("{} done", need.tool)).unwrap()
                        }
                        kind => panic!("the crash matrix's tools ask for no {kind:?}: {report:?}"),
                    }
                }
            }
            RunStatus::LimitReached => panic!("the crash matrix sets no limit: {report:?}"),
            RunStatus::Blocked => panic!("the crash matrix has no hooks: {report:?}"),
            RunStatus::Running | RunStatus::Failed => {}
        }
    }
}

/// What the model ended up seeing, from the journal: every call's result (by call id,
/// the last one journaled) and the final answer. A child killed right after the final
/// commit never writes its transcript file, so the journal is the record.
fn transcript(dir: &Path) -> (Vec<(String, String, bool)>, Option<String>) {
    let journal = SqliteJournal::open(dir.join("journal.db")).unwrap();
    let (run, entries) = journal.load_run(RUN).unwrap().unwrap();
    let mut results: HashMap<String, (String, bool)> = HashMap::new();
    for e in entries {
        if let Entry::CallResult { result, .. } = e.entry {
            results.insert(result.call_id.clone(), (result.content, result.is_error));
        }
    }
    let mut results: Vec<(String, String, bool)> =
        results.into_iter().map(|(id, (c, e))| (id, c, e)).collect();
    results.sort();
    (results, run.output)
}

fn per_call(dir: &Path, tool: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for line in lines(dir, &format!("{tool}.log")) {
        let (id, key) = line.split_once(' ').unwrap();
        map.entry(id.to_owned()).or_default().push(key.to_owned());
    }
    map
}

#[test]
fn every_crash_point_recovers_without_repeating_what_was_journaled() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    matrix(false);
}

// Regression: an approval decided by the terminal was journaled before the model
// response that carried its call, so a kill between the two asked the model again.
#[test]
fn a_kill_between_the_response_and_a_terminal_approval_never_asks_the_model_again() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    matrix(true);
}

/// Kills a child at every commit (before and after it), with `publish` approved by
/// `parent.approve` between children, or by the child's own approval callback.
fn matrix(approver: bool) {
    // The uncrashed run: its transcript, and how many commits each child made.
    let reference = tempfile::tempdir().unwrap();
    assert_eq!(scenario(reference.path(), usize::MAX, None, approver), (0, None));
    let messages = std::fs::read_to_string(reference.path().join("final.json")).unwrap();
    assert!(messages.contains("saw: read done | charge done | send done | publish done"), "{messages}");
    let expected = transcript(reference.path());
    assert_eq!(expected.0.len(), 4);
    assert_eq!(expected.1.as_deref(), Some("saw: read done | charge done | send done | publish done"));
    let appends: Vec<usize> =
        lines(reference.path(), "appends.log").iter().map(|l| l.parse().unwrap()).collect();
    let children = if approver { 1 } else { 2 };
    assert_eq!(
        appends.len(),
        children,
        "start pauses for the approval (unless approved), then one resume: {appends:?}"
    );
    let reference_requests = lines(reference.path(), "model.log").len();
    assert_eq!(reference_requests, 3);

    let mut cases = 0;
    let mut killed = 0;
    for (child, &commits) in appends.iter().enumerate() {
        for at in 1..=commits {
            for when in ["before", "after"] {
                let dir = tempfile::tempdir().unwrap();
                let d = dir.path();
                let (k, reached) = scenario(d, child, Some((at, when)), approver);
                let case = format!("child {child}, commit {at}, {when}");
                cases += 1;
                killed += k;
                match reached {
                    None => assert_eq!(k, 1, "{case}: killed"),
                    Some(n) => assert!(n < at, "{case}: the child made {n} commits and was not killed"),
                }
                if at <= 2 {
                    assert_eq!(k, 1, "{case}: the first two commits of a child are always reached");
                }
                assert_eq!(transcript(d), expected, "{case}: the transcript differs from an uncrashed run's");
                if let Ok(messages_here) = std::fs::read_to_string(d.join("final.json")) {
                    assert_eq!(messages_here, messages, "{case}: the messages differ");
                }
                // The model: at most one extra request (a response received but not yet
                // committed when the process died), and never for a journaled turn.
                let requests = lines(d, "model.log");
                assert!(requests.len() <= reference_requests + k, "{case}: {requests:?}");
                let mut per_turn: HashMap<&str, usize> = HashMap::new();
                for t in &requests {
                    *per_turn.entry(t.as_str()).or_default() += 1;
                }
                assert!(per_turn.values().all(|&n| n <= 2), "{case}: {requests:?}");
                for tool in ["send", "publish"] {
                    for (id, runs) in per_call(d, tool) {
                        assert_eq!(runs.len(), 1, "{case}: manual {tool} {id} ran {} times", runs.len());
                    }
                }
                for (id, runs) in per_call(d, "read") {
                    assert!(runs.len() <= 1 + k, "{case}: safe read {id} ran {} times", runs.len());
                }
                // Every decision follows the response that made its call, in the journal;
                // the callback is asked again only when the kill came before the
                // decision's commit.
                decisions_follow_their_responses(d, &case);
                assert!(
                    lines(d, "approvals.log").len() <= 1 + k,
                    "{case}: asked {:?}",
                    lines(d, "approvals.log")
                );
                for (id, keys) in per_call(d, "charge") {
                    assert!(keys.len() <= 1 + k, "{case}: idempotent charge {id} ran {} times", keys.len());
                    assert!(keys.iter().all(|key| key == &format!("{RUN}/{id}")), "{case}: keys {keys:?}");
                }
            }
        }
    }
    eprintln!("{cases} crash points, {killed} children killed, commits per child {appends:?}");
    assert!(cases >= 10, "{cases} crash points");
    assert!(killed * 2 >= cases, "only {killed} of {cases} children were killed");
}

/// Asserts that every journaled decision comes after the model response with its call.
fn decisions_follow_their_responses(dir: &Path, case: &str) {
    let journal = SqliteJournal::open(dir.join("journal.db")).unwrap();
    let (_, entries) = journal.load_run(RUN).unwrap().unwrap();
    let mut seen_calls: Vec<String> = Vec::new();
    for e in entries {
        match e.entry {
            Entry::ModelResponse { response, .. } => {
                let response: ModelResponse = serde_json::from_value(response).unwrap();
                seen_calls.extend(response.tool_calls.into_iter().map(|c| c.id));
            }
            Entry::Approval { call_id, arguments_hash, .. } => {
                assert!(seen_calls.contains(&call_id), "{case}: decision on {call_id} before its response");
                assert_eq!(
                    arguments_hash.as_deref(),
                    Some(harnessx_durable::arguments_hash("{}").as_str()),
                    "{case}"
                );
            }
            _ => {}
        }
    }
}
