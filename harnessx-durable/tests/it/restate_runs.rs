//! Durable runs on a real `restate-server` (feature `restate`; skipped, printing why,
//! only when `npm` is missing).
#![cfg(feature = "restate")]

use crate::common;
use common::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, RunLimits, ToolChoice};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_test_support::restate::{RestateServer, http};
use serde_json::json;

pub(crate) fn agent(runs: Arc<AtomicUsize>) -> Arc<Agent> {
    agent_with(runs, None)
}

fn agent_with(runs: Arc<AtomicUsize>, permissions: Option<harnessx_core::PermissionManager>) -> Arc<Agent> {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "add", r#"{"a": 1}"#),
                ToolCall::new("c2", "add", r#"{"a": 2}"#),
            ]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    let add = ToolDefinition::new(
        "add",
        "Add one.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        ToolHandler::from_async(move |args, _ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(format!("{}", args["a"].as_i64().unwrap() + 1).into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    let mut builder = Agent::builder()
        .model(model)
        .tool(add)
        .config(AgentConfig { planning: false, ..AgentConfig::default() });
    if let Some(p) = permissions {
        builder = builder.permissions(p);
    }
    Arc::new(builder.build().unwrap())
}

/// Polls `HarnessxRun/{run}/waiting` until it lists `call`.
fn wait_for(server: &RestateServer, run: &str, call: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, body) =
            http("POST", &format!("{}/HarnessxRun/{run}/waiting", server.ingress_url), None).unwrap();
        assert_eq!(status, 200, "{body}");
        if body.contains(&format!("\"call_id\":\"{call}\"")) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{run} never waited for {call}:\n{}",
            server.log_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_calls_wait_for_an_approval_sent_from_outside() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let server = Arc::new(server);
    let runs = Arc::new(AtomicUsize::new(0));
    let ask = harnessx_core::PermissionManager::new(harnessx_core::PermissionLevel::Ask);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(
        agent_with(runs.clone(), Some(ask)),
        listener,
        async {
            let _ = stop_rx.await;
        },
    ));
    let s = server.clone();
    let r = runs.clone();
    tokio::task::spawn_blocking(move || {
        s.register(&worker).unwrap();
        // A session grant covers the second call of the same tool.
        let (status, _) =
            http("POST", &format!("{}/HarnessxRun/g1/run/send", s.ingress_url), Some("\"go\"")).unwrap();
        assert_eq!(status, 202);
        let waiting = wait_for(&s, "g1", "c1");
        assert!(waiting.contains("\"kind\":\"approval\""), "{waiting}");
        assert_eq!(r.load(Ordering::SeqCst), 0, "nothing ran before the approval");
        let approve = format!("{}/HarnessxRun/g1/approve", s.ingress_url);
        let (status, body) =
            http("POST", &approve, Some(r#"{"call_id": "c1", "decision": "approve_for_session"}"#)).unwrap();
        assert_eq!(status, 200, "{body}");
        let (status, body) =
            http("GET", &format!("{}/restate/workflow/HarnessxRun/g1/attach", s.ingress_url), None).unwrap();
        assert_eq!((status, body.as_str()), (200, "\"saw: 2 | 3\""));
        assert_eq!(r.load(Ordering::SeqCst), 2);

        // Denials: each call asked on its own, each answered "Permission denied".
        let (status, _) =
            http("POST", &format!("{}/HarnessxRun/d1/run/send", s.ingress_url), Some("\"go\"")).unwrap();
        assert_eq!(status, 202);
        let approve = format!("{}/HarnessxRun/d1/approve", s.ingress_url);
        wait_for(&s, "d1", "c1");
        http("POST", &approve, Some(r#"{"call_id": "c1", "decision": "deny"}"#)).unwrap();
        wait_for(&s, "d1", "c2");
        http("POST", &approve, Some(r#"{"call_id": "c2", "decision": "deny"}"#)).unwrap();
        let (status, body) =
            http("GET", &format!("{}/restate/workflow/HarnessxRun/d1/attach", s.ingress_url), None).unwrap();
        assert_eq!((status, body.as_str()), (200, "\"saw: Permission denied | Permission denied\""));
        assert_eq!(r.load(Ordering::SeqCst), 2, "denied calls never ran");
    })
    .await
    .unwrap();
    let _ = stop_tx.send(());
    let _ = serving.await;
}

/// Approve with edited arguments and deny with a message, sent from outside: the
/// edited call runs once, with the edited arguments, and the model's next request shows
/// them; the refused one never runs and the model reads the person's text. The decisions
/// are the workflow's journal: attaching again replays the same answer, running nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_and_refusals_with_a_message_sent_from_outside() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let server = Arc::new(server);
    let runs = Arc::new(AtomicUsize::new(0));
    let ask = harnessx_core::PermissionManager::new(harnessx_core::PermissionLevel::Ask);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(
        agent_with(runs.clone(), Some(ask)),
        listener,
        async {
            let _ = stop_rx.await;
        },
    ));
    let s = server.clone();
    let r = runs.clone();
    tokio::task::spawn_blocking(move || {
        s.register(&worker).unwrap();
        let (status, _) =
            http("POST", &format!("{}/HarnessxRun/e1/run/send", s.ingress_url), Some("\"go\"")).unwrap();
        assert_eq!(status, 202);
        let approve = format!("{}/HarnessxRun/e1/approve", s.ingress_url);
        wait_for(&s, "e1", "c1");
        let edited = r#"{"call_id": "c1", "decision": {"approve_edited": {"arguments": {"a": 10}}}}"#;
        let (status, body) = http("POST", &approve, Some(edited)).unwrap();
        assert_eq!(status, 200, "{body}");
        wait_for(&s, "e1", "c2");
        let refused = r#"{"call_id": "c2", "decision": {"deny_with_message": {"message": "not twice"}}}"#;
        let (status, body) = http("POST", &approve, Some(refused)).unwrap();
        assert_eq!(status, 200, "{body}");
        let attach = format!("{}/restate/workflow/HarnessxRun/e1/attach", s.ingress_url);
        let (status, body) = http("GET", &attach, None).unwrap();
        let note = r#"[The user changed this call's arguments before it ran; it ran with {\"a\":10}]\n11"#;
        assert_eq!((status, body.as_str()), (200, format!("\"saw: {note} | not twice\"").as_str()));
        assert_eq!(r.load(Ordering::SeqCst), 1, "the edited call ran once, the refused one never");
        let (status, again) = http("GET", &attach, None).unwrap();
        assert_eq!((status, again), (200, body));
        assert_eq!(r.load(Ordering::SeqCst), 1, "replayed, not run again");
    })
    .await
    .unwrap();
    let _ = stop_tx.send(());
    let _ = serving.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_completes_through_restate() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let runs = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(agent(runs.clone()), listener, async {
        let _ = stop_rx.await;
    }));
    let admin = server.admin_url.clone();
    let registered =
        tokio::task::spawn_blocking(move || RestateServer::register_at(&admin, &worker)).await.unwrap();
    registered.unwrap();
    let ingress = server.ingress_url.clone();
    let (status, body) = tokio::task::spawn_blocking(move || {
        http("POST", &format!("{ingress}/HarnessxRun/r1/run"), Some("\"go\""))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, 200, "{body}\n{}", server.log_tail());
    assert_eq!(body, "\"saw: 2 | 3\"");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let _ = stop_tx.send(());
    let _ = serving.await;
}

/// `required` on the cluster resets to `auto` after the model's calls, as `Agent::run`
/// does; without the reset this model would call tools until `max_turns`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_resets_to_auto_after_the_calls_as_in_a_direct_run() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let model = FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.tool_choice.clone());
        let turn = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        Ok(match req.tool_choice {
            ToolChoice::Required => {
                ModelResponse::tool_calls(vec![ToolCall::new(format!("c{turn}"), "add", r#"{"a": 1}"#)])
            }
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    let runs = Arc::new(AtomicUsize::new(0));
    let add = agent(runs.clone()).tools().get_tool("add").unwrap();
    let agent = Arc::new(
        Agent::builder()
            .model(model)
            .tool(add)
            .config(AgentConfig {
                planning: false,
                tool_choice: ToolChoice::Required,
                limits: RunLimits { max_turns: Some(3), ..RunLimits::default() },
                ..AgentConfig::default()
            })
            .build()
            .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(agent, listener, async {
        let _ = stop_rx.await;
    }));
    let admin = server.admin_url.clone();
    tokio::task::spawn_blocking(move || RestateServer::register_at(&admin, &worker)).await.unwrap().unwrap();
    let ingress = server.ingress_url.clone();
    let (status, body) = tokio::task::spawn_blocking(move || {
        http("POST", &format!("{ingress}/HarnessxRun/tc1/run"), Some("\"go\""))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!((status, body.as_str()), (200, "\"saw: 2\""), "{}", server.log_tail());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        (seen.first(), seen.last()),
        (Some(&ToolChoice::Required), Some(&ToolChoice::Auto)),
        "{seen:?}"
    );
    let _ = stop_tx.send(());
    let _ = serving.await;
}

fn logging_tool(
    name: &str,
    ms: u64,
    concurrent: bool,
    log: Arc<std::sync::Mutex<Vec<String>>>,
) -> ToolDefinition {
    let n = name.to_owned();
    ToolDefinition::new(
        name,
        "Logs its start and end.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, _ctx| {
            let (n, log) = (n.clone(), log.clone());
            async move {
                log.lock().unwrap().push(format!("{n} start"));
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                log.lock().unwrap().push(format!("{n} end"));
                Ok(n.into())
            }
        }),
    )
    .with_concurrent(concurrent)
    .with_replay_policy(ReplayPolicy::Safe)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_calls_take_turns_in_call_order_and_results_keep_call_order() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("a", "slow_serial", "{}"),
                ToolCall::new("b", "quick_serial", "{}"),
                ToolCall::new("c", "parallel", "{}"),
                ToolCall::new("d", "missing_tool", "{}"),
            ]),
            _ => ModelResponse::text(tool_contents(req)),
        })
    });
    let agent = Arc::new(
        Agent::builder()
            .model(model)
            .tool(logging_tool("slow_serial", 300, false, log.clone()))
            .tool(logging_tool("quick_serial", 0, false, log.clone()))
            .tool(logging_tool("parallel", 100, true, log.clone()))
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(agent, listener, async {
        let _ = stop_rx.await;
    }));
    let admin = server.admin_url.clone();
    tokio::task::spawn_blocking(move || RestateServer::register_at(&admin, &worker)).await.unwrap().unwrap();
    let ingress = server.ingress_url.clone();
    let (status, body) = tokio::task::spawn_blocking(move || {
        http("POST", &format!("{ingress}/HarnessxRun/s1/run"), Some("\"go\""))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("\"slow_serial | quick_serial | parallel | Unknown tool \\\"missing_tool\\\""),
        "{body}"
    );
    let log = log.lock().unwrap().clone();
    let at = |e: &str| log.iter().position(|l| l == e).unwrap_or_else(|| panic!("{e} missing: {log:?}"));
    assert!(at("slow_serial end") < at("quick_serial start"), "serial calls take turns: {log:?}");
    assert!(at("parallel start") < at("slow_serial end"), "the concurrent one runs alongside: {log:?}");
    let _ = stop_tx.send(());
    let _ = serving.await;
}

/// The requests a scenario's model saw, as JSON lines (system, messages, tools, tool
/// choice): byte-identical on every backend when the loop is one.
type Seen = Arc<std::sync::Mutex<Vec<String>>>;

/// One scripted scenario for every backend: planning, concurrent and serial calls, an
/// ASK approved by a callback, a `manual` call, and a tool registered mid-run.
fn scenario_agent(seen: Seen) -> Arc<Agent> {
    let model = FunctionModel::new(move |req| {
        let tools: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        let line = json!({"system": req.system, "messages": req.messages, "tools": tools, "tool_choice": req.tool_choice.to_string()});
        seen.lock().unwrap().push(line.to_string());
        let turn = 1 + req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        Ok(match turn {
            1 => ModelResponse::tool_calls(vec![
                ToolCall::new(
                    "c1",
                    "write_todos",
                    r#"{"todos": [{"content": "look", "status": "in_progress"}]}"#,
                ),
                ToolCall::new("c2", "read", r#"{"n": 1}"#),
                ToolCall::new("c3", "write", r#"{"n": 2}"#),
                ToolCall::new("c4", "read", r#"{"n": 3}"#),
                ToolCall::new("c5", "write", r#"{"n": 4}"#),
            ]),
            2 => ModelResponse::tool_calls(vec![
                ToolCall::new("c6", "publish", r#"{"n": 5}"#),
                ToolCall::new("c7", "learn", "{}"),
            ]),
            3 => ModelResponse::tool_calls(vec![ToolCall::new("c8", "late", r#"{"n": 6}"#)]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    let echo = |name: &str, concurrent: bool, policy: ReplayPolicy| {
        let n = name.to_owned();
        ToolDefinition::new(
            name,
            "Echo n.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            ToolHandler::from_async(move |args, _ctx| {
                let n = n.clone();
                async move { Ok(format!("{n} {}", args["n"]).into()) }
            }),
        )
        .with_concurrent(concurrent)
        .with_replay_policy(policy)
    };
    let ask = harnessx_core::PermissionManager::default()
        .with_approval_fn(|_| async { harnessx_core::ApprovalDecision::Approve });
    let agent = Agent::builder()
        .model(model)
        .tool(echo("read", true, ReplayPolicy::Safe))
        .tool(echo("write", false, ReplayPolicy::Idempotent))
        .tool(
            echo("publish", false, ReplayPolicy::Manual).with_permission(harnessx_core::PermissionLevel::Ask),
        )
        .permissions(ask)
        .build()
        .unwrap();
    // `learn` registers `late`: the tool list changes between turns 2 and 3.
    let registry = agent.tools().downgrade();
    let late = echo("late", true, ReplayPolicy::Safe);
    agent
        .tools()
        .register_tool(
            ToolDefinition::new(
                "learn",
                "Learn a new tool.",
                json!({"type": "object", "properties": {}}),
                ToolHandler::from_async(move |_args, _ctx| {
                    let (registry, late) = (registry.clone(), late.clone());
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
            .with_concurrent(false)
            .with_replay_policy(ReplayPolicy::Safe),
        )
        .unwrap();
    Arc::new(agent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_scenario_runs_the_same_on_every_backend() {
    // Direct.
    let direct_seen = Seen::default();
    let direct = scenario_agent(direct_seen.clone());
    let mut stream = std::pin::pin!(direct.run_stream("go"));
    let mut direct_events = Vec::new();
    while let Some(e) = futures_util::StreamExt::next(&mut stream).await {
        direct_events.push(e);
    }
    let Some(harnessx_agent::AgentEvent::RunEnd { output: answer, .. }) = direct_events.last().cloned()
    else {
        panic!("{direct_events:?}")
    };
    assert!(answer.starts_with("saw: Todo list updated: 1 items (0 completed, 1 in progress, 0 pending). | read 1 | write 2 | read 3 | write 4"), "{answer}");
    assert!(answer.contains("| publish 5 | learned") && answer.contains("| late 6"), "{answer}");

    // SQLite.
    let dir = tempfile::tempdir().unwrap();
    let sqlite_seen = Seen::default();
    let runtime =
        harnessx_durable::AgentRuntime::sqlite(scenario_agent(sqlite_seen.clone()), dir.path().join("j.db"))
            .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let state = runtime.start_with_events("s1", "go", tx).await.unwrap();
    assert_eq!(state.output, answer);
    let mut sqlite_events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        sqlite_events.push(e);
    }
    assert_eq!(sqlite_events, direct_events, "the events of a durable run are a direct run's");
    assert_eq!(*sqlite_seen.lock().unwrap(), *direct_seen.lock().unwrap(), "the requests differ (SQLite)");
    assert_eq!(direct_seen.lock().unwrap().len(), 4);
    let requests = direct_seen.lock().unwrap().clone();
    assert!(requests[1].contains("<todo_list>"), "the list is attached: {}", requests[1]);
    assert!(
        !requests[1].contains("\"late\"") && requests[2].contains("\"late\""),
        "the tool list is refreshed"
    );

    // Restate.
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let restate_seen = Seen::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(
        scenario_agent(restate_seen.clone()),
        listener,
        async {
            let _ = stop_rx.await;
        },
    ));
    tokio::task::spawn_blocking(move || {
        server.register(&worker).unwrap();
        let (status, body) =
            http("POST", &format!("{}/HarnessxRun/x1/run", server.ingress_url), Some("\"go\"")).unwrap();
        assert_eq!((status, body), (200, serde_json::to_string(&answer).unwrap()), "{}", server.log_tail());
    })
    .await
    .unwrap();
    let restate = restate_seen.lock().unwrap().clone();
    assert_eq!(restate, requests, "the requests differ (Restate)");
    let _ = stop_tx.send(());
    let _ = serving.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_is_durable_runs_as_a_journal_is() {
    // The one trait: started with its own limits and price, listed, answered, resumed.
    use harnessx_agent::RunStatus;
    use harnessx_agent::budget::{Limit, ModelPrice, RunLimits};
    use harnessx_durable::restate::RestateRuntime;
    use harnessx_durable::{DurableRuns, ResumeOptions, StartOptions};

    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let server = Arc::new(server);
    let runs = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(agent(runs.clone()), listener, async {
        let _ = stop_rx.await;
    }));
    let s = server.clone();
    tokio::task::spawn_blocking(move || s.register(&worker).unwrap()).await.unwrap();

    let cluster = RestateRuntime::new(&server.ingress_url).unwrap().with_admin(&server.admin_url).unwrap();
    let runs_of: &dyn DurableRuns = &cluster;
    let options = StartOptions {
        limits: Some(RunLimits { max_tool_calls: Some(1), ..RunLimits::default() }),
        price: Some(ModelPrice::new(1.0, 2.0)),
        ..StartOptions::default()
    };
    let stopped = runs_of.start("t1", "go", options).await.unwrap();
    assert_eq!(
        (stopped.status, stopped.limit),
        (RunStatus::LimitReached, Some(Limit::ToolCalls)),
        "{stopped:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the run's own limit of one call held");
    let listed = runs_of.list().await.unwrap();
    assert!(listed.iter().any(|r| r.run_id.as_deref() == Some("t1")), "{listed:?}");
    // A call the run does not wait on is refused, naming where it stands.
    let refused = runs_of.answer("t1", "c9", "it was sent").await.unwrap_err();
    assert!(refused.to_string().contains("is not waiting for an answer of call \"c9\""), "{refused}");
    // A price cannot change on a cluster; higher limits can.
    let price = ResumeOptions { price: Some(ModelPrice::new(3.0, 4.0)), ..ResumeOptions::default() };
    assert!(runs_of.resume("t1", price).await.is_err());
    let more = ResumeOptions {
        limits: RunLimits { max_tool_calls: Some(5), ..RunLimits::default() },
        ..ResumeOptions::default()
    };
    let done = runs_of.resume("t1", more).await.unwrap();
    assert_eq!((done.status, done.output.as_str()), (RunStatus::Completed, "saw: 2 | 3"), "{done:?}");
    assert_eq!(runs_of.status("t1").await.unwrap().status, RunStatus::Completed);

    // Without the admin API there is no list to read.
    let ingress_only = RestateRuntime::new(&server.ingress_url).unwrap();
    let error = DurableRuns::list(&ingress_only).await.unwrap_err();
    assert!(error.to_string().contains("needs its admin API"), "{error}");
    let _ = stop_tx.send(());
    serving.await.unwrap();
}
