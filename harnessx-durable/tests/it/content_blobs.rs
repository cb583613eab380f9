//! Media in durable runs (issue 43, "Journaled and bounded"): a SQLite journal keeps each
//! blob once, by SHA-256, the entries and the run's prompt refer to it, a resume sends the
//! model the same bytes, and a missing or corrupt reference is an error, never garbage.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, Prompt};
use harnessx_core::content::store::sha256_hex;
use harnessx_core::{Blob, Bytes, Part, ReplayPolicy, ToolCall, ToolDefinition, ToolHandler, ToolOutput};
use harnessx_durable::{AgentRuntime, Entry, JournalStore, RunStatus, SqliteJournal};
use serde_json::json;

/// A PNG signature and `n` more bytes of a pattern.
fn png(n: usize) -> Bytes {
    let mut data = b"\x89PNG\r\n\x1a\n".to_vec();
    data.extend((0..n).map(|i| (i * 7919 % 251) as u8));
    Bytes::from(data)
}

/// What the model was sent and what the tools did, across "processes".
#[derive(Default)]
struct World {
    /// The bytes of every medium of every request, per request.
    seen: Mutex<Vec<Vec<Bytes>>>,
    snaps: AtomicUsize,
    /// `wait` hangs (until the run is dropped) while this is set.
    hang: AtomicBool,
}

/// Turn 1 calls `snap` (which returns `image`) and `wait`; turn 2 answers.
fn agent(world: &Arc<World>, image: &Bytes) -> Agent {
    let w = world.clone();
    let model = FunctionModel::new(move |req| {
        let media =
            req.messages.iter().flat_map(Message::parts).filter_map(|p| p.blob().and_then(Blob::as_bytes));
        w.seen.lock().unwrap().push(media.cloned().collect());
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "snap", "{}"),
                ToolCall::new("c2", "wait", "{}"),
            ]),
            _ => ModelResponse::text("seen"),
        })
    });
    let (w, image) = (world.clone(), image.clone());
    let snap = ToolDefinition::new(
        "snap",
        "Takes a screenshot.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, _ctx| {
            let (w, image) = (w.clone(), image.clone());
            async move {
                w.snaps.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text("the screen").with_part(Part::image("image/png", image)))
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    let w = world.clone();
    let wait = ToolDefinition::new(
        "wait",
        "Waits.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(move |_args, _ctx| {
            let w = w.clone();
            async move {
                if w.hang.load(Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
                Ok("waited".into())
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe);
    Agent::builder()
        .model(model)
        .tool(snap)
        .tool(wait)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

fn prompt(image: &Bytes) -> Prompt {
    Prompt::new("what is on the screen?").with_part(Part::image("image/png", image.clone()))
}

fn db(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

fn blob_count(path: &Path) -> i64 {
    db(path).query_row("SELECT count(*) FROM blobs", [], |r| r.get(0)).unwrap()
}

/// Runs `r` to completion on a fresh journal at `dir/j.db`.
async fn completed_run(dir: &Path, image: &Bytes) -> (Arc<World>, std::path::PathBuf) {
    let world = Arc::new(World::default());
    let path = dir.join("j.db");
    let runtime = AgentRuntime::sqlite(agent(&world, image), &path).unwrap();
    let result = runtime.start("r", prompt(image)).await.unwrap();
    assert_eq!(result.output, "seen");
    (world, path)
}

#[tokio::test]
async fn the_prompts_image_and_a_tool_result_returning_it_are_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let image = png(50_000);
    let (world, path) = completed_run(dir.path(), &image).await;

    // The model saw the prompt's image, then it and the tool's.
    let seen = world.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], std::slice::from_ref(&image));
    assert_eq!(seen[1], [image.clone(), image.clone()]);

    // One blob, and no base64 in the entries or the run.
    let conn = db(&path);
    let (count, sha, len): (i64, String, i64) = conn
        .query_row("SELECT count(*), sha256, len FROM blobs", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!((count, sha.as_str(), len), (1, sha256_hex(&image).as_str(), image.len() as i64));
    let parts: String = conn.query_row("SELECT prompt_parts FROM runs", [], |r| r.get(0)).unwrap();
    let reference =
        json!([{"type": "image", "media_type": "image/png", "sha256": sha, "bytes": image.len()}]);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&parts).unwrap(), reference);
    let mut stmt = conn.prepare("SELECT data FROM entries").unwrap();
    let entries: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    assert!(entries.iter().any(|e| e.contains(&sha)), "the call's result refers to the blob");
    assert!(entries.iter().all(|e| !e.contains("\"data\"") && e.len() < 2_000), "{entries:?}");

    // Loading the run reads the blob once: the prompt's part and the result's share it.
    let (run, entries) = SqliteJournal::open(&path).unwrap().load_run("r").unwrap().unwrap();
    let prompt_bytes = run.prompt_parts[0].blob().and_then(Blob::as_bytes).unwrap().clone();
    assert_eq!(prompt_bytes, image);
    let result = entries
        .iter()
        .find_map(|e| match &e.entry {
            Entry::CallResult { result, .. } if result.name == "snap" => Some(result.clone()),
            _ => None,
        })
        .unwrap();
    let result_bytes = result.parts[0].blob().and_then(Blob::as_bytes).unwrap();
    assert_eq!(result_bytes.as_ptr(), prompt_bytes.as_ptr(), "one read per blob per load");
}

