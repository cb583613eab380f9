//! [`SqliteJournal`]: journals in one SQLite file, shared by threads and processes.
//!
//! Durability and sharing come from SQLite, configured so:
//! - WAL journal: readers never block the writer nor it them, and a commit is one append
//!   to the log;
//! - `synchronous = FULL` by default ([`Synchronous`]): a commit is fsync'd before
//!   [`append`](JournalStore::append) returns;
//! - `busy_timeout` of [`BUSY_TIMEOUT`]: several processes may append to one file; a
//!   writer waits for the lock instead of failing;
//! - each write is one `BEGIN IMMEDIATE` transaction, and `append` reads the last seq
//!   inside it, so two processes appending to one run never pick the same seq.
//!
//! The schema is versioned with `PRAGMA user_version` and a list of migrations
//! (`MIGRATIONS`); a file written by a newer schema is refused rather than misread.
//! Opening and setting up the file are the workspace's (`harnessx_infra::sqlite`), as for
//! every SQLite file of harnessx.
//!
//! Media (a prompt's image, a tool's PDF) are kept once each, by SHA-256, in the table
//! `blobs`, and the entries refer to them (`blobs`).

mod blobs;
mod events;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use harnessx_infra::sqlite::{self, Access};
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, TransactionBehavior, params};

use harnessx_core::Parts;
use harnessx_core::content::store;

use crate::journal::{Entry, JournalEntry, JournalError, JournalStore, RunLock, RunRecord, RunStatus};
use crate::memory::now_ms;

pub use harnessx_infra::sqlite::BUSY_TIMEOUT;

/// The folder of the run lock files of the journal at `path`.
fn lock_dir(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push("-locks");
    path.with_file_name(name)
}

/// A file name for any run id: its bytes in hex (ids can hold any character), cut and
/// completed by a hash when long.
fn lock_file_name(run_id: &str) -> String {
    let hex: String = run_id.bytes().map(|b| format!("{b:02x}")).collect();
    if hex.len() <= 120 {
        return format!("{hex}.lock");
    }
    // FNV-1a: stable across builds, unlike std's hasher.
    let hash = run_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{}-{hash:016x}.lock", &hex[..100])
}

/// The schema, one step per version: entry `i` takes a file from `user_version` `i` to
/// `i + 1`. Append a step to change it; never edit one that shipped.
const MIGRATIONS: &[&str] = &[
    // 1: the initial tables.
    "
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY NOT NULL,
        prompt TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        fingerprint_summary TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        output TEXT
    );
    CREATE INDEX runs_by_age ON runs(created_at DESC, run_id DESC);
    CREATE TABLE entries (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        at INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL, -- the Entry, as JSON
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    ",
    // 2: media kept once each, by SHA-256 (a rowid table: its rows are large), and the
    // prompt's parts (JSON referring to them; NULL for a prompt of text alone).
    "
    CREATE TABLE blobs (
        sha256 TEXT PRIMARY KEY NOT NULL,
        media_type TEXT,
        len INTEGER NOT NULL,
        data BLOB NOT NULL
    );
    ALTER TABLE runs ADD COLUMN prompt_parts TEXT;
    ",
    // 3: the events a run showed whoever watched it (`harnessx serve`'s streams), in order.
    "
    CREATE TABLE events (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data TEXT NOT NULL, -- one event, as JSON
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    ",
];

/// The schema version this code writes (`PRAGMA user_version`).
const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The columns every read of a run header selects, in [`record_from_row`]'s order.
const RUN_COLUMNS: &str =
    "run_id, prompt, fingerprint, fingerprint_summary, status, created_at, updated_at, output";

/// How hard a commit holds on to the disk (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Synchronous {
    /// Every commit is fsync'd before `append` returns: nothing reported journaled is
    /// lost, even on a power cut.
    #[default]
    Full,
    /// Commits are fsync'd only at WAL checkpoints. Still safe against a crash or kill
    /// of the process (the commit is in the operating system's hands), but a power cut
    /// or kernel crash can lose the last commits (never corrupt the file). Faster.
    Normal,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Self::Full => "PRAGMA synchronous = FULL",
            Self::Normal => "PRAGMA synchronous = NORMAL",
        }
    }
}

