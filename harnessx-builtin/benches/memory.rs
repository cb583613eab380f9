//! Memory search over 10,000 memories: the SQLite store directly and through the
//! registry pipeline (`search_memories`), and the in-process store for comparison.
//!
//! The memories are generated deterministically (a fixed LCG over a fixed vocabulary), so
//! every run searches the same data. The SQLite file is built once into
//! `$HX_BENCH_MEMORY_DB` (default `/tmp/hx-bench-memory-v1.db`) and reused. See
//! docs/performance.md, "Memory search".
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_builtin::memory::{InMemoryStore, MemoryOptions, SqliteStore, register_memory_tools};
use harnessx_core::{MemoryStore, NewMemory, ToolCall, ToolRegistry};

const MEMORIES: usize = 10_000;
const NAMESPACE: &str = "bench";

/// A deterministic generator (Knuth's MMIX LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below
    }
}

/// Common words (drawn often) and 2,000 made-up rarer ones.
fn vocabulary() -> Vec<String> {
    let common = "the user prefers likes team project meeting deploy server database review code \
        weekly friday morning coffee travel flight budget report customer invoice release bug test \
        password backup schedule office lunch family birthday doctor appointment language rust python"
        .split_whitespace()
        .map(str::to_owned);
    let syllables = ["ka", "lo", "mi", "ren", "tas", "vo", "qui", "zen", "dar", "fel", "gor", "hul"];
    let made_up = (0..2_000).map(|i| {
        let mut w = String::new();
        let mut n = i + 1;
        while n > 0 {
            w.push_str(syllables[n % syllables.len()]);
            n /= syllables.len();
        }
        w
    });
    common.chain(made_up).collect()
}

/// Memory `i`'s text: 12 to 30 words, one in three from the common list.
fn texts() -> Vec<String> {
    let words = vocabulary();
    let mut rng = Lcg(42);
    (0..MEMORIES)
        .map(|_| {
            let len = 12 + rng.next(19);
            (0..len)
                .map(|_| {
                    if rng.next(3) == 0 {
                        words[rng.next(36)].as_str()
                    } else {
                        words[36 + rng.next(2_000)].as_str()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The SQLite store with the 10,000 memories (built on first use).
fn sqlite_store(texts: &[String]) -> SqliteStore {
    let path = PathBuf::from(
        std::env::var("HX_BENCH_MEMORY_DB").unwrap_or_else(|_| "/tmp/hx-bench-memory-v1.db".into()),
    );
    let store = SqliteStore::open(&path).unwrap();
    let have = store.list(NAMESPACE, MEMORIES + 1).unwrap().len();
    if have != MEMORIES {
        drop(store);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let store = SqliteStore::open(&path).unwrap();
        eprintln!("building {} ({MEMORIES} memories, one transaction each)...", path.display());
        for text in texts {
            store.save(NAMESPACE, NewMemory::new(text.clone())).unwrap();
        }
        return store;
    }
    store
}

/// Queries of the kinds a model sends: a few words, common and rare mixed.
const QUERIES: [&str; 6] = [
    "when is the team meeting about the release",
    "kalo mizen",
    "what does the user prefer for coffee on friday morning",
    "\"AND OR tasvo* (budget)",
    "meeting",
    "which project uses rust or python for the database server backup",
];

fn memory_search(c: &mut Criterion) {
    let texts = texts();
    let sqlite: Arc<dyn MemoryStore> = Arc::new(sqlite_store(&texts));
    let in_memory: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    for text in &texts {
        in_memory.save(NAMESPACE, NewMemory::new(text.clone())).unwrap();
    }
    for query in QUERIES {
        assert!(!sqlite.search(NAMESPACE, query, 5).unwrap().is_empty(), "{query} finds something");
    }

    let mut group = c.benchmark_group("memory_search_10k");
    group.bench_function("sqlite_store", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            sqlite.search(NAMESPACE, QUERIES[i % QUERIES.len()], 5).unwrap().len()
        })
    });
    for (n, query) in QUERIES.iter().enumerate() {
        group.bench_function(format!("sqlite_store_q{n}"), |b| {
            b.iter(|| sqlite.search(NAMESPACE, query, 5).unwrap().len())
        });
    }

    let registry = ToolRegistry::new();
    register_memory_tools(
        &registry,
        MemoryOptions { store: Some(sqlite.clone()), namespace: NAMESPACE.into(), ..Default::default() },
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let calls: Vec<ToolCall> = QUERIES
        .iter()
        .map(|q| ToolCall::new("b", "search_memories", serde_json::json!({"query": q}).to_string()))
        .collect();
    group.bench_function("search_memories_tool_sqlite", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            let r = rt.block_on(registry.execute(&calls[i % calls.len()], None));
            assert!(!r.is_error, "{}", r.content);
            r.content.len()
        })
    });

    group.sample_size(20);
    group.bench_function("in_memory_store", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            in_memory.search(NAMESPACE, QUERIES[i % QUERIES.len()], 5).unwrap().len()
        })
    });
    group.finish();
}

criterion_group!(benches, memory_search);
criterion_main!(benches);
