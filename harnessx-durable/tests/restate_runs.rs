//! Durable runs on a real `restate-server` (feature `restate`; skipped, printing why,
//! only when `npm` is missing).
#![cfg(feature = "restate")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_test_support::restate::{RestateServer, http};
use serde_json::json;

fn agent(runs: Arc<AtomicUsize>) -> Arc<Agent> {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "add", r#"{"a": 1}"#),
                ToolCall::new("c2", "add", r#"{"a": 2}"#),
            ]),
            _ => {
                let seen: Vec<&str> = req
                    .messages
                    .iter()
                    .filter_map(|m| match m {
                        Message::Tool { content, .. } => Some(content.as_str()),
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
    Arc::new(
        Agent::builder()
            .model(model)
            .tool(add)
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap(),
    )
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
