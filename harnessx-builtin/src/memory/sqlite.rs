//! [`SqliteStore`]: memories in one SQLite file, searched with FTS5.
//!
//! Durability and sharing come from SQLite, configured so:
//! - WAL journal: readers never block the writer nor it them, and a commit is one append;
//! - `synchronous = FULL`: a commit is on disk (fsync'd) before `save` returns, so a kill
//!   -9 — or a power cut — loses nothing that was reported saved;
//! - `busy_timeout` of [`BUSY_TIMEOUT`]: several processes may write the same file; a
//!   writer waits for the lock instead of failing;
//! - each write is one `BEGIN IMMEDIATE` transaction (the lock taken up front, so two
//!   writers never deadlock upgrading a read lock).
//!
//! Opening and setting up the file are the workspace's (`harnessx_infra::sqlite`), as for
//! every SQLite file of harnessx.
//!
//! The text, key and tags are indexed by an external-content FTS5 table kept in step by
//! triggers, with the `porter` tokenizer over `unicode61` (diacritics folded), so words
//! sharing a stem match; results are ranked by `bm25`. Queries from the model never reach
//! FTS5 as syntax: see [`crate::fts`]. A broad query (one whose words, together, more
//! than [`EXACT_RANK_LIMIT`] memories match) ranks only the memories holding the most
//! of its words; see [`SqliteStore`]'s `search`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use harnessx_core::memory::{check_text, clean_tags};
use harnessx_core::{Memory, MemoryError, MemoryHit, MemoryStore, MemoryUpdate, NewMemory, Saved};
use harnessx_infra::sqlite::{self, Access};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::{SNIPPET_CHARS, now_ms};
use crate::fts::{Coverage, among_rows, any_of, fts_terms};

pub use harnessx_infra::sqlite::BUSY_TIMEOUT;

/// The schema version this code writes (`PRAGMA user_version`).
const SCHEMA_VERSION: u32 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    key TEXT,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS memories_by_key ON memories(namespace, key) WHERE key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_by_recency ON memories(namespace, updated_at DESC, id DESC);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    text, key, tags,
    content = 'memories', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text, key, tags) VALUES (new.id, new.text, new.key, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, key, tags) VALUES ('delete', old.id, old.text, old.key, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_update AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text, key, tags) VALUES ('delete', old.id, old.text, old.key, old.tags);
    INSERT INTO memories_fts(rowid, text, key, tags) VALUES (new.id, new.text, new.key, new.tags);
END;
";

/// The columns every read selects, in [`memory_from_row`]'s order.
const COLUMNS: &str = "m.id, m.key, m.text, m.tags, m.created_at, m.updated_at";

/// Memories in one SQLite file (created if missing). Safe to share between threads and
/// between processes: WAL journal, `synchronous = FULL`, a [`BUSY_TIMEOUT`] for
/// writers waiting on another process's lock, and one `BEGIN IMMEDIATE` transaction
/// per write (see `docs/builtin-memory.md`).
///
/// ```
/// use harnessx_builtin::memory::SqliteStore;
/// use harnessx_core::{MemoryStore, NewMemory};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("memories.db");
/// let id = SqliteStore::open(&path).unwrap().save("me", NewMemory::new("The deploy runs on Fridays")).unwrap().memory.id;
/// // Another store on the same file (another process, or after a restart) sees it.
/// let hits = SqliteStore::open(&path).unwrap().search("me", "when do we deploy?", 3).unwrap();
/// assert_eq!(hits[0].memory.id, id);
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    /// The one connection this store writes through (SQLite serialises writers anyway).
    writer: Mutex<Connection>,
    /// Idle read-only connections; a read takes one or opens another, so reads run
    /// concurrently.
    readers: Mutex<Vec<Connection>>,
    /// [`EXACT_RANK_LIMIT`], lowered by the unit tests to reach the broad path.
    exact_rank_limit: usize,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`. The parent directory must exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        let mut writer = connect(&path, Access::Write)?;
        // The schema, when the file lacks it (safe to run from several processes at once).
        let version =
            sqlite::set_up(&mut writer, SCHEMA_VERSION, |tx, _| tx.execute_batch(SCHEMA)).map_err(storage)?;
        if version > SCHEMA_VERSION {
            return Err(MemoryError::Storage(format!(
                "the file was written by a newer version of harnessx (schema {version}, this one knows {SCHEMA_VERSION}); upgrade harnessx or use another file"
            )));
        }
        Ok(Self {
            path,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            exact_rank_limit: EXACT_RANK_LIMIT,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` in one write transaction, committed when it returns `Ok`.
    fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        // A panic inside `f` drops the transaction (rolled back); the connection is fine.
        let mut conn = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(storage)?;
        let out = f(&tx)?;
        tx.commit().map_err(storage)?;
        Ok(out)
    }

    /// Runs `f` on an idle reader (opening one when none is idle), then returns it.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, MemoryError>) -> Result<T, MemoryError> {
        let idle = self.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => connect(&self.path, Access::Read)?,
        };
        let out = f(&conn);
        self.readers.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
        out
    }
}

