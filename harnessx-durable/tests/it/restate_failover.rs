//! Workers killed with SIGKILL at each point of a run on a real restate-server: the run
//! finishes on another worker process, with the SQLite backend's recovery rules (the
//! crash matrix of `crash_matrix.rs`, where it applies): a model response or a tool
//! result that was journaled is never asked for or run again; a call that started with
//! no result is run again if `safe`, again with the same idempotency key if
//! `idempotent`, and for `manual` the run waits for an answer instead. A worker whose
//! tools differ from the run's is refused, and the run waits, losing nothing, for one
//! that has them.
//!
//! Every worker is this test binary run again. Restate reaches them through one
//! deployment URI, a loopback proxy that sends each connection to the first worker
//! still alive (an invocation stays pinned to its deployment, so failing over is the
//! job of what stands behind its URI, as a load balancer would).
#![cfg(feature = "restate")]

use crate::common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, NeedsInputKind};
use harnessx_core::{ReplayPolicy, ToolCall, ToolDefinition, ToolHandler};
use harnessx_durable::RunStatus;
use harnessx_durable::restate::{RestateRuntime, RunState};
use harnessx_test_support::restate::RestateServer;
use serde_json::json;

/// The worker's name (set in a worker process only).
const ROLE: &str = "HX_RESTATE_WORKER";
/// The test's folder: logs, ports.
const DIR: &str = "HX_RESTATE_DIR";
/// Where worker `A` blocks forever, to be killed there: `model1`, `model2` (the first
/// or second model request), or a tool's name (in its body).
const HOLD: &str = "HX_RESTATE_HOLD";
/// `other`: the worker has other tools than the run.
const TOOLS: &str = "HX_RESTATE_TOOLS";
/// Set: every call asks (the workers have no approver, so the run waits for `approve`).
const ASK: &str = "HX_RESTATE_ASK";

/// Blocks forever when this is worker A and `point` is where it should die.
async fn hold(worker: &str, point: &str) {
    if worker == "A" && std::env::var(HOLD).is_ok_and(|h| h == point) {
        std::future::pending::<()>().await;
    }
}

fn tool(dir: &Path, worker: &str, name: &str, policy: ReplayPolicy) -> ToolDefinition {
    let (dir, worker, n) = (dir.to_path_buf(), worker.to_owned(), name.to_owned());
    ToolDefinition::new(
        name,
        "A tool with an effect outside the process.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, ctx| {
            let (dir, worker, n) = (dir.clone(), worker.clone(), n.clone());
            async move {
                // Who ran it, and with which idempotency key.
                let key = ctx.idempotency_key().unwrap_or("-").to_owned();
                log(&dir, &format!("{n}.log"), &format!("{worker} {key}"));
                hold(&worker, &n).await;
                Ok(format!("{n} done").into())
            }
        }),
    )
    .with_replay_policy(policy)
}

fn agent(dir: &Path, worker: &str) -> Arc<Agent> {
    let (d, w) = (dir.to_path_buf(), worker.to_owned());
    let model = FunctionModel::new(move |req| {
        let turn = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count() + 1;
        log(&d, "model.log", &format!("{w} {turn}"));
        Ok(match turn {
            1 => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "read", "{}"),
                ToolCall::new("c2", "send", "{}"),
                ToolCall::new("c3", "put", "{}"),
            ]),
            _ => ModelResponse::text(format!("saw: {}", tool_contents(req))),
        })
    });
    // FunctionModel answers at once; `HoldingModel` holds where worker A is to die.
    let model = HoldingModel { inner: model, worker: worker.to_owned() };
    let mut builder = Agent::builder()
        .model(model)
        .tool(tool(dir, worker, "read", ReplayPolicy::Safe))
        .config(AgentConfig { planning: false, ..AgentConfig::default() });
    if std::env::var(TOOLS).as_deref() != Ok("other") {
        builder = builder.tool(tool(dir, worker, "send", ReplayPolicy::Manual)).tool(tool(
            dir,
            worker,
            "put",
            ReplayPolicy::Idempotent,
        ));
    }
    if std::env::var(ASK).is_ok() {
        builder =
            builder.permissions(harnessx_core::PermissionManager::new(harnessx_core::PermissionLevel::Ask));
    }
    Arc::new(builder.build().unwrap())
}

/// A model that blocks forever on worker A at the request named by [`HOLD`].
struct HoldingModel {
    inner: FunctionModel,
    worker: String,
}

impl harnessx_agent::model::Model for HoldingModel {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn stream<'a>(
        &'a self,
        request: &'a harnessx_agent::model::ModelRequest,
    ) -> futures_util::stream::BoxStream<
        'a,
        Result<harnessx_agent::model::ModelEvent, harnessx_agent::model::ModelError>,
    > {
        use futures_util::StreamExt;
        let turn = request.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count() + 1;
        let answer = self.inner.stream(request); // logs the request
        let point = format!("model{turn}");
        futures_util::stream::once(async move { hold(&self.worker, &point).await })
            .filter_map(|()| async { None })
            .chain(answer)
            .boxed()
    }
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