#[tokio::test]
async fn a_run_killed_mid_way_and_resumed_sends_the_same_image_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.db");
    let image = png(200_000);
    let world = Arc::new(World::default());
    world.hang.store(true, Ordering::SeqCst);
    {
        let runtime = AgentRuntime::sqlite(agent(&world, &image), &path).unwrap();
        let journal = runtime.journal().clone();
        let run = runtime.start("r", prompt(&image));
        tokio::pin!(run);
        // Until snap's result is committed (wait hangs), then "kill the process".
        let committed = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::select! {
                _ = &mut run => panic!("the run cannot finish while wait hangs"),
                _ = async {
                    loop {
                        // (The run is created once the run's future is first polled.)
                        let entries = journal.load_run("r").unwrap().map(|(_, e)| e).unwrap_or_default();
                        if entries.iter().any(|e| matches!(e.entry, Entry::CallResult { .. })) {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                } => {}
            }
        })
        .await;
        assert!(committed.is_ok(), "snap's result was journaled");
    }
    assert_eq!(blob_count(&path), 1);

    // A new process: the journal opened again, the image known only from it.
    world.hang.store(false, Ordering::SeqCst);
    let other = png(200_000);
    assert_ne!(other.as_ptr(), image.as_ptr());
    let runtime = AgentRuntime::sqlite(agent(&world, &other), &path).unwrap();
    let result = runtime.resume("r").await.unwrap();
    assert_eq!(result.output, "seen");
    assert_eq!(world.snaps.load(Ordering::SeqCst), 1, "snap's result came from the journal");
    let seen = world.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "turn 1's response came from the journal");
    assert_eq!(seen[1], [image.clone(), image.clone()], "byte-identical after the resume");
    assert_eq!(blob_count(&path), 1);
}

#[tokio::test]
async fn a_missing_blob_is_one_line_naming_it_and_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let image = png(1_000);
    let (_, path) = completed_run(dir.path(), &image).await;
    db(&path).execute("DELETE FROM blobs", []).unwrap();

    let journal = SqliteJournal::open(&path).unwrap();
    let error = journal.load_run("r").unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "journal storage error: run \"r\" refers to blob sha256:{}, which is missing from the journal {}",
            sha256_hex(&image),
            path.display()
        )
    );
    assert!(!error.contains('\n'));
    // The runtime says the same.
    let runtime = AgentRuntime::new(agent(&Arc::default(), &image), Arc::new(journal));
    assert!(runtime.status("r").unwrap_err().to_string().contains("is missing from the journal"));
}

#[tokio::test]
async fn a_corrupt_reference_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let image = png(1_000);
    let (_, path) = completed_run(dir.path(), &image).await;
    let sha = sha256_hex(&image);
    let len = image.len().to_string();
    let cases = [
        // Not a hash.
        (sha.as_str(), "not-a-hash", "64 lowercase hex digits"),
        // A length the blob does not have.
        (&format!("\"bytes\":{len}"), "\"bytes\":7", "holds 1008 bytes where its reference says 7"),
        // A hash and no length.
        (&format!(",\"bytes\":{len}"), "", "together or neither"),
    ];
    for (from, to, reason) in cases {
        let copy = dir.path().join("copy.db");
        // (The journal's last commits are in its WAL: a copy of the file alone lacks them.)
        db(&path).execute("VACUUM INTO ?1", [copy.to_str().unwrap()]).unwrap();
        let conn = db(&copy);
        conn.execute("UPDATE entries SET data = replace(data, ?1, ?2)", [from, to]).unwrap();
        conn.execute("UPDATE runs SET prompt_parts = replace(prompt_parts, ?1, ?2)", [from, to]).unwrap();
        drop(conn);
        let error = SqliteJournal::open(&copy).unwrap().load_run("r").unwrap_err().to_string();
        assert!(error.contains(reason) && error.contains("\"r\""), "{reason}: {error}");
        assert!(!error.contains('\n'), "{error}");
        std::fs::remove_file(&copy).unwrap();
    }
    // The journal itself is untouched, and the run completed.
    let (run, _) = SqliteJournal::open(&path).unwrap().load_run("r").unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
}

