//! The journal stores: one suite run against [`MemoryJournal`] and [`SqliteJournal`]
//! (through `&dyn JournalStore`), then what only the SQLite file promises: it outlives
//! the process, refuses files it cannot read, and takes appends from several threads and
//! processes at once without losing or reordering any.
//!
//! The other processes are this test binary run again with `HX_JOURNAL_ROLE` set: the
//! test `child` then plays that role (and does nothing when the variable is unset).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use harnessx_core::{ApprovalDecision, Parts, ToolResult};
use harnessx_durable::{
    Entry, JournalEntry, JournalError, JournalStore, MemoryJournal, RunRecord, RunStatus, SqliteJournal,
    Synchronous,
};
use serde_json::json;

fn run(id: &str, created_at_ms: u64) -> RunRecord {
    RunRecord {
        run_id: id.into(),
        prompt: format!("the prompt of {id}"),
        prompt_parts: Default::default(),
        fingerprint: "sha256:0123".into(),
        fingerprint_summary: "tools: read_file, write_file; model: m".into(),
        status: RunStatus::Running,
        created_at_ms,
        updated_at_ms: created_at_ms,
        output: None,
    }
}

/// One of each variant, with values that a lossy round trip would change.
fn every_variant() -> Vec<Entry> {
    vec![
        Entry::ModelResponse {
            turn: 1,
            response: json!({"content": "I'll look", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\":\"a\"}"}], "usage": {"input": 12, "output": 3.5}}),
        },
        Entry::CallStart {
            turn: 1,
            call_id: "c1".into(),
            tool: "read_file".into(),
            replay: "manual".into(),
            idempotency_key: "run-1/c1".into(),
        },
        Entry::CallResult {
            turn: 1,
            result: ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                content: "line 1\nline \"2\" é ✓".into(),
                is_error: true,
                structured_content: Some(json!({"lines": [1, 2], "nested": {"ok": false}})),
                parts: Parts::new(),
            },
            timed_out: true,
            usage: Default::default(),
        },
        Entry::Approval {
            call_id: "c2".into(),
            tool: "shell".into(),
            decision: ApprovalDecision::ApproveForSession,
            arguments_hash: Some("9f86d081".into()),
        },
        Entry::Paused { needs_input: json!({"approval": {"call_id": "c3"}}) },
        Entry::Answer { call_id: "c3".into(), text: "it did not run".into() },
        Entry::Final { output: "done".into() },
        Entry::Failed { error: "the model failed: 500".into() },
    ]
}

fn answer(i: usize) -> Entry {
    Entry::Answer { call_id: format!("c{i}"), text: format!("answer {i}") }
}

fn seqs(entries: &[JournalEntry]) -> Vec<u64> {
    entries.iter().map(|e| e.seq).collect()
}

use harnessx_core::time::now_unix_ms as now_ms;

// ---- The suite, for any store ----

fn create_then_load_returns_the_header_and_no_entries(store: &dyn JournalStore) {
    assert_eq!(store.load_run("r1").unwrap(), None);
    let mut header = run("r1", 1_000);
    header.output = Some("kept as given".into());
    store.create_run(&header).unwrap();
    assert_eq!(store.load_run("r1").unwrap(), Some((header, Vec::new())));
    assert_eq!(store.load_run("r2").unwrap(), None, "only r1 exists");
}

fn append_sets_status_and_output_and_bumps_updated_at(store: &dyn JournalStore) {
    store.create_run(&run("r1", 1_000)).unwrap();
    let before = now_ms();
    assert_eq!(store.append("r1", &[answer(1), answer(2)], None).unwrap(), 2);
    let (header, entries) = store.load_run("r1").unwrap().unwrap();
    assert_eq!(header.status, RunStatus::Running);
    assert_eq!(header.output, None);
    assert!(header.updated_at_ms >= before, "updated_at {} < {before}", header.updated_at_ms);
    assert_eq!(header.created_at_ms, 1_000, "created_at is not touched");
    assert_eq!(entries.iter().map(|e| e.entry.clone()).collect::<Vec<_>>(), [answer(1), answer(2)]);

    // A status change with no entries: the last seq is still 2.
    let last = store.append("r1", &[], Some((RunStatus::Completed, Some("the answer".into())))).unwrap();
    assert_eq!(last, 2);
    let (header, entries) = store.load_run("r1").unwrap().unwrap();
    assert_eq!((header.status, header.output.as_deref()), (RunStatus::Completed, Some("the answer")));
    assert_eq!(entries.len(), 2);

    // With entries, and an output of None clears the previous one.
    let last =
        store.append("r1", &[Entry::Failed { error: "e".into() }], Some((RunStatus::Failed, None))).unwrap();
    assert_eq!(last, 3);
    let (header, _) = store.load_run("r1").unwrap().unwrap();
    assert_eq!((header.status, header.output), (RunStatus::Failed, None));

    store.append("r1", &[], Some((RunStatus::NeedsInput, None))).unwrap();
    assert_eq!(store.load_run("r1").unwrap().unwrap().0.status, RunStatus::NeedsInput);
    // Listing shows the current header too.
    assert_eq!(store.list_runs().unwrap()[0].status, RunStatus::NeedsInput);
}

