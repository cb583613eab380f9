//! The agent loop of `harnessx-agent`'s `agent_loop` bench (20 turns of 10 concurrent
//! `add` calls, then the answer), run durably: on a SQLite journal at `synchronous=FULL`
//! and `NORMAL`, on the in-memory journal, and not durable; next to a bare `fsync` of
//! the same directory, measured in the same run.
//!
//! `cargo bench -p harnessx-durable --bench durable_loop` (`HX_BENCH_DIR` picks the
//! directory of the journal files; the default is a temporary one under /tmp).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use harnessx_durable::{
    AgentRuntime, Entry, JournalEntry, JournalError, JournalStore, MemoryJournal, RunLock, RunRecord,
    RunStatus, SqliteJournal, Synchronous,
};
use serde::Deserialize;
use serde_json::json;

const TURNS: usize = 20;
const CALLS: usize = 10;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn agent() -> Agent {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "add",
            "Add two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
            ToolHandler::typed_async(|Add { a, b }| async move { Ok::<_, String>(a + b) }),
            ToolOptions::new(),
        )
        .unwrap();
    let model = FunctionModel::new(move |req| {
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

/// A journal of any kind, counting its commits.
type Counted = Counting<Box<dyn JournalStore>>;

/// Counts commits (appends) on the way through.
struct Counting<J> {
    inner: J,
    commits: AtomicUsize,
}

impl<J: JournalStore> JournalStore for Counting<J> {
    fn create_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        self.commits.fetch_add(1, Ordering::Relaxed);
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
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.inner.append(run_id, entries, status)
    }
    fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
        self.inner.list_runs()
    }
    fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError> {
        self.inner.lock_run(run_id)
    }
}

fn durable_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let base =
        std::env::var("HX_BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| std::env::temp_dir());
    let dir = tempfile::tempdir_in(base).unwrap();
    let mut group = c.benchmark_group("durable_loop");
    group.sample_size(30);

    // The floor: one small write and fsync in the same directory.
    let mut file = std::fs::File::create(dir.path().join("fsync-probe")).unwrap();
    group.bench_function("bare_fsync", |b| {
        b.iter(|| {
            file.write_all(&[0u8; 256]).unwrap();
            file.sync_data().unwrap();
        })
    });

    let plain = agent();
    group.bench_function("not_durable_20x10", |b| {
        b.to_async(&rt).iter(|| async { assert_eq!(plain.run("go").await.unwrap().output, "done") })
    });

    let journals: Vec<(&str, Arc<Counted>)> = vec![
        (
            "memory_20x10",
            Arc::new(Counting { inner: Box::new(MemoryJournal::new()), commits: AtomicUsize::new(0) }),
        ),
        (
            "sqlite_normal_20x10",
            Arc::new(Counting {
                inner: Box::new(
                    SqliteJournal::open_with(dir.path().join("normal.db"), Synchronous::Normal).unwrap(),
                ),
                commits: AtomicUsize::new(0),
            }),
        ),
        (
            "sqlite_full_20x10",
            Arc::new(Counting {
                inner: Box::new(
                    SqliteJournal::open_with(dir.path().join("full.db"), Synchronous::Full).unwrap(),
                ),
                commits: AtomicUsize::new(0),
            }),
        ),
    ];
    for (name, journal) in journals {
        let runtime = AgentRuntime::new(agent(), journal.clone() as Arc<dyn JournalStore>);
        let next = AtomicUsize::new(0);
        let runs = AtomicUsize::new(0);
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let id = format!("run-{}", next.fetch_add(1, Ordering::Relaxed));
                let r = runtime.start(&id, "go").await.unwrap();
                runs.fetch_add(1, Ordering::Relaxed);
                assert_eq!(r.output, "done");
            })
        });
        let (commits, runs) = (journal.commits.load(Ordering::Relaxed), runs.load(Ordering::Relaxed));
        if runs == 0 {
            continue; // filtered out
        }
        eprintln!(
            "{name}: {:.2} commits per run, {:.2} per turn ({} turns of {CALLS} calls + the answer)",
            commits as f64 / runs as f64,
            commits as f64 / runs as f64 / (TURNS + 1) as f64,
            TURNS
        );
    }
    group.finish();
}

criterion_group!(benches, durable_loop);
criterion_main!(benches);