/// Journals in one SQLite file (created if missing). Safe to share between threads and
/// between processes: WAL journal, [`Synchronous::Full`] unless asked otherwise, a
/// [`BUSY_TIMEOUT`] for writers waiting on another process, one `BEGIN IMMEDIATE`
/// transaction per write.
///
/// ```
/// use harnessx_durable::{Entry, JournalStore, RunRecord, RunStatus, SqliteJournal};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("journal.db");
/// let run = RunRecord {
///     run_id: "r1".into(),
///     prompt: "hello".into(),
///     prompt_parts: Default::default(),
///     fingerprint: "f".into(),
///     fingerprint_summary: "tools: ; model: m".into(),
///     status: RunStatus::Running,
///     created_at_ms: 0,
///     updated_at_ms: 0,
///     output: None,
/// };
/// SqliteJournal::open(&path).unwrap().create_run(&run).unwrap();
/// SqliteJournal::open(&path).unwrap().append("r1", &[Entry::Final { output: "hi".into() }], None).unwrap();
/// // Another journal on the same file (another process, or after a restart) sees it.
/// let (_, entries) = SqliteJournal::open(&path).unwrap().load_run("r1").unwrap().unwrap();
/// assert_eq!(entries[0].entry, Entry::Final { output: "hi".into() });
/// ```
#[derive(Debug)]
pub struct SqliteJournal {
    path: PathBuf,
    /// The one connection this journal writes through (SQLite serialises writers anyway).
    writer: Mutex<Connection>,
    /// Idle read-only connections; a read takes one or opens another, so reads run
    /// concurrently with each other and with the writer (shared with the blob reads of
    /// a load).
    readers: Arc<Mutex<Vec<Connection>>>,
}