fn every_entry_variant_round_trips(store: &dyn JournalStore) {
    store.create_run(&run("r1", 1)).unwrap();
    let before = now_ms();
    let all = every_variant();
    assert_eq!(store.append("r1", &all, None).unwrap(), all.len() as u64);
    let after = now_ms();
    let (_, entries) = store.load_run("r1").unwrap().unwrap();
    assert_eq!(entries.iter().map(|e| e.entry.clone()).collect::<Vec<_>>(), all);
    assert_eq!(seqs(&entries), (1..=all.len() as u64).collect::<Vec<_>>());
    for e in &entries {
        assert!((before..=after).contains(&e.at_ms), "at_ms {} not in {before}..={after}", e.at_ms);
    }
}

fn seqs_start_at_one_per_run_without_gaps(store: &dyn JournalStore) {
    store.create_run(&run("a", 1)).unwrap();
    store.create_run(&run("b", 2)).unwrap();
    let mut returned = Vec::new();
    for (n, size) in [1, 3, 0, 2].into_iter().enumerate() {
        let batch: Vec<Entry> = (0..size).map(|i| answer(n * 10 + i)).collect();
        returned.push(store.append("a", &batch, None).unwrap());
    }
    assert_eq!(returned, [1, 4, 4, 6]);
    assert_eq!(store.append("b", &[answer(99)], None).unwrap(), 1, "b counts from 1, not after a");
    let (_, a) = store.load_run("a").unwrap().unwrap();
    assert_eq!(seqs(&a), [1, 2, 3, 4, 5, 6]);
    let order: Vec<Entry> = [0, 10, 11, 12, 30, 31].into_iter().map(answer).collect();
    assert_eq!(a.into_iter().map(|e| e.entry).collect::<Vec<_>>(), order, "entries keep their order");
    let (_, b) = store.load_run("b").unwrap().unwrap();
    assert_eq!((seqs(&b), b[0].entry.clone()), (vec![1], answer(99)));
}

fn creating_an_existing_run_is_refused_and_changes_nothing(store: &dyn JournalStore) {
    let first = run("r1", 5);
    store.create_run(&first).unwrap();
    store.append("r1", &[answer(1)], None).unwrap();
    let mut second = run("r1", 6);
    second.prompt = "another prompt".into();
    assert_eq!(store.create_run(&second), Err(JournalError::RunExists("r1".into())));
    let (header, entries) = store.load_run("r1").unwrap().unwrap();
    assert_eq!((header.prompt, header.created_at_ms, entries.len()), (first.prompt, 5, 1));
    assert_eq!(store.list_runs().unwrap().len(), 1);
}

fn appending_to_a_missing_run_is_refused_and_creates_nothing(store: &dyn JournalStore) {
    assert_eq!(store.append("ghost", &[answer(1)], None), Err(JournalError::NoSuchRun("ghost".into())));
    assert_eq!(
        store.append("ghost", &[], Some((RunStatus::Completed, None))),
        Err(JournalError::NoSuchRun("ghost".into()))
    );
    assert_eq!(store.load_run("ghost").unwrap(), None);
    assert_eq!(store.list_runs().unwrap(), Vec::new());
}

fn runs_are_listed_newest_first(store: &dyn JournalStore) {
    assert_eq!(store.list_runs().unwrap(), Vec::new());
    for (id, at) in [("b", 10), ("a", 30), ("c", 20), ("z", 30)] {
        store.create_run(&run(id, at)).unwrap();
    }
    let ids: Vec<String> = store.list_runs().unwrap().into_iter().map(|r| r.run_id).collect();
    // Same millisecond: by id, descending.
    assert_eq!(ids, ["z", "a", "c", "b"]);
    assert_eq!(store.list_runs().unwrap()[0], run("z", 30), "the whole header is listed");
}