// A journal written before media were kept apart (schema 1) is migrated in place: its
// runs read back, with no prompt parts.
#[test]
fn a_journal_of_schema_1_gains_the_blobs_table_and_its_runs_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    db(&path)
        .execute_batch(
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY NOT NULL, prompt TEXT NOT NULL, fingerprint TEXT NOT NULL,
                fingerprint_summary TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL, output TEXT);
             CREATE INDEX runs_by_age ON runs(created_at DESC, run_id DESC);
             CREATE TABLE entries (run_id TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL,
                kind TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
             INSERT INTO runs VALUES ('old', 'hi', 'f', 's', 'completed', 1, 2, 'done');
             INSERT INTO entries VALUES ('old', 1, 2, 'final', '{\"kind\":\"final\",\"output\":\"done\"}');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    let journal = SqliteJournal::open(&path).unwrap();
    let (run, entries) = journal.load_run("old").unwrap().unwrap();
    assert_eq!((run.prompt.as_str(), run.prompt_parts.is_empty()), ("hi", true));
    assert_eq!(entries[0].entry, Entry::Final { output: "done".into() });
    assert_eq!(blob_count(&path), 0);
}

/// A prompt with a medium over what a Restate journal entry holds inline is refused
/// before anything is sent, when no blob store is configured.
#[cfg(feature = "restate")]
#[tokio::test]
async fn restate_refuses_a_large_prompt_image_without_a_blob_store() {
    use harnessx_durable::DurableRuns;
    use harnessx_durable::restate::{INLINE_MAX, RestateRuntime};
    // Nothing listens there: the refusal comes first.
    let cluster = RestateRuntime::new("http://127.0.0.1:9").unwrap();
    let error =
        cluster.start_prompt("r", prompt(&png(INLINE_MAX + 1)), Default::default()).await.unwrap_err();
    assert_eq!(error.to_string().lines().count(), 1, "{error}");
    assert!(error.to_string().contains("configure a blob store the workers and clients share"), "{error}");
}

/// On Restate, a 1 MB image a tool returns goes to the shared folder, not the journal;
/// without a store the run fails saying to configure one.
#[cfg(feature = "restate")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restate_keeps_a_large_image_result_in_the_shared_blob_store() {
    use harnessx_core::content::store::BlobStore;
    use harnessx_durable::DurableRuns;
    use harnessx_durable::FolderBlobStore;
    use harnessx_durable::restate::RestateRuntime;
    use harnessx_test_support::restate::RestateServer;

    let Some(server) = tokio::task::spawn_blocking(RestateServer::start).await.unwrap() else { return };
    let server = Arc::new(server);
    let dir = tempfile::tempdir().unwrap();
    let image = png(1 << 20);
    let blobs: Arc<dyn BlobStore> = Arc::new(FolderBlobStore::open(dir.path().join("blobs")).unwrap());
    let world = Arc::new(World::default());
    let serve = |store: Option<Arc<dyn BlobStore>>| async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let agent = Arc::new(agent(&world, &image));
        tokio::spawn(harnessx_durable::restate::serve_with_blobs(agent, store, listener, async {
            let _ = stopped.await;
        }));
        let s = server.clone();
        let u = url.clone();
        tokio::task::spawn_blocking(move || s.register(&u).unwrap()).await.unwrap();
        stop
    };

    let stop = serve(Some(blobs.clone())).await;
    let cluster = RestateRuntime::new(&server.ingress_url).unwrap().with_blobs(blobs.clone());
    let state =
        DurableRuns::start(&cluster, "big", "what is on the screen?", Default::default()).await.unwrap();
    assert_eq!((state.status, state.output.as_str()), (RunStatus::Completed, "seen"), "{:?}", state.error);
    let sha = sha256_hex(&image);
    assert_eq!(std::fs::read(dir.path().join("blobs").join(&sha)).unwrap(), image);
    let seen = world.seen.lock().unwrap().clone();
    assert_eq!(
        seen.last().unwrap(),
        std::slice::from_ref(&image),
        "the model got the bytes back from the store"
    );
    let _ = stop.send(());

    // Workers without a store: the same result cannot be journaled.
    let stop = serve(None).await;
    let state = DurableRuns::start(&cluster, "big-no-store", "what is on the screen?", Default::default())
        .await
        .unwrap();
    assert_eq!(state.status, RunStatus::Failed);
    let error = state.error.unwrap_or_default();
    assert!(error.contains("configure a blob store"), "{error}");
    let _ = stop.send(());
}
