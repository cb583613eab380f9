//! 1,000 runs started at once against a model that answers after 50 ms (in process, no
//! network), each POSTed and followed to its `run_end` over the server's event stream, as
//! clients do: what the server adds to each run's time (p50 and p99 over the 50 ms the
//! model takes), runs per second, and the peak resident memory (Linux `VmHWM`). Then a
//! criterion figure: one run, start to end, on an idle server.
//!
//! `cargo bench -p harnessx-serve --bench load`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use harnessx_agent::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_serve::{ServeOptions, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUNS: usize = 1_000;
const LATENCY: Duration = Duration::from_millis(50);

/// A model that answers every request after [`LATENCY`].
struct Slow;

impl Model for Slow {
    fn name(&self) -> String {
        "slow".into()
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        futures_util::stream::once(async {
            tokio::time::sleep(LATENCY).await;
            Ok(ModelEvent::Done(ModelResponse::text("done")))
        })
        .boxed()
    }
}

/// One request over a fresh connection; the answer's body.
async fn http(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// Starts run `id` and follows its events to `run_end`; the time it took.
async fn one_run(addr: std::net::SocketAddr, id: String) -> Duration {
    let started = Instant::now();
    let posted =
        http(addr, "POST", "/v1/runs", &format!(r#"{{"prompt": "go", "run_id": "{id}"}}"#)).await.unwrap();
    assert!(posted.starts_with("HTTP/1.1 201"), "{posted}");
    let events = http(addr, "GET", &format!("/v1/runs/{id}/events"), "").await.unwrap();
    assert!(events.contains("\"type\":\"run_end\""), "{events}");
    started.elapsed()
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = AgentConfig { planning: false, ..AgentConfig::default() };
    let agent = Agent::builder().model(Slow).config(config).build().unwrap();
    let server = Arc::new(Server::new(agent, &dir.path().join("runs.db"), ServeOptions::default()).unwrap());
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let app = server.router();
    runtime.spawn(async move { axum::serve(listener, app).await });

    let before = status_kib("VmRSS");
    let started = Instant::now();
    let mut times: Vec<Duration> = runtime.block_on(async {
        let runs = (0..RUNS).map(|i| tokio::spawn(one_run(addr, format!("load-{i}"))));
        futures_util::future::join_all(runs).await.into_iter().map(Result::unwrap).collect()
    });
    let wall = started.elapsed();
    times.sort();
    let added =
        |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)].saturating_sub(LATENCY);
    eprintln!(
        "load: {RUNS} runs at once, each one {LATENCY:?} model request: all done in {wall:.2?} ({:.0} runs/s); added per run p50 {:.1?}, p99 {:.1?}; peak resident memory {} MiB ({} MiB above the start)",
        RUNS as f64 / wall.as_secs_f64(),
        added(0.50),
        added(0.99),
        status_kib("VmHWM") / 1024,
        status_kib("VmHWM").saturating_sub(before) / 1024,
    );

    let mut next = 0u64;
    c.bench_function("serve/one_run_start_to_end", |b| {
        b.to_async(&runtime).iter(|| {
            next += 1;
            one_run(addr, format!("one-{next}"))
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
