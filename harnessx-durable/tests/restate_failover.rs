//! A worker killed with SIGKILL in the middle of a tool batch: the run finishes on the
//! other worker; the `manual` call that was running is not run again, the `safe` one may
//! be. Both workers are this test binary run again; Restate reaches them through one
//! deployment URI, a loopback proxy that picks the first worker still alive (an
//! invocation stays pinned to its deployment, so failing over is the proxy's job).
#![cfg(feature = "restate")]

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_test_support::restate::{RestateServer, http};
use serde_json::json;

const ROLE: &str = "HX_RESTATE_WORKER";
const DIR: &str = "HX_RESTATE_DIR";

fn tool(dir: &Path, worker: &str, name: &str, policy: ReplayPolicy) -> ToolDefinition {
    let (dir, worker, n) = (dir.to_path_buf(), worker.to_owned(), name.to_owned());
    ToolDefinition::new(
        name,
        "A tool with an effect outside the process.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, _ctx| {
            let (dir, worker, n) = (dir.clone(), worker.clone(), n.clone());
            async move {
                log(&dir, &format!("{n}.log"), &worker);
                if n == "send" && worker == "A" {
                    // Worker A is killed while this runs.
                    std::future::pending::<()>().await;
                }
                Ok(format!("{n} done").into())
            }
        }),
    )
    .with_replay_policy(policy)
}

fn agent(dir: &Path, worker: &str) -> Arc<Agent> {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "read", "{}"),
                ToolCall::new("c2", "send", "{}"),
            ]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    Arc::new(
        Agent::builder()
            .model(model)
            .tool(tool(dir, worker, "read", ReplayPolicy::Safe))
            .tool(tool(dir, worker, "send", ReplayPolicy::Manual))
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()
            .unwrap(),
    )
}

/// The worker's side; a no-op in an ordinary test run. Serves until killed, after
/// writing its port to `DIR/port-NAME`.
#[test]
fn worker() {
    let Ok(name) = std::env::var(ROLE) else { return };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        std::fs::write(dir.join(format!("port-{name}.tmp")), port.to_string()).unwrap();
        std::fs::rename(dir.join(format!("port-{name}.tmp")), dir.join(format!("port-{name}"))).unwrap();
        harnessx_durable::restate::serve(agent(&dir, &name), listener, std::future::pending()).await;
    });
}

/// A worker process, killed when dropped (a failing test leaves none behind).
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_worker(dir: &Path, name: &str) -> (Worker, u16) {
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["worker", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, name)
        .env(DIR, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let child = Worker(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(port) = std::fs::read_to_string(dir.join(format!("port-{name}"))) {
            return (child, port.trim().parse().unwrap());
        }
        assert!(Instant::now() < deadline, "worker {name} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback TCP proxy: each connection goes to the first backend that accepts it.
fn proxy(backends: Vec<u16>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for inbound in listener.incoming() {
            let Ok(inbound) = inbound else { continue };
            let Some(outbound) =
                backends.iter().find_map(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).ok())
            else {
                continue;
            };
            for (mut from, mut to) in
                [(inbound.try_clone().unwrap(), outbound.try_clone().unwrap()), (outbound, inbound)]
            {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    port
}

#[test]
fn a_worker_killed_mid_batch_is_replaced_and_the_manual_call_is_not_run_again() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, port_a) = start_worker(d, "A");
    let (b, port_b) = start_worker(d, "B");
    let front = proxy(vec![port_a, port_b]);
    server.register(&format!("http://127.0.0.1:{front}")).unwrap();

    let (status, body) =
        http("POST", &format!("{}/HarnessxRun/r1/run/send", server.ingress_url), Some("\"go\"")).unwrap();
    assert_eq!(status, 202, "{body}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(d, "send.log").is_empty() {
        assert!(Instant::now() < deadline, "send never started:\n{}", server.log_tail());
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(a); // SIGKILL, mid-call

    // Worker B takes over and the run stops, durably, to ask whether send took effect.
    let waiting_url = format!("{}/HarnessxRun/r1/waiting", server.ingress_url);
    let deadline = Instant::now() + Duration::from_secs(60);
    let waiting = loop {
        let (status, body) = http("POST", &waiting_url, None).unwrap();
        assert_eq!(status, 200, "{body}");
        if body.contains("\"call_id\":\"c2\"") {
            break body;
        }
        assert!(Instant::now() < deadline, "the run never asked:\n{}", server.log_tail());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(waiting.contains("\"kind\":\"outcome\""), "{waiting}");
    let (status, body) =
        http("GET", &format!("{}/restate/workflow/HarnessxRun/r1/output", server.ingress_url), None).unwrap();
    assert_ne!(status, 200, "not finished while it waits: {body}");
    assert_eq!(lines(d, "send.log"), ["A"], "the manual call ran once, on the killed worker");

    // Another process (here: this one, over the ingress) answers; the run finishes.
    let (status, body) = http(
        "POST",
        &format!("{}/HarnessxRun/r1/answer", server.ingress_url),
        Some(r#"{"call_id": "c2", "text": "the message went out"}"#),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        http("GET", &format!("{}/restate/workflow/HarnessxRun/r1/attach", server.ingress_url), None).unwrap();
    assert_eq!(status, 200, "{body}\n{}", server.log_tail());
    assert_eq!(body, "\"saw: read done | the message went out\"");
    assert_eq!(lines(d, "send.log"), ["A"], "never run again");
    let reads = lines(d, "read.log");
    assert!(!reads.is_empty() && reads.len() <= 2, "safe: at most once more: {reads:?}");
    let (_, waiting) = http("POST", &waiting_url, None).unwrap();
    assert_eq!(waiting, "[]");
    drop(b);
}