impl SqliteJournal {
    /// Opens (creating if needed) the journal at `path`, with [`Synchronous::Full`]. The
    /// parent directory must exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        Self::open_with(path, Synchronous::Full)
    }

    /// Opens (creating if needed) the journal at `path`, committing with `synchronous`.
    /// The parent directory must exist.
    pub fn open_with(path: impl AsRef<Path>, synchronous: Synchronous) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        let mut writer = sqlite::open(&path, Access::Write).map_err(|e| error(&path, e))?;
        writer.execute_batch(synchronous.pragma()).map_err(|e| error(&path, e))?;
        // The migrations this file lacks (safe to run from several processes at once).
        let found = sqlite::set_up(&mut writer, SCHEMA_VERSION, |tx, found| {
            MIGRATIONS[found as usize..].iter().try_for_each(|step| tx.execute_batch(step))
        })
        .map_err(|e| error(&path, e))?;
        if found > SCHEMA_VERSION {
            return Err(JournalError::Version(format!(
                "the journal {} was written by a newer version of harnessx (schema {found}, this one knows {SCHEMA_VERSION}); upgrade harnessx or use another file",
                path.display()
            )));
        }
        Ok(Self { path, writer: Mutex::new(writer), readers: Default::default() })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` in one immediate write transaction, committed when it returns `Ok`.
    fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, Failure>,
    ) -> Result<T, JournalError> {
        // A panic inside `f` drops the transaction (rolled back); the connection is fine.
        let mut conn = lock(&self.writer);
        let run = || {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        run().map_err(|e| self.failure(e))
    }

    /// Runs `f` in one read transaction on an idle reader (opening one when none is
    /// idle), then returns the reader.
    fn read<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, Failure>,
    ) -> Result<T, JournalError> {
        let idle = lock(&self.readers).pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => sqlite::open(&self.path, Access::Read).map_err(|e| error(&self.path, e))?,
        };
        let out = (|| {
            // One snapshot: the header and the entries agree.
            let tx = conn.transaction()?;
            let out = f(&tx)?;
            tx.finish()?;
            Ok(out)
        })();
        lock(&self.readers).push(conn);
        out.map_err(|e| self.failure(e))
    }

    fn failure(&self, failure: Failure) -> JournalError {
        match failure {
            Failure::Sqlite(e) => error(&self.path, e),
            Failure::Journal(e) => e,
        }
    }
}

impl JournalStore for SqliteJournal {
    fn create_run(&self, run: &RunRecord) -> Result<(), JournalError> {
        let (parts, blobs) = match run.prompt_parts.is_empty() {
            true => (None, Vec::new()),
            false => {
                let (parts, blobs) = blobs::collecting(|| serde_json::to_string(&run.prompt_parts));
                let parts = parts.map_err(|e| {
                    JournalError::Storage(format!(
                        "the prompt's parts of run {:?} cannot be serialised: {e}",
                        run.run_id
                    ))
                })?;
                (Some(parts), blobs)
            }
        };
        self.write(|tx| {
            blobs::insert(tx, &blobs)?;
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO runs (run_id, prompt, fingerprint, fingerprint_summary, status, created_at, updated_at, output, prompt_parts)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (run_id) DO NOTHING",
                )?
                .execute(params![
                    run.run_id,
                    run.prompt,
                    run.fingerprint,
                    run.fingerprint_summary,
                    run.status.as_str(),
                    to_sql(run.created_at_ms),
                    to_sql(run.updated_at_ms),
                    run.output,
                    parts,
                ])?;
            if inserted == 0 {
                return Err(JournalError::RunExists(run.run_id.clone()).into());
            }
            Ok(())
        })
    }

    /// The entries are read in one snapshot, then their references resolved (each blob
    /// read once, on a reader of its own: blobs committed with an entry stay).
    fn load_run(&self, run_id: &str) -> Result<Option<(RunRecord, Vec<JournalEntry>)>, JournalError> {
        let found = self.read(|tx| {
            let header = tx
                .prepare_cached(&format!("SELECT {RUN_COLUMNS}, prompt_parts FROM runs WHERE run_id = ?1"))?
                .query_row([run_id], |row| Ok((record_from_row(row)?, row.get::<_, Option<String>>(8)?)))
                .optional()?;
            let Some((header, parts)) = header else { return Ok(None) };
            let header = header?;
            let mut stmt =
                tx.prepare_cached("SELECT seq, at, data FROM entries WHERE run_id = ?1 ORDER BY seq")?;
            let rows = stmt.query_map([run_id], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, String>(2)?))
            })?;
            Ok(Some((header, parts, rows.collect::<rusqlite::Result<Vec<_>>>()?)))
        })?;
        let Some((mut header, parts, rows)) = found else { return Ok(None) };
        let unreadable = |what: String, e: serde_json::Error| {
            JournalError::Storage(format!(
                "{what} of run {run_id:?} in {} cannot be read ({e}); the file was changed by something other than harnessx",
                self.path.display()
            ))
        };
        let source = blobs::JournalBlobs {
            run_id: run_id.to_owned(),
            path: self.path.clone(),
            readers: self.readers.clone(),
            conn: None,
        };
        let (read, missing) = store::resolving(source, || {
            if let Some(parts) = parts {
                header.prompt_parts = serde_json::from_str::<Parts>(&parts)
                    .map_err(|e| unreadable("the prompt's parts".into(), e))?;
            }
            let mut entries = Vec::with_capacity(rows.len());
            for (seq, at, data) in rows {
                let entry = serde_json::from_str(&data).map_err(|e| unreadable(format!("entry {seq}"), e))?;
                entries.push(JournalEntry { seq: from_sql(seq), at_ms: from_sql(at), entry });
            }
            Ok(entries)
        });
        // A blob that is missing or unreadable is said as it is, one line naming it.
        if let Some(missing) = missing {
            return Err(JournalError::Storage(missing.0));
        }
        Ok(Some((header, read?)))
    }

    fn append(
        &self,
        run_id: &str,
        entries: &[Entry],
        status: Option<(RunStatus, Option<String>)>,
    ) -> Result<u64, JournalError> {
        // Serialised before the lock is taken: the transaction holds only SQL. Media are
        // written as references to their blobs, inserted with the entries.
        let (rows, blobs) = blobs::collecting(|| {
            entries
                .iter()
                .map(|entry| Ok((kind(entry), serde_json::to_string(entry)?)))
                .collect::<Result<Vec<_>, serde_json::Error>>()
        });
        let rows = rows.map_err(|e| {
            JournalError::Storage(format!("an entry of run {run_id:?} cannot be serialised: {e}"))
        })?;
        let at = to_sql(now_ms());
        self.write(|tx| {
            // Bumps `updated_at`, and says whether the run exists.
            let found = match &status {
                None => tx
                    .prepare_cached("UPDATE runs SET updated_at = ?2 WHERE run_id = ?1")?
                    .execute(params![run_id, at])?,
                Some((status, output)) => tx
                    .prepare_cached(
                        "UPDATE runs SET updated_at = ?2, status = ?3, output = ?4 WHERE run_id = ?1",
                    )?
                    .execute(params![run_id, at, status.as_str(), output])?,
            };
            if found == 0 {
                return Err(JournalError::NoSuchRun(run_id.to_owned()).into());
            }
            blobs::insert(tx, &blobs)?;
            // Inside the immediate transaction: no other writer can take this seq.
            let last: i64 = tx
                .prepare_cached("SELECT coalesce(max(seq), 0) FROM entries WHERE run_id = ?1")?
                .query_row([run_id], |row| row.get(0))?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO entries (run_id, seq, at, kind, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            let mut seq = last;
            for (kind, data) in &rows {
                seq += 1;
                insert.execute(params![run_id, seq, at, kind, data])?;
            }
            Ok(from_sql(seq))
        })
    }

    /// An exclusive lock (`flock`) on a file of its own for the run, in the folder
    /// `JOURNAL-locks` beside the journal. The system drops the lock when the process
    /// dies. The files stay (one small empty file per run driven): removing a lock file
    /// while another process may be opening it would let two drivers in.
    fn lock_run(&self, run_id: &str) -> Result<RunLock, JournalError> {
        let dir = lock_dir(&self.path);
        std::fs::create_dir_all(&dir).map_err(|e| {
            JournalError::Storage(format!("cannot create the lock folder {}: {e}", dir.display()))
        })?;
        let path = dir.join(lock_file_name(run_id));
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(
            |e| JournalError::Storage(format!("cannot open the lock file {}: {e}", path.display())),
        )?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(file)),
            Err(std::fs::TryLockError::WouldBlock) => Err(JournalError::Busy(run_id.to_owned())),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(JournalError::Storage(format!("cannot lock {}: {e}", path.display())))
            }
        }
    }

    fn list_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs ORDER BY created_at DESC, run_id DESC"
            ))?;
            let rows = stmt.query_map([], record_from_row)?;
            let mut runs = Vec::new();
            for row in rows {
                runs.push(row??);
            }
            Ok(runs)
        })
    }
}

/// What went wrong inside a transaction: SQLite (given the file's name on the way out)
/// or the journal's own verdict.
enum Failure {
    Sqlite(rusqlite::Error),
    Journal(JournalError),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

impl From<JournalError> for Failure {
    fn from(e: JournalError) -> Self {
        Self::Journal(e)
    }
}

/// A run header from a row of [`RUN_COLUMNS`]; the inner error is a status this code
/// does not know.
fn record_from_row(row: &Row<'_>) -> rusqlite::Result<Result<RunRecord, JournalError>> {
    let run_id: String = row.get(0)?;
    let status: String = row.get(4)?;
    let Some(status) = RunStatus::parse(&status) else {
        return Ok(Err(JournalError::Storage(format!(
            "run {run_id:?} has the unknown status {status:?}; the file was changed by something other than this version of harnessx"
        ))));
    };
    Ok(Ok(RunRecord {
        run_id,
        prompt: row.get(1)?,
        fingerprint: row.get(2)?,
        fingerprint_summary: row.get(3)?,
        status,
        created_at_ms: from_sql(row.get(5)?),
        updated_at_ms: from_sql(row.get(6)?),
        output: row.get(7)?,
        // Read by `load_run` alone (a listing does not read every run's media).
        prompt_parts: Parts::new(),
    }))
}

/// The entry's tag, as serde writes it in `kind` (checked by a test below).
fn kind(entry: &Entry) -> &'static str {
    match entry {
        Entry::ModelResponse { .. } => "model_response",
        Entry::CallStart { .. } => "call_start",
        Entry::CallResult { .. } => "call_result",
        Entry::Approval { .. } => "approval",
        Entry::Hook { .. } => "hook",
        Entry::PromptHook { .. } => "prompt_hook",
        Entry::ResponseHook { .. } => "response_hook",
        Entry::Blocked { .. } => "blocked",
        Entry::Paused { .. } => "paused",
        Entry::Answer { .. } => "answer",
        Entry::LimitReached { .. } => "limit_reached",
        Entry::Final { .. } => "final",
        Entry::Failed { .. } => "failed",
        Entry::Continues { .. } => "continues",
        Entry::Forked { .. } => "forked",
        Entry::ContextOverflow { .. } => "context_overflow",
        Entry::Compaction { .. } => "compaction",
        Entry::Output { .. } => "output",
        Entry::Limits { .. } => "limits",
    }
}

/// A `u64` (a seq or a time in ms) as SQLite stores integers; saturates, which no
/// real seq or time reaches.
fn to_sql(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The inverse of [`to_sql`]; a negative value (written by hand) reads as 0.
fn from_sql(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while the lock was held dropped any open transaction (rolled back): the
    // connections are still good.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A SQLite error as the journal reports it: one line naming the file, saying what to do
/// where there is something to do.
fn error(path: &Path, err: rusqlite::Error) -> JournalError {
    let path = path.display();
    JournalError::Storage(match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "another process holds the journal {path} and did not let go within {} s; try again once it is done",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(ErrorCode::NotADatabase) => format!("{path} is not a harnessx journal (file is not a database)"),
        Some(ErrorCode::CannotOpen) => {
            format!("cannot open the journal {path} ({err}); its directory must exist and be writable")
        }
        _ => format!("{path}: {err}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::{ApprovalDecision, Parts, ToolResult};
    use serde_json::json;

    #[test]
    fn kind_is_the_serde_tag_of_every_variant() {
        let result = ToolResult {
            call_id: "c".into(),
            name: "t".into(),
            content: "x".into(),
            is_error: false,
            structured_content: None,
            parts: Parts::new(),
        };
        let all = [
            Entry::ModelResponse { turn: 1, response: json!({}) },
            Entry::CallStart {
                turn: 1,
                call_id: "c".into(),
                tool: "t".into(),
                replay: "safe".into(),
                idempotency_key: "k".into(),
            },
            Entry::CallResult { turn: 1, result, timed_out: false, usage: Default::default() },
            Entry::Approval {
                call_id: "c".into(),
                tool: "t".into(),
                decision: ApprovalDecision::Deny,
                arguments_hash: None,
            },
            Entry::Hook {
                call_id: "c".into(),
                arguments_hash: "h".into(),
                outcome: harnessx_core::hooks::PreOutcome {
                    decision: harnessx_core::hooks::PreDecision::Allow,
                    rewritten: None,
                    by: Some("guard".into()),
                },
            },
            Entry::Paused { needs_input: json!(null) },
            Entry::Answer { call_id: "c".into(), text: "yes".into() },
            Entry::LimitReached {
                limit: harnessx_agent::Limit::ToolCalls,
                usage: harnessx_agent::model::Usage::default(),
            },
            Entry::Output {
                output: harnessx_agent::output::OutputSpec {
                    schema: json!({"type": "object"}),
                    mode: harnessx_agent::OutputMode::Native,
                    retries: 1,
                },
            },
            Entry::Final { output: "o".into() },
            Entry::Failed { error: "e".into() },
            Entry::Continues { run_id: "r0".into() },
            Entry::Forked { run_id: "r0".into(), turn: 2 },
            Entry::ContextOverflow { turn: 2, message: "m".into(), limit: Some(8), requested: None },
            Entry::Compaction { turn: 2, attempt: 1, response: json!({}) },
            Entry::Limits { limits: Default::default(), price: None },
            Entry::PromptHook { outcome: Default::default() },
            Entry::ResponseHook { turn: 1, outcome: Default::default() },
            Entry::Blocked { hook: "h".into(), message: "m".into() },
        ];
        for entry in &all {
            assert_eq!(serde_json::to_value(entry).unwrap()["kind"], kind(entry), "{entry:?}");
        }
    }

    #[test]
    fn the_schema_version_counts_the_migrations() {
        let dir = tempfile::tempdir().unwrap();
        let journal = SqliteJournal::open(dir.path().join("j.db")).unwrap();
        let version: u32 =
            lock(&journal.writer).query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(version as usize, MIGRATIONS.len());
    }
}
