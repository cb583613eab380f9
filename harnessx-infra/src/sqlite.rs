//! SQLite files shared by threads and processes, opened and set up one way.
//!
//! - [`open`]: a connection for one thread at a time (`SQLITE_OPEN_NO_MUTEX`: each owner
//!   keeps its connections behind its own lock), read-only or read-write (creating the
//!   file), whose writers wait [`BUSY_TIMEOUT`] for another connection's or process's
//!   lock instead of failing;
//! - [`set_up`]: WAL journal (readers never block the writer nor it them, a commit is one
//!   append) and the schema's version in `PRAGMA user_version`, the migrations a file
//!   lacks run in one `BEGIN IMMEDIATE` transaction. A file of a newer version is left
//!   as it is, for its owner to refuse rather than misread.
//!
//! How hard a commit holds on to the disk (`PRAGMA synchronous`) and other pragmas are
//! each owner's choice, set on the connections it opens.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

/// How long a write waits for another connection (or process) to release the lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`set_up`] retries a set-up another process holds up.
const SETUP_WAIT: Duration = Duration::from_secs(10);

/// What a connection from [`open`] may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only: every change to the database is refused. (WAL readers still write
    /// the shared-memory index, which this allows.)
    Read,
    /// Read and write; the file is created when missing (its folder must exist).
    Write,
}

/// A connection to the file at `path` with [`BUSY_TIMEOUT`], for one thread at a time.
pub fn open(path: &Path, access: Access) -> rusqlite::Result<Connection> {
    let flags = match access {
        Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
        Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Whether `err` is another connection's lock (worth waiting for and trying again).
pub fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(err.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// The schema version the file says it has (`PRAGMA user_version`; 0 for a new file).
pub fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Switches the file to WAL and brings its schema to `version`: when the file's version
/// (returned) is older, `migrate` gets it and runs what the file lacks, then the version
/// is written, all in one immediate transaction. A file at `version` or newer is left
/// untouched; a newer one is the caller's to refuse. Safe to run again, and from several
/// processes at once: switching a new file to WAL does not wait on the busy handler, so
/// a set-up another process holds up is retried for a while.
pub fn set_up(
    writer: &mut Connection,
    version: u32,
    mut migrate: impl FnMut(&Transaction<'_>, u32) -> rusqlite::Result<()>,
) -> rusqlite::Result<u32> {
    let deadline = Instant::now() + SETUP_WAIT;
    // Doubling from 5 ms up to 200 ms. By hand, not with `harnessx_core::Backoff` (the
    // workspace's back-off everywhere else): this crate depends on no harnessx crate.
    let mut pause = Duration::from_millis(5);
    loop {
        match set_up_once(writer, version, &mut migrate) {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            other => return other,
        }
    }
}

fn set_up_once(
    writer: &mut Connection,
    version: u32,
    migrate: &mut impl FnMut(&Transaction<'_>, u32) -> rusqlite::Result<()>,
) -> rusqlite::Result<u32> {
    writer.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0))?;
    let tx = writer.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = user_version(&tx)?;
    if found >= version {
        return Ok(found);
    }
    migrate(&tx, found)?;
    tx.execute_batch(&format!("PRAGMA user_version = {version}"))?;
    tx.commit()?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pragma<T: rusqlite::types::FromSql>(conn: &Connection, name: &str) -> T {
        conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0)).unwrap()
    }

    #[test]
    fn open_sets_the_busy_timeout_and_the_access() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        assert!(open(&path, Access::Read).is_err(), "reading does not create the file");
        let writer = open(&path, Access::Write).unwrap();
        assert!(path.exists(), "writing creates it");
        assert_eq!(pragma::<i64>(&writer, "busy_timeout"), BUSY_TIMEOUT.as_millis() as i64);
        writer.execute_batch("CREATE TABLE t (x)").unwrap();
        let reader = open(&path, Access::Read).unwrap();
        assert_eq!(pragma::<i64>(&reader, "busy_timeout"), BUSY_TIMEOUT.as_millis() as i64);
        assert_eq!(pragma::<i64>(&reader, "query_only"), 0, "refused by the open mode, not a pragma");
        let refused = reader.execute_batch("INSERT INTO t VALUES (1)").unwrap_err();
        assert_eq!(refused.sqlite_error_code(), Some(ErrorCode::ReadOnly));
    }

    #[test]
    fn set_up_turns_on_wal_and_migrates_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut writer = open(&path, Access::Write).unwrap();
        let mut seen = Vec::new();
        let mut migrate = |tx: &Transaction<'_>, found: u32| {
            seen.push(found);
            tx.execute_batch("CREATE TABLE IF NOT EXISTS t (x)")
        };
        assert_eq!(set_up(&mut writer, 3, &mut migrate).unwrap(), 0);
        assert_eq!(set_up(&mut writer, 3, &mut migrate).unwrap(), 3, "already there");
        assert_eq!(seen, [0], "migrated once, from the new file's 0");
        let reader = open(&path, Access::Read).unwrap();
        assert_eq!(pragma::<String>(&reader, "journal_mode"), "wal");
        assert_eq!(user_version(&reader).unwrap(), 3);
        reader.query_row("SELECT count(*) FROM t", [], |row| row.get::<_, i64>(0)).unwrap();
    }

    #[test]
    fn a_newer_file_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = open(&dir.path().join("a.db"), Access::Write).unwrap();
        writer.execute_batch("PRAGMA user_version = 9").unwrap();
        let found = set_up(&mut writer, 3, |_, _| panic!("a newer file is not migrated")).unwrap();
        assert_eq!(found, 9);
        assert_eq!(user_version(&writer).unwrap(), 9);
    }

    #[test]
    fn a_failed_migration_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = open(&dir.path().join("a.db"), Access::Write).unwrap();
        let failed = set_up(&mut writer, 1, |tx, _| tx.execute_batch("CREATE TABLE t (x); NOT SQL"));
        assert!(failed.is_err());
        assert_eq!(user_version(&writer).unwrap(), 0);
        let tables: i64 = writer
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 't'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0, "the migration's first step is rolled back too");
    }

    #[test]
    fn set_up_waits_for_another_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut other = open(&path, Access::Write).unwrap();
        set_up(&mut other, 1, |tx, _| tx.execute_batch("CREATE TABLE t (x)")).unwrap();
        let (locked, is_locked) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let tx = other.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(200));
            tx.commit().unwrap();
        });
        is_locked.recv().unwrap();
        // Without the busy timeout the lock is an error at once, and `is_busy` says so.
        let impatient = open(&path, Access::Write).unwrap();
        impatient.busy_timeout(Duration::ZERO).unwrap();
        assert!(is_busy(&impatient.execute_batch("BEGIN IMMEDIATE").unwrap_err()));
        let mut writer = open(&path, Access::Write).unwrap();
        assert_eq!(set_up(&mut writer, 2, |tx, _| tx.execute_batch("CREATE TABLE u (y)")).unwrap(), 1);
        assert_eq!(user_version(&writer).unwrap(), 2);
        holder.join().unwrap();
    }
}
