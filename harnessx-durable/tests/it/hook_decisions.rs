//! Every kind of hook decision, on every backend: a direct run, the memory and SQLite
//! journals, and a Restate cluster. One model turn makes one call per kind; three hooks
//! run in the order given, and each call's hooks are asked once over the whole run,
//! pause and resume included.
//!
//! - `continue`: the rules decide, the call runs;
//! - `deny`: refused with the hook's message, and the hooks after it are not asked;
//! - `rewrite`: runs with the hook's arguments, which the history shows;
//! - `smuggle`: a rewrite onto arguments a deny rule refuses, refused;
//! - `answer`: the hook's result, the tool never runs;
//! - `allow` on an ASK tool: runs with no question; on a DENY tool: refused;
//! - `ask` on an allowed call: the run waits for a person (approved, it runs);
//! - `post`: the post hook's replacement is the result;
//! - `order`: each hook sees the arguments the one before rewrote, in order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, RunState, RunStatus};
use harnessx_core::hooks::{HookError, PostDecision, PostToolUse, PreDecision, PreToolUse, ToolHook};
use harnessx_core::{
    ApprovalDecision, PermissionLevel, PermissionManager, ToolCall, ToolDefinition, ToolHandler, ToolOutput,
};
use harnessx_durable::{
    AgentRuntime, DurableRuns, JournalStore, MemoryJournal, ResumeOptions, SqliteJournal, StartOptions,
};
use serde_json::{Value, json};

/// Who was asked about which call, in order (`hook:call_id`).
type Asked = Arc<Mutex<Vec<String>>>;

/// One of three hooks. `first` decides the one-word calls; `second` and `third` only
/// take part in `order` (each appends its name to the text) and otherwise have no
/// opinion.
struct Hook {
    name: &'static str,
    asked: Asked,
}

impl ToolHook for Hook {
    fn name(&self) -> &str {
        self.name
    }
    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        self.asked.lock().unwrap().push(format!("{}:{}", self.name, call.call_id));
        let text = call.arguments["text"].as_str().unwrap_or_default();
        let decision = match (self.name, text) {
            (_, t) if t.starts_with("order") => {
                PreDecision::Rewrite { arguments: json!({"text": format!("{t} {}", self.name)}) }
            }
            ("first", "deny") => PreDecision::Deny { message: "no, says first".into() },
            ("first", "rewrite") => PreDecision::Rewrite { arguments: json!({"text": "rewritten"}) },
            ("first", "smuggle") => PreDecision::Rewrite { arguments: json!({"text": "secret plans"}) },
            ("first", "answer") => PreDecision::Answer { result: ToolOutput::text("from the cache") },
            ("first", "allow") => PreDecision::Allow,
            ("first", "ask") => PreDecision::Ask,
            _ => PreDecision::Continue,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        let decision = if self.name == "third" && call.content == "post" {
            PostDecision::Replace { result: ToolOutput::text("replaced by third") }
        } else {
            PostDecision::Keep
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
}

/// The calls of the one tool turn: `(call id, tool, text)`.
const CALLS: [(&str, &str, &str); 10] = [
    ("c1", "echo", "continue"),
    ("c2", "echo", "deny"),
    ("c3", "echo", "rewrite"),
    ("c4", "echo", "smuggle"),
    ("c5", "echo", "answer"),
    ("c6", "risky", "allow"),
    ("c7", "banned", "allow"),
    ("c8", "echo", "ask"),
    ("c9", "echo", "post"),
    ("c10", "echo", "order"),
];

/// What each call ends with: `(content, is_error)`, by call id.
fn expected() -> BTreeMap<String, (String, bool)> {
    [
        ("c1", "continue", false),
        ("c2", "no, says first", true),
        ("c3", "rewritten", false),
        ("c4", "Permission denied", true),
        ("c5", "from the cache", false),
        ("c6", "allow", false),
        ("c7", "Permission denied", true),
        ("c8", "ask", false),
        ("c9", "replaced by third", false),
        ("c10", "order first second third", false),
    ]
    .into_iter()
    .map(|(id, content, error)| (id.to_owned(), (content.to_owned(), error)))
    .collect()
}

/// Echo tools at three levels: `echo` allowed, `risky` ASK, `banned` DENY; a deny rule
/// refuses `echo(text=secret*)`. Every run of a handler is logged in `ran`. With
/// `questions`, a person approves every question (logged there); without, the run waits.
fn agent(asked: &Asked, ran: &Asked, questions: Option<&Asked>) -> Agent {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(
                CALLS
                    .iter()
                    .map(|(id, tool, text)| ToolCall::new(*id, *tool, json!({"text": text}).to_string()))
                    .collect(),
            ),
            // The answer is every result the model saw, so a backend that keeps the run's
            // messages to itself (Restate) shows them too.
            _ => ModelResponse::text(json!(seen(&req.messages)).to_string()),
        })
    });
    let echo = |name: &str, level: PermissionLevel| {
        let ran = ran.clone();
        ToolDefinition::new(
            name,
            "Echoes its text.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            ToolHandler::from_async(move |args: Value, _| {
                let ran = ran.clone();
                async move {
                    let text = args["text"].as_str().unwrap_or_default().to_owned();
                    ran.lock().unwrap().push(text.clone());
                    Ok(text.into())
                }
            }),
        )
        .with_permission(level)
    };
    let manager = PermissionManager::new(PermissionLevel::Allow);
    manager.add_rule(PermissionLevel::Deny, "echo(text=secret*)").unwrap();
    let manager = match questions.cloned() {
        Some(questions) => manager.with_approval_fn(move |request| {
            questions.lock().unwrap().push(request.call_id.clone());
            async { ApprovalDecision::Approve }
        }),
        None => manager,
    };
    let hook = |name| Hook { name, asked: asked.clone() };
    Agent::builder()
        .model(model)
        .tool(echo("echo", PermissionLevel::Allow))
        .tool(echo("risky", PermissionLevel::Ask))
        .tool(echo("banned", PermissionLevel::Deny))
        .permissions(manager)
        .hook(hook("first"))
        .hook(hook("second"))
        .hook(hook("third"))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