/// A connection with the store's settings ([`BUSY_TIMEOUT`], every commit fsync'd,
/// foreign keys enforced).
fn connect(path: &Path, access: Access) -> Result<Connection, MemoryError> {
    let conn = sqlite::open(path, access).map_err(storage)?;
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;").map_err(storage)?;
    Ok(conn)
}

/// A SQLite error as the store reports it: lock contention is [`MemoryError::Busy`] (worth
/// retrying), the rest [`MemoryError::Storage`].
fn storage(err: rusqlite::Error) -> MemoryError {
    if sqlite::is_busy(&err) {
        MemoryError::Busy(err.to_string())
    } else {
        MemoryError::Storage(err.to_string())
    }
}

/// The row id an id names, or `None` (then no memory has it).
fn row_id(id: &str) -> Option<i64> {
    id.trim().parse().ok()
}

fn not_found(id: &str) -> MemoryError {
    MemoryError::NotFound { id: id.to_owned() }
}

fn memory_from_row(row: &Row<'_>) -> rusqlite::Result<Memory> {
    let tags: String = row.get(3)?;
    Ok(Memory {
        id: row.get::<_, i64>(0)?.to_string(),
        key: row.get(1)?,
        text: row.get(2)?,
        // Written by this store as a JSON array of strings; anything else reads as none.
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        created_at_ms: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
        updated_at_ms: u64::try_from(row.get::<_, i64>(5)?).unwrap_or(0),
    })
}

fn tags_json(tags: &[String]) -> String {
    serde_json::to_string(tags).expect("a list of strings serialises")
}

/// Milliseconds as SQLite stores them.
fn ms(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

fn select_one(conn: &Connection, namespace: &str, id: i64) -> Result<Option<Memory>, MemoryError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1 AND m.namespace = ?2"))
        .and_then(|mut stmt| stmt.query_row(params![id, namespace], memory_from_row).optional())
        .map_err(storage)
}

impl MemoryStore for SqliteStore {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn save(&self, namespace: &str, memory: NewMemory) -> Result<Saved, MemoryError> {
        check_text(&memory.text)?;
        let tags = tags_json(&clean_tags(&memory.tags));
        let now = ms(now_ms());
        self.write(|tx| {
            let existing: Option<i64> = match &memory.key {
                Some(key) => tx
                    .prepare_cached("SELECT id FROM memories WHERE namespace = ?1 AND key = ?2")
                    .and_then(|mut stmt| stmt.query_row(params![namespace, key], |r| r.get(0)).optional())
                    .map_err(storage)?,
                None => None,
            };
            let id = match existing {
                Some(id) => {
                    tx.prepare_cached(
                        "UPDATE memories SET text = ?1, tags = ?2, updated_at = max(?3, created_at) WHERE id = ?4",
                    )
                    .and_then(|mut stmt| stmt.execute(params![memory.text, tags, now, id]))
                    .map_err(storage)?;
                    id
                }
                None => tx
                    .prepare_cached(
                        "INSERT INTO memories (namespace, key, text, tags, created_at, updated_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?5) RETURNING id",
                    )
                    .and_then(|mut stmt| {
                        stmt.query_row(params![namespace, memory.key, memory.text, tags, now], |r| r.get(0))
                    })
                    .map_err(storage)?,
            };
            let saved = select_one(tx, namespace, id)?.ok_or_else(|| not_found(&id.to_string()))?;
            Ok(Saved { memory: saved, replaced: existing.is_some() })
        })
    }

