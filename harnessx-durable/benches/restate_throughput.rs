//! Durable runs on a real `restate-server`, next to the SQLite journal, for one agent:
//! 3 turns of 2 `add` calls, then the answer (the shape of `durable_loop`, smaller), so
//! 4 model steps and 6 tool steps a run. For each backend: runs per second one after the
//! other and with 16 in flight, and the wall time of a sequential run per step.
//!
//! `cargo bench -p harnessx-durable --features restate --bench restate_throughput`
//! (`HX_BENCH_RUNS` sets the runs per measurement, 64 by default; the journals and the
//! server's data go to a temporary directory, so `TMPDIR` picks the disk). A plain timing
//! loop, not criterion: the server is started once per setup, and a run cannot be
//! repeated under the same id. Without `npm` the Restate rows are skipped, printing why.
//! Results are in `docs/performance.md`, "Durable runs on Restate".
//!
//! The Restate setups:
//! - one worker, [`serve`] on this process's runtime, registered directly;
//! - one and two workers as processes (this binary run again with `HX_BENCH_WORKER` set)
//!   behind a round-robin loopback TCP proxy registered as one deployment (Restate pins
//!   an invocation to its deployment; spreading them is the proxy's job). One worker
//!   behind the proxy is the control for two.
//!
//! A run is followed in two ways: `attach` (one request to the ingress, answered when the
//! run ends: the run's own time) and [`RestateRuntime::start`] (what a caller of the
//! library sees: it polls the run's status, from 100 ms, doubling to 500 ms).

use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use harnessx_durable::restate::{RestateRuntime, register, serve};
use harnessx_durable::{AgentRuntime, JournalStore, RunStatus, SqliteJournal, Synchronous};
use harnessx_test_support::restate::RestateServer;
use serde::Deserialize;
use serde_json::json;

const TURNS: usize = 3;
const CALLS: usize = 2;
/// Model steps (each turn and the answer) and tool steps of one run.
const STEPS: usize = TURNS + 1 + TURNS * CALLS;
const IN_FLIGHT: usize = 16;
const WARMUP: usize = 4;
/// Set in a worker process.
const WORKER: &str = "HX_BENCH_WORKER";

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

/// What one worker executed (a replayed step is not executed again).
#[derive(Default)]
struct Counters {
    model: AtomicUsize,
    tool: AtomicUsize,
}