/// A worker process, killed (SIGKILL) when dropped: a failing test leaves none behind.
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts worker `name` with `env` and puts it last in the proxy's list.
fn start_worker(dir: &Path, front: &Proxy, name: &str, env: &[(&str, &str)]) -> Worker {
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["restate_failover::worker", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, name)
        .env(DIR, dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let child = Worker(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(port) = std::fs::read_to_string(dir.join(format!("port-{name}"))) {
            front.backends.lock().unwrap().push(port.trim().parse().unwrap());
            return child;
        }
        assert!(Instant::now() < deadline, "worker {name} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback TCP proxy: each connection goes to the first backend that accepts it.
struct Proxy {
    port: u16,
    backends: Arc<Mutex<Vec<u16>>>,
}

fn proxy() -> Proxy {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let backends: Arc<Mutex<Vec<u16>>> = Arc::default();
    let list = backends.clone();
    std::thread::spawn(move || {
        for inbound in listener.incoming() {
            let Ok(inbound) = inbound else { continue };
            let ports = list.lock().unwrap().clone();
            let Some(outbound) =
                ports.iter().find_map(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).ok())
            else {
                continue;
            };
            for (mut from, mut to) in
                [(inbound.try_clone().unwrap(), outbound.try_clone().unwrap()), (outbound, inbound)]
            {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    // One side is gone (a killed worker): close the connection both ways,
                    // so Restate drops it from its pool instead of writing into it.
                    let _ = to.shutdown(std::net::Shutdown::Both);
                    let _ = from.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    Proxy { port, backends }
}

/// A server, a proxy registered as the deployment, and a client.
struct Cluster {
    server: RestateServer,
    front: Proxy,
    client: RestateRuntime,
    runtime: tokio::runtime::Runtime,
}

impl Cluster {
    fn start() -> Option<Self> {
        let server = RestateServer::start()?;
        let front = proxy();
        let client = RestateRuntime::new(&server.ingress_url).unwrap().with_admin(&server.admin_url).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        Some(Self { server, front, client, runtime })
    }

    fn register(&self) {
        self.server.register(&format!("http://127.0.0.1:{}", self.front.port)).unwrap();
    }

    fn status(&self, run: &str) -> RunState {
        self.runtime.block_on(self.client.status(run)).unwrap()
    }

    /// Polls until `done(status)`, for at most a minute.
    fn until(&self, run: &str, what: &str, done: impl Fn(&RunState) -> bool) -> RunState {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = self.status(run);
            if done(&state) {
                return state;
            }
            assert!(
                Instant::now() < deadline,
                "{what} never happened: {state:?}\n{}",
                self.server.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn finished(&self, run: &str) -> RunState {
        self.runtime.block_on(self.client.resume(run)).unwrap()
    }
}

/// Waits until `dir/name` has `count` lines.
fn until_logged(cluster: &Cluster, dir: &Path, name: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(dir, name).len() < count {
        assert!(Instant::now() < deadline, "nothing in {name}:\n{}", cluster.server.log_tail());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run killed mid-way, and where it ended up.
struct Killed {
    cluster: Cluster,
    dir: tempfile::TempDir,
    state: RunState,
    _b: Worker,
}

/// Workers A (holding at `point`) and B; the run `r1` starts; A is killed once `log`
/// has `count` lines; the run then goes on on B. Returns what it then reports.
fn killed_at(point: &str, log: &str, count: usize) -> Option<Killed> {
    if std::env::var(ROLE).is_ok() {
        return None;
    }
    let cluster = Cluster::start()?;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = start_worker(d, &cluster.front, "A", &[(HOLD, point)]);
    let b = start_worker(d, &cluster.front, "B", &[]);
    cluster.register();
    cluster.runtime.block_on(cluster.client.submit("r1", "go")).unwrap();
    until_logged(&cluster, d, log, count);
    // Held in a tool: the batch's other calls run alongside it on A, and must have
    // answered before the kill (else a `manual` one is rightly left "outcome unknown"):
    // wait for their lines, not for a fixed time, which a loaded machine outlasts.
    if BATCH.contains(&point) {
        for other in BATCH.into_iter().filter(|t| *t != point) {
            until_logged(&cluster, d, &format!("{other}.log"), 1);
        }
    }
    // Let the step that logged settle into its hold (and the others' results reach
    // Restate).
    std::thread::sleep(Duration::from_millis(300));
    drop(a); // SIGKILL, mid-step
    let state = cluster.finished("r1");
    Some(Killed { cluster, dir, state, _b: b })
}

fn model_requests(dir: &Path) -> Vec<String> {
    lines(dir, "model.log")
}

/// The workers that ran `tool`, in order.
fn ran(dir: &Path, tool: &str) -> Vec<String> {
    lines(dir, &format!("{tool}.log")).iter().map(|l| l.split(' ').next().unwrap().to_owned()).collect()
}

const ALL_DONE: &str = "saw: read done | send done | put done";

/// The tools the model calls together in its first turn.
const BATCH: [&str; 3] = ["read", "send", "put"];

#[test]
fn killed_during_the_first_model_request_the_model_is_asked_again_and_no_tool_runs_twice() {
    let Some(Killed { dir, state, _b, .. }) = killed_at("model1", "model.log", 1) else { return };
    let d = dir.path();
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    assert_eq!(state.outcome(), Some(ALL_DONE));
    // Its response was never journaled: B asks again.
    assert_eq!(model_requests(d), ["A 1", "B 1", "B 2"]);
    for tool in BATCH {
        assert_eq!(ran(d, tool), ["B"], "{tool}");
    }
}

#[test]
fn killed_during_the_second_model_request_no_journaled_step_is_repeated() {
    let Some(Killed { dir, state, _b, .. }) = killed_at("model2", "model.log", 2) else { return };
    let d = dir.path();
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    assert_eq!(state.outcome(), Some(ALL_DONE));
    // Turn 1's response and every result were journaled: only turn 2 is asked again.
    let requests = model_requests(d);
    assert_eq!(requests.first().map(String::as_str), Some("A 1"));
    assert_eq!(requests.last().map(String::as_str), Some("B 2"));
    assert!(!requests.contains(&"B 1".to_owned()), "{requests:?}");
    for tool in BATCH {
        assert_eq!(ran(d, tool), ["A"], "{tool}");
    }
}

#[test]
fn a_safe_call_interrupted_is_run_again() {
    let Some(Killed { dir, state, _b, .. }) = killed_at("read", "read.log", 1) else { return };
    let d = dir.path();
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    assert_eq!(state.outcome(), Some(ALL_DONE));
    assert_eq!(ran(d, "read"), ["A", "B"]);
    // The other calls of the batch (concurrent with it) ran once, wherever they ran.
    assert_eq!(ran(d, "send").len(), 1);
    assert_eq!(ran(d, "put").len(), 1);
}

#[test]
fn an_idempotent_call_interrupted_is_run_again_with_the_same_key() {
    let Some(Killed { dir, state, _b, .. }) = killed_at("put", "put.log", 1) else { return };
    let d = dir.path();
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    let puts = lines(d, "put.log");
    assert_eq!(puts.len(), 2, "{puts:?}");
    let keys: Vec<&str> = puts.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(keys[0], keys[1], "the same idempotency key on both workers: {puts:?}");
    assert_eq!(keys[0], "r1/c3");
    assert_eq!(ran(d, "send").len(), 1);
}

#[test]
fn a_manual_call_interrupted_is_not_run_again_and_the_run_asks_whether_it_took_effect() {
    let Some(Killed { cluster, dir, state, _b }) = killed_at("send", "send.log", 1) else { return };
    let d = dir.path();
    // Worker B takes over and the run stops, durably, to ask whether send took effect.
    assert_eq!(state.status, RunStatus::NeedsInput, "{state:?}");
    assert_eq!(state.needs_input.len(), 1, "{state:?}");
    let asked = &state.needs_input[0];
    assert_eq!(
        (asked.kind, asked.call_id.as_str(), asked.tool.as_str()),
        (NeedsInputKind::Outcome, "c2", "send")
    );
    assert!(asked.reason.starts_with("send started and its outcome is unknown"), "{}", asked.reason);
    assert_eq!(ran(d, "send"), ["A"], "the manual call ran once, on the killed worker");

    // Another process (here: this one, over the ingress) answers; the run finishes.
    let rt = &cluster.runtime;
    let err = rt.block_on(cluster.client.answer("r1", "c1", "x")).unwrap_err();
    assert!(!err.to_string().contains("timed out"), "{err}\n{}", cluster.server.log_tail());
    assert_eq!(
        err.to_string(),
        // The same words as a run on SQLite says them (one text for both backends).
        "run \"r1\" is not waiting for an answer of call \"c1\"; it waits for: answer of \"c2\""
    );
    rt.block_on(cluster.client.answer("r1", "c2", "the message went out")).unwrap();
    let state = cluster.finished("r1");
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    assert_eq!(state.outcome(), Some("saw: read done | the message went out | put done"));
    assert_eq!(ran(d, "send"), ["A"], "never run again");
    assert_eq!(ran(d, "read").len(), 1);
    assert_eq!(ran(d, "put").len(), 1);
    assert!(cluster.status("r1").needs_input.is_empty());
}

#[test]
fn a_worker_with_other_tools_is_refused_and_the_run_waits_for_one_with_the_runs_tools() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let Some(cluster) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = start_worker(d, &cluster.front, "A", &[(HOLD, "model2")]);
    cluster.register();
    cluster.runtime.block_on(cluster.client.submit("r1", "go")).unwrap();
    until_logged(&cluster, d, "model.log", 2);
    std::thread::sleep(Duration::from_millis(100));
    drop(a);

    // Only a worker with other tools is left: every attempt is refused, nothing lost.
    let other = start_worker(d, &cluster.front, "O", &[(TOOLS, "other")]);
    // (The first failure is A's death, a broken connection.)
    let state = cluster
        .until("r1", "the refusal", |s| s.error.as_deref().is_some_and(|f| f.contains("was started with")));
    assert_eq!(state.status, RunStatus::Running, "{state:?}");
    let failure = state.error.unwrap();
    assert!(
        failure.contains(
            "run \"r1\" was started with tools [read, send, put], model \"function\", a system prompt of 0 characters; this agent has tools [read], model \"function\""
        ),
        "{failure}"
    );
    assert!(!model_requests(d).iter().any(|r| r.starts_with('O')), "the other worker asked no model");
    // Following the run shows why it is stuck.
    let mut seen: Vec<String> = Vec::new();
    let followed = cluster.runtime.block_on(async {
        let follow = cluster.client.wait("r1", |event| seen.push(event.to_owned()));
        tokio::time::timeout(Duration::from_secs(2), follow).await
    });
    assert!(followed.is_err(), "still stuck: {followed:?}");
    assert!(
        seen.iter().any(|e| e.starts_with("retrying: run \"r1\" was started with tools [read, send, put]")),
        "{seen:?}"
    );

    // A worker with the run's tools comes back: the run finishes where it stopped.
    drop(other);
    cluster.front.backends.lock().unwrap().clear();
    let _c = start_worker(d, &cluster.front, "C", &[]);
    let state = cluster.finished("r1");
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    assert_eq!(state.outcome(), Some(ALL_DONE));
    assert_eq!(model_requests(d).last().map(String::as_str), Some("C 2"));
    for tool in BATCH {
        assert_eq!(ran(d, tool), ["A"], "{tool}");
    }
}

#[test]
fn a_run_waiting_for_approval_outlives_its_worker_and_an_approval_from_another_process_resumes_it_elsewhere()
{
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let Some(cluster) = Cluster::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = start_worker(d, &cluster.front, "A", &[(ASK, "1")]);
    let _b = start_worker(d, &cluster.front, "B", &[(ASK, "1")]);
    cluster.register();
    let rt = &cluster.runtime;
    rt.block_on(cluster.client.submit("r1", "go")).unwrap();
    // The three calls of the turn wait together.
    let state = cluster.until("r1", "the approval pause", |s| s.status == RunStatus::NeedsInput);
    let asked: Vec<(NeedsInputKind, &str)> =
        state.needs_input.iter().map(|n| (n.kind, n.call_id.as_str())).collect();
    assert_eq!(
        asked,
        [
            (NeedsInputKind::Approval, "c1"),
            (NeedsInputKind::Approval, "c2"),
            (NeedsInputKind::Approval, "c3")
        ]
    );
    drop(a); // the worker that ran it so far is gone; the run is in Restate's journal

    // This process (neither worker) decides; the run goes on, on B.
    rt.block_on(cluster.client.approve("r1", "c1", harnessx_core::ApprovalDecision::Approve)).unwrap();
    rt.block_on(cluster.client.approve("r1", "c2", harnessx_core::ApprovalDecision::Deny)).unwrap();
    let waiting = cluster.status("r1");
    assert_eq!(waiting.needs_input.len(), 1, "only c3 is left: {waiting:?}");
    rt.block_on(cluster.client.approve("r1", "c3", harnessx_core::ApprovalDecision::Approve)).unwrap();
    let err =
        rt.block_on(cluster.client.approve("r1", "c3", harnessx_core::ApprovalDecision::Deny)).unwrap_err();
    assert!(err.to_string().starts_with("run \"r1\" is not waiting for an approval of call \"c3\""), "{err}");
    let state = cluster.finished("r1");
    assert_eq!(state.status, RunStatus::Completed, "{state:?}");
    assert_eq!(state.outcome(), Some("saw: read done | Permission denied | put done"));
    assert_eq!(ran(d, "read"), ["B"]);
    assert!(ran(d, "send").is_empty(), "denied");
    assert_eq!(ran(d, "put"), ["B"]);
    assert_eq!(model_requests(d), ["A 1", "B 2"], "turn 1 is not asked again");
}
