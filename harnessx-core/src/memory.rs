//! [`MemoryStore`]: where the `memory` built-in keeps what the model asked it to remember.
//!
//! The trait is the seam; `harnessx-builtin` implements it (`InMemoryStore` in the
//! process, `SqliteStore` in one SQLite file with full-text search). Every method takes a
//! namespace, so one store can serve several users or agents, each registration of the
//! `memory` bundle working in its own; memories of one namespace are invisible from
//! another, ids included.
//!
//! Methods block: the `memory` tools call them from blocking threads, off the async
//! runtime. A store must be safe to call from several threads at once.

use std::fmt;

/// The id of a memory: unique within its store, never reused after a delete (so an old
/// id the model still remembers cannot name a different memory). Stores choose the form;
/// the built-in ones use decimal integers (`"12"`).
pub type MemoryId = String;

/// A memory to save.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewMemory {
    /// What to remember. Must not be empty.
    pub text: String,
    /// An optional name, unique within the namespace: saving again under the same key
    /// replaces that memory's text and tags (its id stays).
    pub key: Option<String>,
    /// Labels, searched along with the text.
    pub tags: Vec<String>,
}

impl NewMemory {
    /// A memory with this text, no key and no tags.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), key: None, tags: Vec::new() }
    }

    /// With a key.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// With tags.
    pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }
}

/// A change to a saved memory: what is `None` stays as it was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryUpdate {
    /// The new text (must not be empty).
    pub text: Option<String>,
    /// The new tags, replacing the old ones.
    pub tags: Option<Vec<String>>,
}

/// A saved memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    /// Its id.
    pub id: MemoryId,
    /// Its key, if it was saved with one.
    pub key: Option<String>,
    /// Its text.
    pub text: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// When it was first saved, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it was last saved or updated, in milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
}

/// What [`MemoryStore::save`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The memory as stored.
    pub memory: Memory,
    /// Whether it replaced an earlier memory with the same key (which keeps its id).
    pub replaced: bool,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    /// The memory.
    pub memory: Memory,
    /// Relevance: higher is better. Comparable within one search only.
    pub score: f64,
    /// A short excerpt of the text around what matched.
    pub snippet: String,
}

/// Why a store could not do what was asked. The messages are one line, written so that
/// the model (or the developer) knows what to do next, and name no host path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// No memory has this id in the namespace.
    #[error("no memory with id {id}; search_memories or list_memories shows the ids that exist")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The request itself is wrong (empty text, an update that changes nothing).
    #[error("{0}")]
    Invalid(String),
    /// The store is busy (another process holds the write lock for longer than the
    /// store waits); trying again later may work.
    #[error("the memory store is busy ({0}); try again")]
    Busy(String),
    /// The store failed (I/O, a corrupt file).
    #[error("the memory store failed: {0}")]
    Storage(String),
}

/// Where memories live. See the [module documentation](self).
pub trait MemoryStore: Send + Sync + fmt::Debug + 'static {
    /// A short name for messages and logs (`"in-memory"`, `"sqlite"`).
    fn name(&self) -> &str;

    /// Saves a memory in `namespace`. With a key that already names a memory there, that
    /// memory's text and tags are replaced and its id kept.
    fn save(&self, namespace: &str, memory: NewMemory) -> Result<Saved, MemoryError>;

    /// The memories of `namespace` most relevant to `query`, best first, at most `limit`.
    /// The query is plain text (any characters: it is never interpreted as a query
    /// language); words that share a stem match ("running" finds "runs"). A query with no
    /// words finds nothing.
    fn search(&self, namespace: &str, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError>;

    /// The memory `id` of `namespace`, or `None`.
    fn get(&self, namespace: &str, id: &str) -> Result<Option<Memory>, MemoryError>;

    /// Changes the memory `id` of `namespace`; [`MemoryError::NotFound`] when there is none.
    fn update(&self, namespace: &str, id: &str, update: MemoryUpdate) -> Result<Memory, MemoryError>;

    /// Deletes the memory `id` of `namespace` and returns it; [`MemoryError::NotFound`]
    /// when there is none.
    fn delete(&self, namespace: &str, id: &str) -> Result<Memory, MemoryError>;

    /// The most recently saved or updated memories of `namespace`, newest first, at most
    /// `limit`.
    fn list(&self, namespace: &str, limit: usize) -> Result<Vec<Memory>, MemoryError>;
}

/// Checks what every store requires of a new memory or an update: text, when given, has
/// something besides whitespace. Tags are trimmed and empty ones dropped.
pub fn check_text(text: &str) -> Result<(), MemoryError> {
    if text.trim().is_empty() {
        return Err(MemoryError::Invalid("the memory text is empty; say what to remember".into()));
    }
    Ok(())
}

/// Tags as stores keep them: trimmed, empty ones dropped, duplicates removed (first kept).
pub fn clean_tags(tags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        if !out.iter().any(|t| t == tag) {
            out.push(tag.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_trimmed_and_deduplicated() {
        let tags = [" a ", "", "b", "a"].map(String::from);
        assert_eq!(clean_tags(&tags), ["a", "b"]);
    }

    #[test]
    fn empty_text_is_refused_with_a_next_step() {
        assert!(check_text("x").is_ok());
        let err = check_text(" \n").unwrap_err();
        assert_eq!(err.to_string(), "the memory text is empty; say what to remember");
        assert_eq!(
            MemoryError::NotFound { id: "7".into() }.to_string(),
            "no memory with id 7; search_memories or list_memories shows the ids that exist"
        );
    }
}