fn a_run_has_one_driver_at_a_time(store: &dyn JournalStore) {
    store.create_run(&run("r", 1)).unwrap();
    store.create_run(&run("other/id with spaces é", 2)).unwrap();
    let held = store.lock_run("r").unwrap();
    let Err(err) = store.lock_run("r") else { panic!("a second driver is refused") };
    assert_eq!(err, JournalError::Busy("r".into()));
    assert!(err.to_string().contains("being driven by another process or task"), "{err}");
    // Other runs are not held up, whatever their ids hold.
    let other = store.lock_run("other/id with spaces é").unwrap();
    let long = "x".repeat(500);
    let _long = store.lock_run(&long).unwrap();
    // Appends need no lock (approve and answer record while a driver runs).
    store.append("r", &[answer(1)], None).unwrap();
    drop(held);
    let _again = store.lock_run("r").expect("free once the guard is dropped");
    drop(other);
}

/// Runs each suite function against both stores, as `memory::NAME` and `sqlite::NAME`.
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $( #[test] fn $name() { super::$name(&MemoryJournal::new()) } )*
        }
        mod sqlite {
            use super::*;
            $( #[test] fn $name() {
                let dir = tempfile::tempdir().unwrap();
                super::$name(&SqliteJournal::open(dir.path().join("journal.db")).unwrap())
            } )*
        }
    };
}

both_stores!(
    create_then_load_returns_the_header_and_no_entries,
    append_sets_status_and_output_and_bumps_updated_at,
    every_entry_variant_round_trips,
    seqs_start_at_one_per_run_without_gaps,
    creating_an_existing_run_is_refused_and_changes_nothing,
    appending_to_a_missing_run_is_refused_and_creates_nothing,
    runs_are_listed_newest_first,
    a_run_has_one_driver_at_a_time,
);

// ---- MemoryJournal only ----

#[test]
fn memory_journal_clones_share_their_runs() {
    let journal = MemoryJournal::new();
    let other = journal.clone();
    other.create_run(&run("r1", 1)).unwrap();
    journal.append("r1", &[answer(1)], None).unwrap();
    assert_eq!(other.append("r1", &[answer(2)], None).unwrap(), 2);
    assert_eq!(journal.load_run("r1").unwrap().unwrap().1.len(), 2);
    assert_eq!(MemoryJournal::default().list_runs().unwrap(), Vec::new(), "a new journal shares nothing");
}

// ---- SqliteJournal only ----

#[test]
fn sqlite_journal_persists_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    {
        let journal = SqliteJournal::open_with(&path, Synchronous::Normal).unwrap();
        assert_eq!(journal.path(), path);
        journal.create_run(&run("r1", 7)).unwrap();
        journal.append("r1", &every_variant(), Some((RunStatus::NeedsInput, None))).unwrap();
    }
    let journal = SqliteJournal::open(&path).unwrap();
    let (header, entries) = journal.load_run("r1").unwrap().unwrap();
    assert_eq!((header.run_id.as_str(), header.status), ("r1", RunStatus::NeedsInput));
    assert_eq!(entries.into_iter().map(|e| e.entry).collect::<Vec<_>>(), every_variant());
    // It goes on where it stopped.
    assert_eq!(journal.append("r1", &[answer(1)], None).unwrap(), every_variant().len() as u64 + 1);
}

#[test]
fn sqlite_journal_writes_each_entrys_kind_for_sql_readers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let journal = SqliteJournal::open(&path).unwrap();
    journal.create_run(&run("r1", 1)).unwrap();
    journal.append("r1", &every_variant(), None).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut stmt = conn.prepare("SELECT kind FROM entries WHERE run_id = 'r1' ORDER BY seq").unwrap();
    let kinds: Vec<String> = stmt.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
    assert_eq!(
        kinds,
        ["model_response", "call_start", "call_result", "approval", "paused", "answer", "final", "failed"]
    );
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn sqlite_journal_refuses_a_file_from_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    drop(SqliteJournal::open(&path).unwrap());
    rusqlite::Connection::open(&path).unwrap().execute_batch("PRAGMA user_version = 99").unwrap();
    let err = SqliteJournal::open(&path).unwrap_err();
    assert_eq!(
        err,
        JournalError::Version(format!(
            "the journal {} was written by a newer version of harnessx (schema 99, this one knows 3); upgrade harnessx or use another file",
            path.display()
        ))
    );
    // Refusing it did not touch it.
    let version: u32 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 99);
}

#[test]
fn sqlite_journal_refuses_a_text_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = "these are my notes, not a database\n";
    std::fs::write(&path, text).unwrap();
    let err = SqliteJournal::open(&path).unwrap_err();
    assert_eq!(
        err,
        JournalError::Storage(format!(
            "{} is not a harnessx journal (file is not a database)",
            path.display()
        ))
    );
    assert!(!err.to_string().contains('\n'), "one line: {err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "the file is left alone");
}

#[test]
fn sqlite_journal_in_a_missing_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/journal.db");
    let err = SqliteJournal::open(&path).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()) && err.contains("directory must exist"), "{err}");
    assert!(!path.parent().unwrap().exists(), "nothing was created");
}

