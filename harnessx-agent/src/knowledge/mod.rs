//! Knowledge: a set of concepts the model searches, reads and walks as a graph.
//!
//! A concept is a Markdown file with YAML front matter (`id`, `title`, optional `aliases`
//! and `tags`; other keys are ignored). Its links — `[[id]]` (or an alias) and relative
//! Markdown links to other concept files — are the graph's edges.
//! [`AgentBuilder::knowledge`](crate::AgentBuilder::knowledge) indexes the folders once,
//! in SQLite with FTS5 (the engine the memory bundle searches with), and registers three
//! read-only tools: `search_concepts`, `read_concept` and `get_neighbors`.
//!
//! The index lives in memory unless [`KnowledgeSource::index_file`] names a file; then
//! the next build re-reads only the files whose size or modification time changed (and
//! drops the concepts of files that are gone).
//!
//! A link that names no concept is reported when the index is built, not when the model
//! follows it: each one is logged (`tracing` warning) and listed by
//! [`Knowledge::broken_links`]; [`KnowledgeSource::deny_broken_links`] makes them fail the
//! build instead.

mod index;
mod links;
mod tools;

use std::fmt;
use std::path::{Path, PathBuf};

pub use index::Knowledge;
pub(crate) use tools::knowledge_tools;

/// The tool names.
pub const KNOWLEDGE_TOOL_NAMES: [&str; 3] = ["search_concepts", "read_concept", "get_neighbors"];

/// Where concepts come from: folders of Markdown files (searched recursively; hidden
/// files and folders are skipped).
#[derive(Debug, Clone, Default)]
pub struct KnowledgeSource {
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) index_file: Option<PathBuf>,
    pub(crate) deny_broken_links: bool,
}

impl KnowledgeSource {
    /// The concepts under one folder.
    pub fn dir(path: impl Into<PathBuf>) -> Self {
        Self { dirs: vec![path.into()], ..Self::default() }
    }

    /// The concepts under several folders (their ids must not collide).
    pub fn dirs<I, P>(paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Self { dirs: paths.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    /// Keeps the index in this SQLite file (created if missing), so that the next build
    /// re-reads only the files that changed.
    pub fn index_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.index_file = Some(path.into());
        self
    }

    /// Fails the build on a link that names no concept (by default it is a warning).
    pub fn deny_broken_links(mut self) -> Self {
        self.deny_broken_links = true;
        self
    }

    /// The sources together: the folders of both; the other's index file and strictness
    /// when set.
    pub(crate) fn merge(&mut self, other: KnowledgeSource) {
        self.dirs.extend(other.dirs);
        if other.index_file.is_some() {
            self.index_file = other.index_file;
        }
        self.deny_broken_links |= other.deny_broken_links;
    }
}

/// Why a knowledge source could not be indexed. Each message is one line naming the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KnowledgeError {
    /// A concept whose front matter is missing or invalid.
    #[error("{}:{line}: invalid concept front matter: {message}", path.display())]
    FrontMatter {
        /// The file.
        path: PathBuf,
        /// The line (1-based) of the problem.
        line: u64,
        /// What was wrong.
        message: String,
    },
    /// A folder or file could not be read.
    #[error("cannot read knowledge at {}: {message}", path.display())]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
    /// Two concepts with one id.
    #[error("two concepts have the id {id:?} ({} and {}): change one", first.display(), second.display())]
    DuplicateId {
        /// The id.
        id: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// Links that name no concept, with [`KnowledgeSource::deny_broken_links`].
    #[error("{} broken link(s), the first: {}", .0.len(), .0[0])]
    BrokenLinks(Vec<BrokenLink>),
    /// The SQLite index failed.
    #[error("knowledge index: {0}")]
    Index(String),
}

impl From<rusqlite::Error> for KnowledgeError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Index(e.to_string())
    }
}

/// A link that names no concept, found when indexing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    /// The concept the link is in.
    pub concept: String,
    /// Its file.
    pub path: PathBuf,
    /// The link as written: `[[target]]` or `(path.md)`.
    pub link: String,
}

impl fmt::Display for BrokenLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} in concept {:?} names no concept", self.path.display(), self.link, self.concept)
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConceptHit {
    /// The concept's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// A line of its text around the words that matched.
    pub snippet: String,
    /// Higher is better (the negated `bm25` score).
    pub score: f64,
}

/// A concept as `read_concept` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Concept {
    /// The id.
    pub id: String,
    /// The title.
    pub title: String,
    /// Other names it is linked and found by.
    pub aliases: Vec<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The Markdown body (front matter removed).
    pub body: String,
}

/// A linked concept.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConceptRef {
    /// The id.
    pub id: String,
    /// The title.
    pub title: String,
}

/// The concepts one links to and those linking to it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Neighbors {
    /// Concepts it links to, by id.
    pub outgoing: Vec<ConceptRef>,
    /// Concepts that link to it, by id.
    pub incoming: Vec<ConceptRef>,
}

/// The Markdown files under `dir`, sorted, hidden entries and symbolic links skipped.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), KnowledgeError> {
    let io = |e: std::io::Error| KnowledgeError::Io { path: dir.to_path_buf(), message: e.to_string() };
    let mut entries: Vec<_> = std::fs::read_dir(dir).map_err(io)?.collect::<Result<_, _>>().map_err(io)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(io)?;
        if kind.is_dir() {
            markdown_files(&entry.path(), out)?;
        } else if kind.is_file() && name.to_ascii_lowercase().ends_with(".md") {
            out.push(entry.path());
        }
    }
    Ok(())
}