    fn search(&self, namespace: &str, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError> {
        let terms = fts_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let any = any_of(&terms);
        self.read(|conn| {
            if terms.len() == 1 {
                return rank(conn, namespace, &any, None, limit);
            }
            // How many of the query's words each memory holds, from each word's list of
            // memories (no ranking, so cheap).
            let coverage = Coverage::count(&terms, |term| postings(conn, term))?;
            if coverage.rows() <= self.exact_rank_limit {
                return rank(conn, namespace, &any, None, limit);
            }
            // A broad query: more memories match some word than are worth ranking each
            // time. Rank those that hold the most words (see `Coverage::narrow`); every
            // word is still in the ranking query, once, so the scores are the ones
            // ranking every match would give.
            let mut most = terms.len();
            loop {
                let Some(narrowed) = coverage.narrow(limit, most) else {
                    return rank(conn, namespace, &any, None, limit);
                };
                let hits = rank(conn, namespace, &narrowed.query, Some(&narrowed.rows), limit)?;
                // The counts are over every namespace: when some candidates belong to
                // another one, too few may be left here. Take one word fewer then.
                if hits.len() >= limit {
                    return Ok(hits);
                }
                most = narrowed.need - 1;
            }
        })
    }

    fn get(&self, namespace: &str, id: &str) -> Result<Option<Memory>, MemoryError> {
        let Some(row) = row_id(id) else { return Ok(None) };
        self.read(|conn| select_one(conn, namespace, row))
    }

    fn update(&self, namespace: &str, id: &str, update: MemoryUpdate) -> Result<Memory, MemoryError> {
        if let Some(text) = &update.text {
            check_text(text)?;
        }
        let row = row_id(id).ok_or_else(|| not_found(id))?;
        let now = ms(now_ms());
        self.write(|tx| {
            let mut memory = select_one(tx, namespace, row)?.ok_or_else(|| not_found(id))?;
            if let Some(text) = update.text {
                memory.text = text;
            }
            if let Some(tags) = update.tags {
                memory.tags = clean_tags(&tags);
            }
            tx.prepare_cached(
                "UPDATE memories SET text = ?1, tags = ?2, updated_at = max(?3, created_at) WHERE id = ?4",
            )
            .and_then(|mut stmt| stmt.execute(params![memory.text, tags_json(&memory.tags), now, row]))
            .map_err(storage)?;
            select_one(tx, namespace, row)?.ok_or_else(|| not_found(id))
        })
    }

    fn delete(&self, namespace: &str, id: &str) -> Result<Memory, MemoryError> {
        let row = row_id(id).ok_or_else(|| not_found(id))?;
        self.write(|tx| {
            let memory = select_one(tx, namespace, row)?.ok_or_else(|| not_found(id))?;
            tx.prepare_cached("DELETE FROM memories WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute(params![row]))
                .map_err(storage)?;
            Ok(memory)
        })
    }

    fn list(&self, namespace: &str, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM memories m WHERE m.namespace = ?1 \
                     ORDER BY m.updated_at DESC, m.id DESC LIMIT ?2"
                ))
                .map_err(storage)?;
            let rows = stmt.query_map(params![namespace, limit], memory_from_row).map_err(storage)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(storage)
        })
    }
}

/// A search whose words, taken together, more memories match than this is broad: it
/// ranks the memories that hold the most of its words instead of every match (see
/// "Memory search" in docs/performance.md).
const EXACT_RANK_LIMIT: usize = 1_000;

/// The memories (of any namespace) that hold `term`, by row id.
fn postings(conn: &Connection, term: &str) -> Result<Vec<i64>, MemoryError> {
    let mut stmt =
        conn.prepare_cached("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1").map_err(storage)?;
    let rows = stmt.query_map(params![term], |row| row.get::<_, i64>(0)).map_err(storage)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(storage)
}