fn agent(counters: Arc<Counters>) -> Agent {
    let registry = ToolRegistry::new();
    let tool_counter = counters.clone();
    registry
        .register_with_schema(
            "add",
            "Add two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
            ToolHandler::typed_async(move |Add { a, b }| {
                tool_counter.tool.fetch_add(1, Ordering::Relaxed);
                async move { Ok::<_, String>(a + b) }
            }),
            ToolOptions::new(),
        )
        .unwrap();
    let model = FunctionModel::new(move |req| {
        counters.model.fetch_add(1, Ordering::Relaxed);
        let done = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        Ok(if done < TURNS {
            ModelResponse::tool_calls(
                (0..CALLS)
                    .map(|i| {
                        ToolCall::new(format!("c{done}_{i}"), "add", format!(r#"{{"a": {i}, "b": {done}}}"#))
                    })
                    .collect(),
            )
        } else {
            ModelResponse::text("done")
        })
    });
    Agent::builder()
        .model(model)
        .registry(registry)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

/// One measured setup.
struct Row {
    label: String,
    sequential: Duration,
    in_flight: Duration,
    runs: usize,
}

impl Row {
    fn print(&self) {
        let per_run = self.sequential.as_secs_f64() * 1e3 / self.runs as f64;
        println!(
            "| {:<44} | {:>8.1} | {:>8.1} | {:>8.2} | {:>7.3} |",
            self.label,
            self.runs as f64 / self.sequential.as_secs_f64(),
            self.runs as f64 / self.in_flight.as_secs_f64(),
            per_run,
            per_run / STEPS as f64,
        );
    }
}

fn header() {
    println!(
        "| {:<44} | {:>8} | {:>8} | {:>8} | {:>7} |",
        "backend", "runs/s 1", "runs/s16", "ms/run", "ms/step"
    );
    println!("| {:-<44} | {:->8} | {:->8} | {:->8} | {:->7} |", "", "", "", "", "");
}

/// Times `runs` runs one after the other, then `runs` with [`IN_FLIGHT`] in flight, after
/// a warm-up; `start` runs one run to its end under the id it is given.
async fn measure<F, Fut>(label: &str, runs: usize, start: F) -> Row
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let tag: String = label.chars().filter(char::is_ascii_alphanumeric).collect();
    for i in 0..WARMUP {
        start(format!("{tag}-w{i}")).await;
    }
    let t = Instant::now();
    for i in 0..runs {
        start(format!("{tag}-s{i}")).await;
    }
    let sequential = t.elapsed();
    let t = Instant::now();
    futures_util::stream::iter(0..runs)
        .map(|i| start(format!("{tag}-c{i}")))
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    let row = Row { label: label.to_owned(), sequential, in_flight: t.elapsed(), runs };
    row.print();
    row
}

/// Both ways of following a run on the cluster at `ingress`.
async fn measure_restate(label: &str, ingress: &str, runs: usize) -> Vec<Row> {
    let client = RestateRuntime::new(ingress).unwrap();
    // After `RestateRuntime::new`, which installs the TLS provider reqwest needs.
    let http = reqwest::Client::new();
    let attach = measure(&format!("{label}, attach"), runs, |id| {
        let (client, http) = (&client, &http);
        async move {
            client.submit(&id, "go").await.unwrap();
            let url = format!("{ingress}/restate/workflow/HarnessxRun/{id}/attach");
            let response = http.get(url).send().await.unwrap();
            let status = response.status();
            let body = response.text().await.unwrap();
            assert!(status.is_success() && body == "\"done\"", "{id}: {status} {body}");
        }
    })
    .await;
    let start = measure(&format!("{label}, RestateRuntime::start"), runs, |id| {
        let client = &client;
        async move {
            let state = client.start(&id, "go").await.unwrap();
            assert!(state.status == RunStatus::Completed && state.outcome() == Some("done"), "{state:?}");
        }
    })
    .await;
    vec![attach, start]
}

/// The median time of writing 256 bytes to a file in `dir` and `fdatasync`ing it: what a
/// commit costs at least, on the disk the journals and the server's data are on (the
/// server syncs its log too).
fn fsync_probe(dir: &std::path::Path) -> Duration {
    let mut file = std::fs::File::create(dir.join("fsync-probe")).unwrap();
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            file.write_all(&[0u8; 256]).unwrap();
            file.sync_data().unwrap();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// A worker process: serves on a loopback port, prints `port N`; on a line on stdin
/// prints `served MODEL TOOL` (the steps it executed) and exits.
fn worker_main() {
    let counters = Arc::new(Counters::default());
    let agent = Arc::new(agent(counters.clone()));
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        let (model, tool) = (counters.model.load(Ordering::Relaxed), counters.tool.load(Ordering::Relaxed));
        println!("served {model} {tool}");
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("port {}", listener.local_addr().unwrap().port());
        let _ = std::io::stdout().flush();
        serve(agent, listener, std::future::pending()).await;
    });
}

/// A worker process, killed when dropped.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    port: u16,
}

impl Worker {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(WORKER, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("port ").and_then(|p| p.parse().ok()).expect("a worker's port");
        Self { child, stdin, stdout, port }
    }