#[test]
fn sqlite_journal_reports_an_unreadable_entry_with_its_run_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let journal = SqliteJournal::open(&path).unwrap();
    journal.create_run(&run("r1", 1)).unwrap();
    journal.append("r1", &[answer(1), answer(2), answer(3)], None).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE entries SET data = '{\"kind\": \"teleport\"}' WHERE run_id = 'r1' AND seq = 2", [])
        .unwrap();
    let Err(JournalError::Storage(message)) = journal.load_run("r1") else { panic!("the entry was read") };
    assert!(message.contains("entry 2 of run \"r1\""), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    // The journal still works.
    assert_eq!(journal.append("r1", &[answer(4)], None).unwrap(), 4);
}

#[test]
fn sqlite_journal_takes_appends_from_two_threads_on_separate_handles() {
    const EACH: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    SqliteJournal::open(&path).unwrap().create_run(&run("shared", 1)).unwrap();
    std::thread::scope(|s| {
        // One handle commits with FULL, the other with NORMAL: they share the file all the same.
        for (writer, synchronous) in [("a", Synchronous::Full), ("b", Synchronous::Normal)] {
            let path = &path;
            s.spawn(move || {
                let journal = SqliteJournal::open_with(path, synchronous).unwrap();
                for i in 0..EACH {
                    let entry = Entry::Answer { call_id: writer.into(), text: i.to_string() };
                    journal.append("shared", &[entry], None).unwrap();
                }
            });
        }
    });
    let (_, entries) = SqliteJournal::open(&path).unwrap().load_run("shared").unwrap().unwrap();
    assert_eq!(seqs(&entries), (1..=2 * EACH as u64).collect::<Vec<_>>());
    assert_each_writer_in_order(&entries, &["a", "b"], EACH);
}

/// Each writer's `Answer`s are all there, in the order it appended them.
fn assert_each_writer_in_order(entries: &[JournalEntry], writers: &[&str], each: usize) {
    for writer in writers {
        let mine: Vec<String> = entries
            .iter()
            .filter_map(|e| match &e.entry {
                Entry::Answer { call_id, text } if call_id == writer => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(mine, (0..each).map(|i| i.to_string()).collect::<Vec<_>>(), "writer {writer}");
    }
}

const ROLE: &str = "HX_JOURNAL_ROLE";
const DB: &str = "HX_JOURNAL_DB";
const WRITER: &str = "HX_JOURNAL_WRITER";
const COUNT: &str = "HX_JOURNAL_COUNT";

/// Starts this test binary as a child playing `role` on the journal at `db`.
fn spawn(role: &str, db: &Path, extra: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["journal_stores::child", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DB, db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (k, v) in extra {
        command.env(k, v);
    }
    command.spawn().unwrap()
}

/// The child's side; a no-op in an ordinary test run.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else { return };
    let db = std::env::var(DB).unwrap();
    let writer = std::env::var(WRITER).unwrap();
    let count: usize = std::env::var(COUNT).unwrap().parse().unwrap();
    match role.as_str() {
        // Opens the (new) file, creates the shared run unless the other child did, then
        // appends `count` answers, alternately one and two entries per commit.
        "appender" => {
            let journal = SqliteJournal::open(&db).unwrap();
            match journal.create_run(&run("shared", 1)) {
                Ok(()) | Err(JournalError::RunExists(_)) => {}
                Err(e) => panic!("{e}"),
            }
            let mut i = 0;
            while i < count {
                let batch: Vec<Entry> = (i..count.min(i + 1 + i % 2))
                    .map(|n| Entry::Answer { call_id: writer.clone(), text: n.to_string() })
                    .collect();
                i += batch.len();
                journal.append("shared", &batch, None).unwrap();
            }
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn sqlite_journal_takes_appends_from_two_processes_opening_a_new_file_at_once() {
    const WRITERS: [&str; 2] = ["a", "b"];
    const EACH: usize = 100;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.db");
    let start = Instant::now();
    let children: Vec<Child> = WRITERS
        .iter()
        .map(|w| spawn("appender", &db, &[(WRITER, (*w).to_owned()), (COUNT, EACH.to_string())]))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a child failed: {:?}", out.status);
    }
    let (_, entries) = SqliteJournal::open(&db).unwrap().load_run("shared").unwrap().unwrap();
    let total = (WRITERS.len() * EACH) as u64;
    assert_eq!(seqs(&entries), (1..=total).collect::<Vec<_>>());
    assert_each_writer_in_order(&entries, &WRITERS, EACH);
    eprintln!("{} processes, {total} entries: {:?}", WRITERS.len(), start.elapsed());
}