/// The best `limit` memories of `namespace` that `fts` matches, ranked by `bm25()`.
/// With `among`, only the memories with those row ids are ranked (the rest of the
/// matches are still read, but `bm25()` and the excerpt are computed only for these).
fn rank(
    conn: &Connection,
    namespace: &str,
    fts: &str,
    among: Option<&[i64]>,
    limit: usize,
) -> Result<Vec<MemoryHit>, MemoryError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // `snippet` counts tokens; about 6 characters a token keeps it near SNIPPET_CHARS.
    let tokens = (SNIPPET_CHARS / 6).clamp(1, 64);
    let filter = among.map_or_else(String::new, |rows| among_rows("memories_fts.rowid", rows));
    // CROSS JOIN keeps the full-text index the outer loop: the other way round, FTS5
    // would run the query again for every memory of the namespace.
    let sql = format!(
        "SELECT {COLUMNS}, bm25(memories_fts, 1.0, 2.0, 2.0) AS score, \
                snippet(memories_fts, 0, '', '', '…', {tokens}) \
         FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid \
         WHERE memories_fts MATCH ?1 {filter}AND m.namespace = ?2 \
         ORDER BY score, m.updated_at DESC, m.id DESC LIMIT ?3"
    );
    let run = |stmt: &mut rusqlite::Statement<'_>| {
        let rows = stmt
            .query_map(params![fts, namespace, limit], |row| {
                let memory = memory_from_row(row)?;
                // bm25() is smaller for better matches; turn it round so that higher is
                // better, as `MemoryHit::score` promises.
                let score = -row.get::<_, f64>(6)?;
                let snippet: String = row.get(7)?;
                let snippet = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
                Ok(MemoryHit { memory, score, snippet })
            })
            .map_err(storage)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(storage)
    };
    // A filtered query is new text each time: prepared afresh, not kept in the cache.
    match among {
        Some(_) => run(&mut conn.prepare(&sql).map_err(storage)?),
        None => run(&mut *conn.prepare_cached(&sql).map_err(storage)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTES: [&str; 9] = [
        "coffee on friday morning with the team",
        "coffee on friday after lunch",
        "coffee every morning, black",
        "friday morning standup moved",
        "the friday release checklist",
        "morning run along the river",
        "coffee beans from the market",
        "a note about the garden",
        "another note about the garden shed",
    ];

    /// A store on `path` that treats every query matching more than `limit` memories
    /// as broad.
    fn store(path: &Path, limit: usize) -> SqliteStore {
        let mut store = SqliteStore::open(path).unwrap();
        store.exact_rank_limit = limit;
        store
    }

    fn filled() -> (tempfile::TempDir, SqliteStore, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let exact = store(&path, EXACT_RANK_LIMIT);
        for text in NOTES {
            exact.save("me", NewMemory::new(text)).unwrap();
            // Another namespace with the same words must never show up.
            exact.save("other", NewMemory::new(text)).unwrap();
        }
        let broad = store(&path, 2);
        (dir, exact, broad)
    }

    fn ids_and_scores(hits: &[MemoryHit]) -> Vec<(String, f64)> {
        hits.iter().map(|h| (h.memory.id.clone(), (h.score * 1e9).round() / 1e9)).collect()
    }

    #[test]
    fn a_broad_search_ranks_the_memories_holding_most_words_with_the_exact_scores() {
        let (_dir, exact, broad) = filled();
        for limit in 1..=7 {
            let want = exact.search("me", "coffee on friday morning?", limit).unwrap();
            let got = broad.search("me", "coffee on friday morning?", limit).unwrap();
            assert_eq!(ids_and_scores(&got), ids_and_scores(&want), "limit {limit}");
        }
        // A word no memory holds changes no score and must not empty the sets.
        let want = exact.search("me", "coffee friday morning zzyzx", 4).unwrap();
        let got = broad.search("me", "coffee friday morning zzyzx", 4).unwrap();
        assert_eq!(ids_and_scores(&got), ids_and_scores(&want));
        let got = broad.search("me", "coffee friday morning", 3).unwrap();
        let texts: Vec<&str> = got.iter().map(|h| h.memory.text.as_str()).collect();
        assert_eq!(texts[0], NOTES[0], "all three words first");
        assert!(
            texts[1..].iter().all(|t| [NOTES[1], NOTES[2], NOTES[3]].contains(t)),
            "then two of three: {texts:?}"
        );
        assert!(
            got.iter().all(|h| h.memory.id.parse::<i64>().unwrap() % 2 == 1),
            "only this namespace (odd ids)"
        );
    }

    #[test]
    fn a_broad_search_with_too_many_word_sets_ranks_every_match() {
        let (_dir, exact, broad) = filled();
        // Five words: all five, then five sets of four, then ten of three — past the
        // budget, so it ranks every match, which must agree with the exact store.
        let query = "coffee friday morning garden note";
        let want = exact.search("me", query, 9).unwrap();
        let got = broad.search("me", query, 9).unwrap();
        assert_eq!(want.len(), 9);
        assert_eq!(ids_and_scores(&got), ids_and_scores(&want));
    }

    #[test]
    fn a_broad_one_word_search_ranks_every_match() {
        let (_dir, exact, broad) = filled();
        let want = exact.search("me", "garden", 5).unwrap();
        assert_eq!(want.len(), 2);
        assert_eq!(ids_and_scores(&broad.search("me", "garden", 5).unwrap()), ids_and_scores(&want));
    }

    #[test]
    fn postings_list_every_memory_holding_a_word_in_any_namespace() {
        let (_dir, exact, _broad) = filled();
        exact
            .read(|conn| {
                assert_eq!(postings(conn, "\"the\"")?.len(), 12, "six memories in each namespace");
                assert_eq!(postings(conn, "\"mornings\"")?.len(), 8, "four in each, stemmed like the index");
                assert!(postings(conn, "\"zzyzx\"")?.is_empty());
                Ok(())
            })
            .unwrap();
    }
}
