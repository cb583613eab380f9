//! Hooks on durable runs on a real `restate-server` (feature `restate`): tool hooks
//! decide, rewrite and redact and are asked once; run hooks are journaled, and a replay
//! after the worker dies asks neither again.
#![cfg(feature = "restate")]

use crate::common;
use common::*;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::restate_runs::agent;
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_test_support::restate::{RestateServer, http};
use serde_json::json;

/// Refuses `a = 1`, moves `a = 2` to `a = 10`, spells results out; counts its asks.
struct Steer(Arc<AtomicUsize>);

impl harnessx_core::hooks::ToolHook for Steer {
    fn name(&self) -> &str {
        "steer"
    }
    fn pre_tool_use<'a>(
        &'a self,
        call: harnessx_core::hooks::PreToolUse<'a>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<harnessx_core::hooks::PreDecision, harnessx_core::hooks::HookError>,
    > {
        use harnessx_core::hooks::PreDecision;
        self.0.fetch_add(1, Ordering::SeqCst);
        let decision = match call.arguments["a"].as_i64() {
            Some(1) => PreDecision::Deny { message: "no ones".into() },
            Some(2) => PreDecision::Rewrite { arguments: json!({"a": 10}) },
            _ => PreDecision::Continue,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn post_tool_use<'a>(
        &'a self,
        call: harnessx_core::hooks::PostToolUse<'a>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<harnessx_core::hooks::PostDecision, harnessx_core::hooks::HookError>,
    > {
        let result = harnessx_core::ToolOutput::text(call.content.replace("11", "eleven"));
        Box::pin(std::future::ready(Ok(harnessx_core::hooks::PostDecision::Replace { result })))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_decide_rewrite_and_redact_a_run_on_restate_and_are_asked_once() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let runs = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(AtomicUsize::new(0));
    let plain = agent(runs.clone());
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "add", r#"{"a": 1}"#),
                ToolCall::new("c2", "add", r#"{"a": 2}"#),
            ]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    let steered = Arc::new(
        Agent::builder()
            .model(model)
            .tool(plain.tools().get_tool("add").unwrap())
            .hook(Steer(asked.clone()))
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let worker = format!("http://{}", listener.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(harnessx_durable::restate::serve(steered, listener, async {
        let _ = stop_rx.await;
    }));
    let admin = server.admin_url.clone();
    tokio::task::spawn_blocking(move || RestateServer::register_at(&admin, &worker)).await.unwrap().unwrap();
    let ingress = server.ingress_url.clone();
    let (status, body) = tokio::task::spawn_blocking(move || {
        http("POST", &format!("{ingress}/HarnessxRun/h1/run"), Some("\"go\""))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status, 200, "{body}\n{}", server.log_tail());
    assert_eq!(body, "\"saw: no ones | eleven\"");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the rewritten call ran");
    assert_eq!(asked.load(Ordering::SeqCst), 2, "each call's hooks asked once");
    let _ = stop_tx.send(());
    let _ = serving.await;
}

/// Blocks the prompt `stop`, adds context to any other; counts its asks of the prompt
/// and response points.
#[derive(Clone, Default)]
struct Gate {
    prompts: Arc<AtomicUsize>,
    responses: Arc<AtomicUsize>,
}

impl harnessx_core::hooks::ToolHook for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn user_prompt<'a>(
        &'a self,
        p: harnessx_core::hooks::UserPrompt<'a>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<harnessx_core::hooks::PromptDecision, harnessx_core::hooks::HookError>,
    > {
        use harnessx_core::hooks::PromptDecision;
        let n = self.prompts.fetch_add(1, Ordering::SeqCst) + 1;
        let decision = match p.prompt {
            "stop" => PromptDecision::Block { message: "not today".into() },
            _ => PromptDecision::AddContext { text: format!("asked {n}") },
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn model_response<'a>(
        &'a self,
        _: harnessx_core::hooks::ModelTurn<'a>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<harnessx_core::hooks::ResponseDecision, harnessx_core::hooks::HookError>,
    > {
        self.responses.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(Ok(harnessx_core::hooks::ResponseDecision::Continue)))
    }
}

/// A worker on its own runtime at `address` (port 0: any), so the test can kill it (its
/// connections die with it) and start another where it was; with the address it took.
async fn worker_on(
    agent: Arc<Agent>,
    address: std::net::SocketAddr,
) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    runtime.spawn(async move {
        // The address of a worker just killed is free again a moment later.
        let listener = loop {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.set_reuseaddr(true).unwrap();
            match socket.bind(address).and_then(|()| socket.listen(64)) {
                Ok(listener) => break listener,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        };
        let _ = bound_tx.send(listener.local_addr().unwrap());
        harnessx_durable::restate::serve(agent, listener, std::future::pending()).await;
    });
    let address = tokio::time::timeout(std::time::Duration::from_secs(30), bound_rx).await.unwrap().unwrap();
    (runtime, address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_hooks_on_restate_are_journaled_a_replay_after_the_worker_dies_asks_neither_again() {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let gate = Gate::default();
    // The `add` tool hangs the first time it runs (in the worker that dies).
    let hung = Arc::new(AtomicUsize::new(0));
    let h = hung.clone();
    let add = ToolDefinition::new(
        "add",
        "Add one.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        ToolHandler::from_async(move |args, _ctx| {
            let h = h.clone();
            async move {
                if h.fetch_add(1, Ordering::SeqCst) == 0 {
                    std::future::pending::<()>().await;
                }
                Ok(format!("{}", args["a"].as_i64().unwrap() + 1).into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    let model = FunctionModel::new(|req| {
        let prompt = req.messages.iter().find_map(|m| match m {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        });
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => {
                ModelResponse::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a": 1}"#)])
            }
            _ => ModelResponse::text(format!("{} saw {}", prompt.unwrap_or_default(), tool_contents(req))),
        })
    });
    let agent = Arc::new(
        Agent::builder()
            .model(model)
            .tool(add)
            .hook(gate.clone())
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap(),
    );
    let (first, address) = worker_on(agent.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let worker = format!("http://{address}");
    let admin = server.admin_url.clone();
    tokio::task::spawn_blocking(move || RestateServer::register_at(&admin, &worker)).await.unwrap().unwrap();
    let cluster = harnessx_durable::restate::RestateRuntime::new(&server.ingress_url).unwrap();
    cluster.submit("g1", "go").await.unwrap();
    // The hooks decided and the call hangs: the worker dies.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while hung.load(Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline, "the call never ran:\n{}", server.log_tail());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!((gate.prompts.load(Ordering::SeqCst), gate.responses.load(Ordering::SeqCst)), (1, 1));
    first.shutdown_background();
    // Another worker at the same address: Restate replays the run there.
    let (second, _) = worker_on(agent.clone(), address).await;
    let done = cluster.wait("g1", |_| {}).await.unwrap();
    use harnessx_agent::RunStatus;
    assert_eq!(
        (done.status, done.output.as_str()),
        (RunStatus::Completed, "go\n\nasked 1 saw 2"),
        "{done:?}\n{}",
        server.log_tail()
    );
    assert_eq!(gate.prompts.load(Ordering::SeqCst), 1, "the prompt's hooks were not asked again");
    assert_eq!(gate.responses.load(Ordering::SeqCst), 2, "once per response, none asked again");

    // A blocked prompt: the run ends blocked, and the client says by which hook.
    cluster.submit("g2", "stop").await.unwrap();
    let blocked = cluster.wait("g2", |_| {}).await.unwrap();
    assert_eq!(blocked.status, RunStatus::Blocked, "{blocked:?}");
    let by = blocked.blocked.as_ref().map(|b| (b.hook.as_str(), b.message.as_str()));
    assert_eq!(by, Some(("gate", "not today")));
    assert_eq!(gate.responses.load(Ordering::SeqCst), 2, "no model response to judge");
    second.shutdown_background();
}