/// The results in `messages`, by call id.
fn seen(messages: &[Message]) -> BTreeMap<String, (String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, content, is_error, .. } => {
                Some((call_id.clone(), (content.clone(), *is_error)))
            }
            _ => None,
        })
        .collect()
}

/// Checks a finished run: every result, who was asked (once per call, in order, and no
/// one after a final decision), what ran, and the history's arguments.
fn check(backend: &str, state: &RunState, asked: &Asked, ran: &Asked) {
    assert_eq!(state.status, RunStatus::Completed, "{backend}: {state:?}");
    let answered: BTreeMap<String, (String, bool)> = serde_json::from_str(&state.output).unwrap();
    assert_eq!(answered, expected(), "{backend}");
    let asked = asked.lock().unwrap().clone();
    let of = |call: &str| -> Vec<&str> {
        asked
            .iter()
            .filter(|a| a.ends_with(&format!(":{call}")))
            .map(|a| a.split(':').next().unwrap())
            .collect()
    };
    for (call, _, text) in CALLS {
        let want: &[&str] = match text {
            // A final decision by the first hook: the others are not asked.
            "deny" | "answer" | "allow" | "ask" => &["first"],
            _ => &["first", "second", "third"],
        };
        assert_eq!(of(call), want, "{backend}: the hooks asked about {call} ({text}), once each, in order");
    }
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_eq!(
        ran,
        ["allow", "ask", "continue", "order first second third", "post", "rewritten"],
        "{backend}: what ran"
    );
    // The history shows the arguments that ran (where the backend returns it).
    if let Some(made) = state.messages.iter().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => Some(tool_calls.clone()),
        _ => None,
    }) {
        let arguments: BTreeMap<String, String> = made.into_iter().map(|c| (c.id, c.arguments)).collect();
        assert_eq!(arguments["c3"], r#"{"text":"rewritten"}"#, "{backend}");
        assert_eq!(arguments["c10"], r#"{"text":"order first second third"}"#, "{backend}");
    } else {
        assert_eq!(backend, "restate", "{backend}: no history returned");
    }
}

/// Starts run `id`, which waits on `c8` (the hook asked a person); approves it and
/// resumes to the end.
async fn pause_approve_resume(backend: &str, runs: &dyn DurableRuns, id: &str) -> RunState {
    let paused = runs.start(id, "Go.", StartOptions::default()).await.unwrap();
    assert_eq!(paused.status, RunStatus::NeedsInput, "{backend}: {paused:?}");
    let waiting: Vec<&str> = paused.needs_input.iter().map(|n| n.call_id.as_str()).collect();
    assert_eq!(waiting, ["c8"], "{backend}");
    runs.approve(id, "c8", ApprovalDecision::Approve).await.unwrap();
    runs.resume(id, ResumeOptions::default()).await.unwrap()
}

#[tokio::test]
async fn every_decision_kind_on_a_direct_run_and_both_journals() {
    // A direct run: the ASK the hook asked for goes to the agent's approval callback.
    let (asked, ran) = (Asked::default(), Asked::default());
    let questions = Asked::default();
    let direct = agent(&asked, &ran, Some(&questions));
    let state = direct.run("Go.").await.unwrap();
    check("direct", &state, &asked, &ran);
    assert_eq!(*questions.lock().unwrap(), ["c8"], "only the call a hook asked about is put to a person");

    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn JournalStore> = Arc::new(SqliteJournal::open(dir.path().join("runs.db")).unwrap());
    for (backend, journal) in
        [("memory", Arc::new(MemoryJournal::new()) as Arc<dyn JournalStore>), ("sqlite", sqlite)]
    {
        let (asked, ran) = (Asked::default(), Asked::default());
        let runtime = AgentRuntime::new(agent(&asked, &ran, None), journal);
        let done = pause_approve_resume(backend, &runtime, "r").await;
        check(backend, &done, &asked, &ran);
    }
}

#[cfg(feature = "restate")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decision_kind_on_restate() {
    use harnessx_durable::restate::RestateRuntime;
    use harnessx_test_support::restate::RestateServer;

    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let (asked, ran) = (Asked::default(), Asked::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(
        Arc::new(agent(&asked, &ran, None)),
        listener,
        async {
            let _ = stop_rx.await;
        },
    ));
    let admin = server.admin_url.clone();
    tokio::task::spawn_blocking(move || RestateServer::register_at(&admin, &worker)).await.unwrap().unwrap();
    let cluster = RestateRuntime::new(&server.ingress_url).unwrap().with_admin(&server.admin_url).unwrap();
    let done = pause_approve_resume("restate", &cluster, "h-decisions").await;
    check("restate", &done, &asked, &ran);
    let _ = stop_tx.send(());
    let _ = serving.await;
}
