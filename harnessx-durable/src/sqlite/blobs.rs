//! The journal's blobs: every medium's bytes kept once, by SHA-256, in the table `blobs`,
//! and the parts that carry them (in entries, in a run's prompt) written as references
//! (`harnessx_core::content::store`).
//!
//! A blob is inserted in the transaction that commits the first entry (or run) referring
//! to it, and never changed or removed; so a reference read from a committed entry names
//! a blob that is there, whichever connection reads it and when.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use harnessx_core::Bytes;
use harnessx_core::content::store::{self, BlobError, BlobSource, StoredBlob};
use harnessx_infra::sqlite::{self, Access};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::lock;

/// Runs `write` (a serialization) with every medium's bytes written as a reference, however
/// small (the journal keeps each blob once); returns its result and the blobs referred to.
pub(super) fn collecting<R>(write: impl FnOnce() -> R) -> (R, Vec<StoredBlob>) {
    store::collecting(0, write)
}

/// Inserts the blobs the table does not hold yet (a blob there already is not bound
/// again: binding copies it).
pub(super) fn insert(tx: &Transaction<'_>, blobs: &[StoredBlob]) -> rusqlite::Result<()> {
    for blob in blobs {
        let held = tx
            .prepare_cached("SELECT 1 FROM blobs WHERE sha256 = ?1")?
            .query_row([&blob.sha256], |_| Ok(()))
            .optional()?
            .is_some();
        if !held {
            tx.prepare_cached("INSERT INTO blobs (sha256, media_type, len, data) VALUES (?1, ?2, ?3, ?4)")?
                .execute(params![blob.sha256, blob.media_type, blob.data.len() as i64, &blob.data[..]])?;
        }
    }
    Ok(())
}

/// Reads the blobs of run `run_id`'s references, on a reader of the journal taken when
/// the first one is needed (a run without media takes none) and given back when dropped.
pub(super) struct JournalBlobs {
    pub(super) run_id: String,
    pub(super) path: PathBuf,
    pub(super) readers: Arc<Mutex<Vec<Connection>>>,
    pub(super) conn: Option<Connection>,
}

impl JournalBlobs {
    fn read(&mut self, sha256: &str) -> Result<Option<Vec<u8>>, String> {
        let conn = match self.conn.take().or_else(|| lock(&self.readers).pop()) {
            Some(conn) => conn,
            None => sqlite::open(&self.path, Access::Read).map_err(|e| e.to_string())?,
        };
        let found = conn
            .prepare_cached("SELECT data FROM blobs WHERE sha256 = ?1")
            .and_then(|mut stmt| stmt.query_row([sha256], |row| row.get::<_, Vec<u8>>(0)).optional())
            .map_err(|e| e.to_string());
        self.conn = Some(conn);
        found
    }
}

impl BlobSource for JournalBlobs {
    fn blob(&mut self, sha256: &str) -> Result<Bytes, BlobError> {
        let read = self.read(sha256);
        let (run_id, path) = (&self.run_id, self.path.display());
        match read {
            // The buffer is taken over, not copied.
            Ok(Some(data)) => Ok(Bytes::from(data)),
            Ok(None) => Err(BlobError(format!(
                "run {run_id:?} refers to blob sha256:{sha256}, which is missing from the journal {path}"
            ))),
            Err(e) => Err(BlobError(format!(
                "blob sha256:{sha256} of run {run_id:?} cannot be read from the journal {path}: {e}"
            ))),
        }
    }
}

impl Drop for JournalBlobs {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            lock(&self.readers).push(conn);
        }
    }
}
