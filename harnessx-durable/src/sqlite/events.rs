//! A run's event log: the events whoever watched the run saw (`harnessx serve` streams
//! them to its clients), kept in the table `events` in order, so a client that reconnects
//! (after its own drop, or the server's restart) gets every event it missed.
//!
//! Events are JSON text, numbered from 0 per run; the log only grows. It is apart from the
//! journal's entries: a run resumes from its entries, never from its events.

use rusqlite::params;

use super::{Failure, SqliteJournal, from_sql, to_sql};
use crate::journal::JournalError;

impl SqliteJournal {
    /// Appends `events` (each one JSON text) to run `run_id`'s event log, in one
    /// transaction; returns the number of the first (the log's length before).
    pub fn append_events(&self, run_id: &str, events: &[String]) -> Result<u64, JournalError> {
        self.write(|tx| {
            let first: i64 = tx
                .prepare_cached("SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE run_id = ?1")?
                .query_row([run_id], |row| row.get(0))?;
            let mut insert =
                tx.prepare_cached("INSERT INTO events (run_id, seq, data) VALUES (?1, ?2, ?3)")?;
            for (i, event) in events.iter().enumerate() {
                insert.execute(params![run_id, first + i as i64, event])?;
            }
            Ok::<_, Failure>(from_sql(first))
        })
    }

    /// Run `run_id`'s events from number `from` on, at most `limit` of them, with their
    /// numbers.
    pub fn events(&self, run_id: &str, from: u64, limit: usize) -> Result<Vec<(u64, String)>, JournalError> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT seq, data FROM events WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
            )?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = stmt.query_map(params![run_id, to_sql(from), limit], |row| {
                Ok((from_sql(row.get::<_, i64>(0)?), row.get::<_, String>(1)?))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_numbered_per_run_and_read_from_any_point() {
        let dir = tempfile::tempdir().unwrap();
        let journal = SqliteJournal::open(dir.path().join("j.db")).unwrap();
        assert_eq!(journal.append_events("a", &["{\"n\":0}".into(), "{\"n\":1}".into()]).unwrap(), 0);
        assert_eq!(journal.append_events("b", &["{}".into()]).unwrap(), 0);
        assert_eq!(journal.append_events("a", &["{\"n\":2}".into()]).unwrap(), 2);
        let read = journal.events("a", 1, 10).unwrap();
        assert_eq!(read, [(1, "{\"n\":1}".to_owned()), (2, "{\"n\":2}".to_owned())]);
        assert_eq!(journal.events("a", 0, 1).unwrap().len(), 1);
        assert!(journal.events("a", 3, 10).unwrap().is_empty());
        // Another journal on the file sees them.
        let again = SqliteJournal::open(dir.path().join("j.db")).unwrap();
        assert_eq!(again.events("b", 0, 10).unwrap(), [(0, "{}".to_owned())]);
    }
}
