//! The SQLite memory store across processes: memories outlive the process that saved
//! them, two processes write one file at once and nothing is lost, and a writer killed
//! with SIGKILL loses nothing it had reported saved.
//!
//! The other processes are this test binary run again with `HX_MEMORY_ROLE` set: the
//! test `child` then plays that role (and does nothing when the variable is unset).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harnessx_builtin::memory::{MemoryOptions, SqliteStore, register_memory_tools};
use harnessx_core::{MemoryStore, NewMemory, ToolCall, ToolRegistry};
use serde_json::json;

const ROLE: &str = "HX_MEMORY_ROLE";
const DB: &str = "HX_MEMORY_DB";
const WRITER: &str = "HX_MEMORY_WRITER";
const COUNT: &str = "HX_MEMORY_COUNT";

/// Starts this test binary as a child playing `role` on the store at `db`.
fn spawn(role: &str, db: &Path, extra: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["memory_sqlite::child", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DB, db)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in extra {
        command.env(k, v);
    }
    command.spawn().unwrap()
}

/// The ids a child reported saved (its `saved ID` lines; the test harness may print
/// `test child ... ` in front of the first).
fn reported(lines: impl Iterator<Item = String>) -> Vec<String> {
    lines.filter_map(|l| saved_id(&l)).collect()
}

fn saved_id(line: &str) -> Option<String> {
    let (_, rest) = line.split_once("saved ")?;
    let id: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!id.is_empty()).then_some(id)
}

/// The child's side; a no-op in an ordinary test run.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let store = SqliteStore::open(std::env::var(DB).unwrap()).unwrap();
    let writer = std::env::var(WRITER).unwrap_or_default();
    let count: usize = std::env::var(COUNT).ok().and_then(|c| c.parse().ok()).unwrap_or(0);
    let mut out = std::io::stdout().lock();
    match role.as_str() {
        // Through the tools, as an agent would: save, then exit.
        "restart" => {
            let registry = ToolRegistry::new();
            let store: std::sync::Arc<dyn MemoryStore> = std::sync::Arc::new(store);
            register_memory_tools(
                &registry,
                MemoryOptions { store: Some(store), namespace: "alice".into(), ..Default::default() },
            )
            .unwrap();
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let args = json!({"text": "Alice's flight to Osaka leaves on March 3rd", "tags": ["travel"]});
            let r = rt.block_on(registry.execute(&ToolCall::new("1", "save_memory", args.to_string()), None));
            assert!(!r.is_error, "{}", r.content);
            writeln!(out, "saved {}", r.structured_content.unwrap()["id"].as_str().unwrap()).unwrap();
        }
        // `count` saves, each reported once it returned.
        "writer" => {
            for i in 0..count {
                let saved =
                    store.save("shared", NewMemory::new(format!("writer {writer} memory {i}"))).unwrap();
                writeln!(out, "saved {}", saved.memory.id).unwrap();
            }
        }
        // Saves until killed (at most a minute), reporting each save once it returned.
        "until_killed" => {
            let start = Instant::now();
            let mut i = 0;
            while start.elapsed() < Duration::from_secs(60) {
                let saved = store.save("victim", NewMemory::new(format!("before the kill {i}"))).unwrap();
                writeln!(out, "saved {}", saved.memory.id).unwrap();
                out.flush().unwrap();
                i += 1;
            }
        }
        other => panic!("unknown role {other}"),
    }
    out.flush().unwrap();
}

#[test]
fn memories_survive_the_process_that_saved_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memories.db");
    let out = spawn("restart", &db, &[]).wait_with_output().unwrap();
    assert!(out.status.success());
    let ids = reported(String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned));
    assert_eq!(ids.len(), 1);
    // A new process (this one), a new registry, the same file.
    let registry = ToolRegistry::new();
    registry.load_builtin("memory", json!({"path": db, "namespace": "alice"})).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let found = rt.block_on(registry.execute(
        &ToolCall::new("1", "search_memories", json!({"query": "when does Alice fly?"}).to_string()),
        None,
    ));
    assert!(
        found
            .content
            .contains(&format!("- [{}] Alice's flight to Osaka leaves on March 3rd (tags: travel)", ids[0])),
        "{}",
        found.content
    );
}

#[test]
fn two_processes_writing_one_file_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memories.db");
    const EACH: usize = 150;
    let children: Vec<Child> = ["a", "b"]
        .iter()
        .map(|w| spawn("writer", &db, &[(WRITER, (*w).to_owned()), (COUNT, EACH.to_string())]))
        .collect();
    let mut ids = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a writer failed");
        let mine = reported(String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned));
        assert_eq!(mine.len(), EACH);
        ids.extend(mine);
    }
    let store = SqliteStore::open(&db).unwrap();
    let all = store.list("shared", 10_000).unwrap();
    assert_eq!(all.len(), 2 * EACH);
    for w in ["a", "b"] {
        for i in 0..EACH {
            let text = format!("writer {w} memory {i}");
            assert!(all.iter().any(|m| m.text == text), "{text} lost");
        }
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2 * EACH, "every save got its own id");
    // And the index saw every write: each writer's memories are found by search.
    assert_eq!(store.search("shared", "writer", 1000).unwrap().len(), 2 * EACH);
}

#[test]
fn a_writer_killed_with_sigkill_loses_nothing_it_reported_saved() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memories.db");
    let mut child = spawn("until_killed", &db, &[]);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ids = Vec::new();
    while ids.len() < 40 {
        let line = lines.next().expect("the writer reports saves").unwrap();
        ids.extend(saved_id(&line));
    }
    child.kill().unwrap(); // SIGKILL, mid-write most likely
    child.wait().unwrap();
    // What it wrote to the pipe before dying was reported saved too.
    ids.extend(reported(lines.map_while(Result::ok)));
    let store = SqliteStore::open(&db).unwrap();
    for id in &ids {
        let memory = store.get("victim", id).unwrap().unwrap_or_else(|| panic!("memory {id} was lost"));
        assert!(memory.text.starts_with("before the kill "), "{memory:?}");
    }
    let stored = store.list("victim", 100_000).unwrap().len();
    assert!(stored >= ids.len(), "{stored} stored, {} reported", ids.len());
    // The file is whole: a write after the crash works and is found.
    let saved = store.save("victim", NewMemory::new("after the kill")).unwrap();
    assert_eq!(store.search("victim", "after", 1).unwrap()[0].memory.id, saved.memory.id);
}