    /// (model steps, tool steps) it executed; stops it.
    fn served(mut self) -> (usize, usize) {
        let _ = self.stdin.take().unwrap().write_all(b"\n");
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let mut numbers = line.split_whitespace().skip(1).map(|n| n.parse().unwrap());
        (numbers.next().unwrap(), numbers.next().unwrap())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback TCP proxy giving each new connection to the next backend in turn; counts
/// the connections each backend got.
fn proxy(backends: Vec<u16>) -> (u16, Arc<Vec<AtomicUsize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let counts: Arc<Vec<AtomicUsize>> = Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
    let seen = counts.clone();
    std::thread::spawn(move || {
        for (n, inbound) in listener.incoming().enumerate() {
            let Ok(inbound) = inbound else { continue };
            let which = n % backends.len();
            let Ok(outbound) = TcpStream::connect(("127.0.0.1", backends[which])) else { continue };
            seen[which].fetch_add(1, Ordering::Relaxed);
            let _ = (inbound.set_nodelay(true), outbound.set_nodelay(true));
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
    (port, counts)
}

/// `workers` worker processes behind the proxy, on a server of their own.
async fn cluster(workers: usize, runs: usize) -> Vec<Row> {
    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else {
        return Vec::new();
    };
    let started: Vec<Worker> = (0..workers).map(|_| Worker::start()).collect();
    let (front, connections) = proxy(started.iter().map(|w| w.port).collect());
    register(&server.admin_url, &format!("http://127.0.0.1:{front}")).await.unwrap();
    let label = format!("Restate, {workers} worker process{} + proxy", if workers == 1 { "" } else { "es" });
    let rows = measure_restate(&label, &server.ingress_url, runs).await;
    for (i, worker) in started.into_iter().enumerate() {
        let (model, tool) = worker.served();
        println!(
            "  worker {i}: {} connections, executed {model} model steps and {tool} tool steps",
            connections[i].load(Ordering::Relaxed)
        );
    }
    rows
}

fn main() {
    if std::env::var_os(WORKER).is_some() {
        return worker_main();
    }
    let runs: usize = std::env::var("HX_BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(64);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    println!(
        "{TURNS} turns x {CALLS} calls ({STEPS} steps) a run, {runs} runs per measurement, \
         {IN_FLIGHT} in flight in the second column; ms/run and ms/step are sequential"
    );
    println!(
        "journals and server data in {} (TMPDIR picks another place); fsync there: {:.3} ms",
        std::env::temp_dir().display(),
        fsync_probe(dir.path()).as_secs_f64() * 1e3
    );
    header();
    rt.block_on(async {
        let plain = agent(Arc::default());
        measure("not durable (agent.run)", runs, |_| async {
            assert_eq!(plain.run("go").await.unwrap().output, "done");
        })
        .await;
        for (label, sync, file) in [
            ("SQLite FULL", Synchronous::Full, "full.db"),
            ("SQLite NORMAL", Synchronous::Normal, "normal.db"),
        ] {
            let journal: Arc<dyn JournalStore> =
                Arc::new(SqliteJournal::open_with(dir.path().join(file), sync).unwrap());
            let runtime = AgentRuntime::new(agent(Arc::default()), journal);
            measure(label, runs, |id| {
                let runtime = &runtime;
                async move { assert_eq!(runtime.start(&id, "go").await.unwrap().output, "done") }
            })
            .await;
        }

        // One worker on this runtime, registered directly.
        let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else {
            println!("Restate rows skipped: restate-server could not be installed (see above)");
            return;
        };
        let counters = Arc::new(Counters::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = tokio::spawn(serve(Arc::new(agent(counters.clone())), listener, async move {
            let _ = stopped.await;
        }));
        register(&server.admin_url, &uri).await.unwrap();
        measure_restate("Restate, 1 worker in process", &server.ingress_url, runs).await;
        println!(
            "  worker: executed {} model steps and {} tool steps",
            counters.model.load(Ordering::Relaxed),
            counters.tool.load(Ordering::Relaxed)
        );
        let _ = stop.send(());
        drop(server);
        let _ = tokio::time::timeout(Duration::from_secs(5), worker).await;

        cluster(1, runs).await;
        cluster(2, runs).await;
    });
    println!("fsync at the end: {:.3} ms", fsync_probe(dir.path()).as_secs_f64() * 1e3);
}
