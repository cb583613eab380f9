//! [`Knowledge`]: the concepts in SQLite — a table of concepts with an external-content
//! FTS5 index over id, title, aliases, tags and body (`porter` over `unicode61`, ranked
//! by weighted `bm25`, as the memory bundle's store), a table of resolved edges, and the
//! size and modification time of each file read, so a persistent index re-reads only
//! what changed.
//!
//! The full-text index is kept in step by this code, not by triggers: a few changed
//! files are updated row by row, but a first build (or one where many files changed)
//! fills the concepts table and then rebuilds the full-text index in one pass, which is
//! several times faster than indexing row by row (see "Knowledge" in
//! docs/performance.md).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use harnessx_infra::sqlite::{self, Access};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Deserialize;

use super::links::{RawLink, extract, normalise, resolve_path};
use super::{
    BrokenLink, Concept, ConceptHit, ConceptRef, KnowledgeError, KnowledgeSource, Neighbors, markdown_files,
};
use crate::front_matter::{self, one_line};
use harnessx_builtin::fts::{Coverage, among_rows, any_of, fts_terms, snippet};
use harnessx_core::tool::name::{repair_key, suggestions};

/// The schema version this code writes (`PRAGMA user_version`); an index file of
/// another version is rebuilt.
const SCHEMA_VERSION: u32 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    mtime INTEGER NOT NULL,
    size INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS concepts (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    title TEXT NOT NULL,
    aliases TEXT NOT NULL,
    tags TEXT NOT NULL,
    body TEXT NOT NULL,
    links TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS concepts_by_path ON concepts(path);
CREATE VIRTUAL TABLE IF NOT EXISTS concepts_fts USING fts5(
    id, title, aliases, tags, body,
    content = 'concepts', content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS edges (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_target ON edges(target, source);
";

/// The weights of `bm25` per column: id, title, aliases, tags, body.
const RANK: &str = "bm25(concepts_fts, 4.0, 8.0, 6.0, 2.0, 1.0)";

/// The most results one search returns.
pub(crate) const MAX_LIMIT: usize = 50;

/// The words of a search result's snippet.
const SNIPPET_WORDS: usize = 16;

/// A search whose words, taken together, more concepts match than this ranks only the
/// concepts holding the most of its words (as the memory store; see
/// [`Coverage::narrow`]).
const EXACT_RANK_LIMIT: usize = 1_000;

/// More changed (or removed) files than this, or than a quarter of those indexed, and the
/// full-text index is rebuilt in one pass rather than updated row by row.
const REBUILD_THRESHOLD: usize = 200;

/// The front matter of a concept.
#[derive(Deserialize)]
struct FrontMatter {
    id: String,
    title: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
}

/// The ids, and the other names a concept is found by.
#[derive(Debug, Default)]
struct Names {
    ids: BTreeSet<String>,
    /// An alias (exactly as written) to its concept.
    aliases: HashMap<String, String>,
    /// The formatting-insensitive key of each id and alias to the concepts it names.
    keys: HashMap<String, Vec<String>>,
}

impl Names {
    fn add(&mut self, id: &str, aliases: &[String]) {
        self.ids.insert(id.to_owned());
        for name in std::iter::once(id).chain(aliases.iter().map(String::as_str)) {
            let ids = self.keys.entry(repair_key(name)).or_default();
            if !ids.iter().any(|i| i == id) {
                ids.push(id.to_owned());
            }
        }
        for alias in aliases {
            self.aliases.entry(alias.clone()).or_insert_with(|| id.to_owned());
        }
    }

    /// The concept `name` means: an id, an alias, or (by case and separators only) exactly
    /// one of them. `Err` holds the candidates when it could mean several.
    fn resolve(&self, name: &str) -> Result<String, Vec<String>> {
        let name = name.trim();
        if self.ids.contains(name) {
            return Ok(name.to_owned());
        }
        if let Some(id) = self.aliases.get(name) {
            return Ok(id.clone());
        }
        match self.keys.get(&repair_key(name)).map(Vec::as_slice) {
            Some([only]) => Ok(only.clone()),
            Some(many) => Err(many.to_vec()),
            None => Err(Vec::new()),
        }
    }
}

/// An indexed knowledge source. Safe to share between threads; queries take turns on
/// one SQLite connection (each is well under a millisecond on small sets; see "Knowledge"
/// in docs/performance.md).
#[derive(Debug)]
pub struct Knowledge {
    conn: Mutex<Connection>,
    names: Names,
    broken: Vec<BrokenLink>,
}

impl Knowledge {
    /// Indexes a source: reads every changed Markdown file's front matter and links,
    /// resolves the links, and reports broken ones.
    pub fn open(source: &KnowledgeSource) -> Result<Self, KnowledgeError> {
        let mut conn = match &source.index_file {
            // Opened as every SQLite file of the workspace: another process indexing the
            // same file is waited for, not an error.
            Some(path) => sqlite::open(path, Access::Write)?,
            None => Connection::open_in_memory()?,
        };
        if sqlite::user_version(&conn)? != SCHEMA_VERSION {
            conn.execute_batch(
                "DROP TABLE IF EXISTS concepts_fts; DROP TABLE IF EXISTS concepts; \
                 DROP TABLE IF EXISTS edges; DROP TABLE IF EXISTS files;",
            )?;
        }
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
        let mut files = Vec::new();
        for dir in &source.dirs {
            markdown_files(dir, &mut files)?;
        }
        let tx = conn.transaction()?;
        sync_files(&tx, &files)?;
        let (names, broken) = link(&tx)?;
        for b in &broken {
            tracing::warn!(concept = %b.concept, path = %b.path.display(), link = %b.link, "broken knowledge link");
        }
        if source.deny_broken_links && !broken.is_empty() {
            return Err(KnowledgeError::BrokenLinks(broken));
        }
        tx.commit()?;
        Ok(Self { conn: Mutex::new(conn), names, broken })
    }

    /// The links that name no concept, found when the index was built.
    pub fn broken_links(&self) -> &[BrokenLink] {
        &self.broken
    }

    /// How many concepts there are.
    pub fn len(&self) -> usize {
        self.names.ids.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.names.ids.is_empty()
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The best `limit` concepts (at most 50) for `query`, ranked by `bm25`: any of the
    /// query's words, in any column, the title and aliases weighing most. The query is
    /// cut into words; nothing in it is read as FTS5 syntax.
    ///
    /// A broad query (its words together match more than 1,000 concepts) ranks only the
    /// concepts holding the most of its words; the snippet is made for the results only.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<ConceptHit>, KnowledgeError> {
        let terms = fts_terms(query);
        let limit = limit.min(MAX_LIMIT);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self.conn();
        let any = any_of(&terms);
        // The query ranked with: every word, or (a broad query) one that matches only the
        // concepts holding the most of them, still naming every word once.
        let ranked = if terms.len() == 1 {
            rank(&conn, &any, None, limit)?
        } else {
            let coverage = Coverage::count(&terms, |term| postings(&conn, term))?;
            match coverage.narrow(limit, terms.len()) {
                Some(narrowed) if coverage.rows() > EXACT_RANK_LIMIT => {
                    rank(&conn, &narrowed.query, Some(&narrowed.rows), limit)?
                }
                _ => rank(&conn, &any, None, limit)?,
            }
        };
        // The snippets, for the results only, made from their text (FTS5's `snippet()`
        // would run the full-text query again to make them).
        let mut stmt = conn.prepare_cached("SELECT id, title, body FROM concepts WHERE rowid = ?1")?;
        let mut hits = Vec::with_capacity(ranked.len());
        for (row, score) in ranked {
            let (id, title, body): (String, String, String) =
                stmt.query_row(params![row], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            hits.push(ConceptHit { id, title, score, snippet: snippet(&body, query, SNIPPET_WORDS) });
        }
        Ok(hits)
    }

    /// The concept `id` names (an id, an alias, or one differing only by case and
    /// separators). `Err` is the text for the model: close ids to try.
    pub fn resolve(&self, id: &str) -> Result<String, String> {
        self.names.resolve(id).map_err(|candidates| {
            if candidates.len() > 1 {
                return format!(
                    "Unknown concept {id:?}: it matches more than one concept: {}. Call again with one of these ids.",
                    candidates.join(", ")
                );
            }
            let close = suggestions(id, self.names.ids.iter().map(String::as_str), 3);
            let mut text = format!("Unknown concept {id:?}.");
            if !close.is_empty() {
                text.push_str(&format!(" Did you mean: {}?", close.join(", ")));
            }
            text.push_str(" Find concept ids with search_concepts.");
            text
        })
    }

    /// The concept with this exact id.
    pub fn concept(&self, id: &str) -> Result<Option<Concept>, KnowledgeError> {
        let conn = self.conn();
        let row = conn
            .prepare_cached("SELECT id, title, aliases, tags, body FROM concepts WHERE id = ?1")?
            .query_row(params![id], |row| {
                Ok(Concept {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    aliases: serde_json::from_str(&row.get::<_, String>(2)?).unwrap_or_default(),
                    tags: serde_json::from_str(&row.get::<_, String>(3)?).unwrap_or_default(),
                    body: row.get(4)?,
                })
            })
            .optional()?;
        Ok(row)
    }

    /// The concepts the concept `id` links to and those linking to it, sorted by id.
    pub fn neighbors(&self, id: &str) -> Result<Neighbors, KnowledgeError> {
        let conn = self.conn();
        let list = |sql: &str| -> Result<Vec<ConceptRef>, KnowledgeError> {
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = stmt.query_map(params![id], |r| Ok(ConceptRef { id: r.get(0)?, title: r.get(1)? }))?;
            Ok(rows.collect::<Result<_, _>>()?)
        };
        Ok(Neighbors {
            outgoing: list(
                "SELECT c.id, c.title FROM edges e JOIN concepts c ON c.id = e.target \
                 WHERE e.source = ?1 ORDER BY c.id",
            )?,
            incoming: list(
                "SELECT c.id, c.title FROM edges e JOIN concepts c ON c.id = e.source \
                 WHERE e.target = ?1 ORDER BY c.id",
            )?,
        })
    }
}

/// The concepts that hold one FTS5 term, by row id.
fn postings(conn: &Connection, term: &str) -> Result<Vec<i64>, KnowledgeError> {
    let mut stmt = conn.prepare_cached("SELECT rowid FROM concepts_fts WHERE concepts_fts MATCH ?1")?;
    let rows = stmt.query_map(params![term], |row| row.get::<_, i64>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The best `limit` concepts `fts` matches (with `among`, of those rows only), by row id,
/// best first, with their scores (higher is better: the negated `bm25`).
fn rank(
    conn: &Connection,
    fts: &str,
    among: Option<&[i64]>,
    limit: usize,
) -> Result<Vec<(i64, f64)>, KnowledgeError> {
    let filter = among.map_or_else(String::new, |rows| among_rows("concepts_fts.rowid", rows));
    // CROSS JOIN keeps the full-text index the outer loop; the join gives ties an order.
    let sql = format!(
        "SELECT concepts_fts.rowid, {RANK} AS score \
         FROM concepts_fts CROSS JOIN concepts c ON c.rowid = concepts_fts.rowid \
         WHERE concepts_fts MATCH ?1 {filter}ORDER BY score, c.id LIMIT ?2"
    );
    let run = |stmt: &mut rusqlite::Statement<'_>| -> Result<Vec<(i64, f64)>, KnowledgeError> {
        let rows = stmt.query_map(params![fts, limit as i64], |r| Ok((r.get(0)?, -r.get::<_, f64>(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    };
    // A filtered query is new text each time: prepared afresh, not kept in the cache.
    match among {
        Some(_) => run(&mut conn.prepare(&sql)?),
        None => run(&mut *conn.prepare_cached(&sql)?),
    }
}

/// A file's size and modification time (nanoseconds), as the index remembers them.
fn stamp(path: &Path) -> Result<(i64, i64), KnowledgeError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| KnowledgeError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Ok((mtime, i64::try_from(meta.len()).unwrap_or(i64::MAX)))
}

/// Brings the concepts in step with `files`: the concepts of files that are gone or
/// changed are dropped, then the changed files are read again.
fn sync_files(tx: &rusqlite::Transaction<'_>, files: &[PathBuf]) -> Result<(), KnowledgeError> {
    let mut known: HashMap<String, (i64, i64)> = HashMap::new();
    {
        let mut stmt = tx.prepare("SELECT path, mtime, size FROM files")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))? {
            let (path, stamp) = row?;
            known.insert(path, stamp);
        }
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut changed: Vec<(String, &PathBuf, (i64, i64))> = Vec::new();
    for file in files {
        let key = normalise(file).to_string_lossy().into_owned();
        let now = stamp(file)?;
        if known.get(&key) != Some(&now) {
            changed.push((key.clone(), file, now));
        }
        seen.insert(key);
    }
    let gone: Vec<&String> = known.keys().filter(|k| !seen.contains(*k)).collect();
    let stale = gone.len() + changed.len();
    // Row by row, or (many changes) the concepts table first and the full-text index
    // rebuilt from it at the end.
    let rebuild = stale > REBUILD_THRESHOLD || stale * 4 > known.len();
    let mut unindex = tx.prepare_cached(
        "INSERT INTO concepts_fts(concepts_fts, rowid, id, title, aliases, tags, body) \
         SELECT 'delete', rowid, id, title, aliases, tags, body FROM concepts WHERE path = ?1",
    )?;
    let mut drop_concepts = tx.prepare_cached("DELETE FROM concepts WHERE path = ?1")?;
    for path in gone.iter().copied().chain(changed.iter().map(|(key, _, _)| key)) {
        if !rebuild {
            unindex.execute(params![path])?;
        }
        drop_concepts.execute(params![path])?;
    }
    for path in &gone {
        tx.execute("DELETE FROM files WHERE path = ?1", params![path])?;
    }
    let mut index = tx.prepare_cached(
        "INSERT INTO concepts_fts(rowid, id, title, aliases, tags, body) \
         SELECT rowid, id, title, aliases, tags, body FROM concepts WHERE rowid = ?1",
    )?;
    let mut owner = tx.prepare_cached("SELECT path FROM concepts WHERE id = ?1")?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO concepts (id, path, title, aliases, tags, body, links) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut remember =
        tx.prepare_cached("INSERT OR REPLACE INTO files (path, mtime, size) VALUES (?1, ?2, ?3)")?;
    for (key, file, (mtime, size)) in changed {
        let text = std::fs::read_to_string(file)
            .map_err(|e| KnowledgeError::Io { path: file.clone(), message: e.to_string() })?;
        let (fm, body) = front_matter::parse::<FrontMatter>(&text).map_err(|e| {
            KnowledgeError::FrontMatter { path: file.clone(), line: e.line, message: e.message }
        })?;
        let id = fm.id.trim();
        if id.is_empty() {
            return Err(KnowledgeError::FrontMatter {
                path: file.clone(),
                line: 1,
                message: "`id` is empty".into(),
            });
        }
        if let Some(first) = owner.query_row(params![id], |r| r.get::<_, String>(0)).optional()? {
            return Err(KnowledgeError::DuplicateId {
                id: id.to_owned(),
                first: PathBuf::from(first),
                second: file.clone(),
            });
        }
        let aliases: Vec<String> =
            fm.aliases.iter().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect();
        let links = serde_json::to_string(&extract(body)).expect("links serialise");
        insert.execute(params![
            id,
            key,
            one_line(&fm.title),
            serde_json::to_string(&aliases).expect("strings serialise"),
            serde_json::to_string(&fm.tags).expect("strings serialise"),
            body,
            links
        ])?;
        if !rebuild {
            index.execute(params![tx.last_insert_rowid()])?;
        }
        remember.execute(params![key, mtime, size])?;
    }
    if rebuild {
        tx.execute_batch("INSERT INTO concepts_fts(concepts_fts) VALUES ('rebuild')")?;
    }
    Ok(())
}

/// Resolves every concept's links into `edges` (rebuilt each time: a new concept can
/// mend a link of an unchanged one), returning the names and the broken links.
fn link(tx: &rusqlite::Transaction<'_>) -> Result<(Names, Vec<BrokenLink>), KnowledgeError> {
    let mut names = Names::default();
    let mut by_path: HashMap<PathBuf, String> = HashMap::new();
    let mut concepts: Vec<(String, PathBuf, Vec<RawLink>)> = Vec::new();
    {
        let mut stmt = tx.prepare("SELECT id, path, aliases, links FROM concepts ORDER BY path, id")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        for row in rows {
            let (id, path, aliases, links) = row?;
            let aliases: Vec<String> = serde_json::from_str(&aliases).unwrap_or_default();
            names.add(&id, &aliases);
            let path = PathBuf::from(path);
            by_path.insert(path.clone(), id.clone());
            concepts.push((id, path, serde_json::from_str(&links).unwrap_or_default()));
        }
    }
    tx.execute("DELETE FROM edges", [])?;
    let mut insert = tx.prepare_cached("INSERT OR IGNORE INTO edges (source, target) VALUES (?1, ?2)")?;
    let mut broken = Vec::new();
    for (id, path, links) in concepts {
        for raw in links {
            let target = match &raw {
                RawLink::Wiki(name) => names.resolve(name).ok(),
                RawLink::Path(p) => by_path.get(&resolve_path(&path, p)).cloned(),
            };
            match target {
                Some(target) if target != id => {
                    insert.execute(params![id, target])?;
                }
                Some(_) => {}
                None => {
                    broken.push(BrokenLink { concept: id.clone(), path: path.clone(), link: raw.written() })
                }
            }
        }
    }
    Ok((names, broken))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_ids_aliases_and_formatting_only() {
        let mut names = Names::default();
        names.add("black-hole", &["Black Hole".into(), "singularity".into()]);
        names.add("blackbody", &[]);
        assert_eq!(names.resolve("black-hole").unwrap(), "black-hole");
        assert_eq!(names.resolve("singularity").unwrap(), "black-hole");
        assert_eq!(names.resolve("BlackHole").unwrap(), "black-hole");
        // Case and separators in any combination (a word boundary added or left out).
        assert_eq!(names.resolve("black_body").unwrap(), "blackbody");
        assert_eq!(names.resolve("BLACKHOLE").unwrap(), "black-hole");
        assert_eq!(names.resolve("blak-hole").unwrap_err(), Vec::<String>::new());
        names.add("black_body_radiation", &["Blackbody".into()]);
        let mut both = names.resolve("BlackBody").unwrap_err();
        both.sort();
        assert_eq!(both, ["black_body_radiation", "blackbody"], "an alias that could mean two concepts");
    }
}
