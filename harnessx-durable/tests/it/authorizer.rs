//! An [`Authorizer`] given to an agent decides its durable runs' calls, on SQLite and on
//! Restate, as on a direct run. (Regression: a run decided with the manager's rules
//! alone; an authorizer given to it was never asked.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{
    AuthRequest, Authorization, Authorizer, Decision, DenyReason, ReplayPolicy, ToolCall, ToolDefinition,
    ToolHandler,
};
use harnessx_durable::{AgentRuntime, RunStatus, SqliteJournal};
use serde_json::json;

/// Refuses `add` when `a` is 2, allows the rest, and counts what it is asked.
#[derive(Default)]
struct Policy {
    asked: AtomicUsize,
}

impl Authorizer for Policy {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Decision::Now(if request.arguments["a"] == 2 {
            Authorization::Deny { reason: DenyReason::Denied, message: "two is not allowed".into() }
        } else {
            Authorization::Allow
        })
    }
}

/// Calls `add` with 1 and 2, then answers with what it saw.
fn agent(policy: Arc<Policy>, runs: Arc<AtomicUsize>) -> Arc<Agent> {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "add", r#"{"a": 1}"#),
                ToolCall::new("c2", "add", r#"{"a": 2}"#),
            ]),
            _ => {
                let seen: Vec<String> = req
                    .messages
                    .iter()
                    .filter_map(|m| match m {
                        Message::Tool { content, .. } => Some(content.clone()),
                        _ => None,
                    })
                    .collect();
                ModelResponse::text(format!("saw: {}", seen.join(" | ")))
            }
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
    let agent = Agent::builder()
        .model(model)
        .tool(add)
        .authorizer_arc(policy)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    Arc::new(agent)
}

#[tokio::test]
async fn an_agent_s_authorizer_decides_a_sqlite_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let (policy, runs) = (Arc::new(Policy::default()), Arc::new(AtomicUsize::new(0)));
    let runtime =
        AgentRuntime::new(agent(policy.clone(), runs.clone()), Arc::new(SqliteJournal::open(&path).unwrap()));
    let result = runtime.start("r", "go").await.unwrap();
    assert_eq!(result.output, "saw: 2 | two is not allowed");
    assert_eq!((policy.asked.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)), (2, 1));
    assert_eq!(runtime.status("r").unwrap().run.status, RunStatus::Completed);
}

#[cfg(feature = "restate")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_s_authorizer_decides_a_restate_run() {
    use harnessx_test_support::restate::{RestateServer, http};
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let (policy, runs) = (Arc::new(Policy::default()), Arc::new(AtomicUsize::new(0)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(
        agent(policy.clone(), runs.clone()),
        listener,
        async {
            let _ = stop_rx.await;
        },
    ));
    let body = tokio::task::spawn_blocking(move || {
        server.register(&worker).unwrap();
        let (status, _) =
            http("POST", &format!("{}/HarnessxRun/a1/run/send", server.ingress_url), Some("\"go\"")).unwrap();
        assert_eq!(status, 202);
        let attach = format!("{}/restate/workflow/HarnessxRun/a1/attach", server.ingress_url);
        let (status, body) = http("GET", &attach, None).unwrap();
        assert_eq!(status, 200, "{body}");
        body
    })
    .await
    .unwrap();
    assert_eq!(body, "\"saw: 2 | two is not allowed\"");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the refused call never ran");
    assert!(policy.asked.load(Ordering::SeqCst) >= 2, "asked for each call");
    let _ = stop_tx.send(());
    let _ = serving.await;
}
