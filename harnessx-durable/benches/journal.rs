//! Appending to a SQLite journal: one entry and eleven (a model response, five call
//! starts, five results: one turn of five tool calls) per commit, at
//! `synchronous = FULL` and `NORMAL`. Each measurement appends to one run in a fresh
//! file in a temporary directory (on `/tmp` unless `TMPDIR` says otherwise).
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_core::{Parts, ToolResult};
use harnessx_durable::{Entry, JournalStore, RunRecord, RunStatus, SqliteJournal, Synchronous};
use serde_json::json;

/// A turn's entries: the response, then `calls` starts and results.
fn turn(calls: usize) -> Vec<Entry> {
    let mut entries = vec![Entry::ModelResponse {
        turn: 1,
        response: json!({"content": "Reading the files.", "tool_calls": (0..calls).map(|i| json!({"id": format!("c{i}"), "name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"})).collect::<Vec<_>>()}),
    }];
    for i in 0..calls {
        entries.push(Entry::CallStart {
            turn: 1,
            call_id: format!("c{i}"),
            tool: "read_file".into(),
            replay: "safe".into(),
            idempotency_key: format!("run/c{i}"),
        });
    }
    for i in 0..calls {
        entries.push(Entry::CallResult {
            turn: 1,
            result: ToolResult {
                call_id: format!("c{i}"),
                name: "read_file".into(),
                content: "pub mod journal;\npub mod memory;\npub mod sqlite;\n".into(),
                is_error: false,
                structured_content: None,
                parts: Parts::new(),
            },
            timed_out: false,
            usage: Default::default(),
        });
    }
    entries
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    for (name, synchronous) in [("full", Synchronous::Full), ("normal", Synchronous::Normal)] {
        for (count, entries) in
            [(1, vec![Entry::Answer { call_id: "c0".into(), text: "it ran".into() }]), (11, turn(5))]
        {
            assert_eq!(entries.len(), count);
            let journal =
                SqliteJournal::open_with(dir.path().join(format!("{name}-{count}.db")), synchronous).unwrap();
            journal
                .create_run(&RunRecord {
                    run_id: "bench".into(),
                    prompt: "p".into(),
                    prompt_parts: Default::default(),
                    fingerprint: "f".into(),
                    fingerprint_summary: "s".into(),
                    status: RunStatus::Running,
                    created_at_ms: 0,
                    updated_at_ms: 0,
                    output: None,
                })
                .unwrap();
            c.bench_function(&format!("journal_append/{count}_entries/{name}"), |b| {
                b.iter(|| journal.append("bench", &entries, None).unwrap())
            });
        }
    }
}

criterion_group!(benches, append);
criterion_main!(benches);
