//! [`InMemoryStore`]: memories in a map in this process, gone when it exits. For tests,
//! short runs, and the `memory` bundle when no SQLite path is given.

use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use harnessx_core::memory::{check_text, clean_tags};
use harnessx_core::{Memory, MemoryError, MemoryHit, MemoryStore, MemoryUpdate, NewMemory, Saved};

use super::text::{bm25, excerpt, query_words, stem, words};
use super::{SNIPPET_CHARS, now_ms};

/// Memories in this process, ranked by BM25 over lightly stemmed words (see
/// `docs/builtin-memory.md`). Ids are decimal integers, never reused.
///
/// ```
/// use harnessx_builtin::memory::InMemoryStore;
/// use harnessx_core::{MemoryStore, NewMemory};
///
/// let store = InMemoryStore::new();
/// let saved = store.save("alice", NewMemory::new("Alice prefers tea to coffee")).unwrap();
/// let hits = store.search("alice", "which drink does she prefer?", 5).unwrap();
/// assert_eq!(hits[0].memory.id, saved.memory.id);
/// assert!(store.search("bob", "tea", 5).unwrap().is_empty(), "namespaces are separate");
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The last id given out.
    last_id: u64,
    /// Each namespace's memories by id.
    namespaces: HashMap<String, BTreeMap<u64, Memory>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock leaves whole memories (every write replaces
        // one entry), so the data is still good.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// The id as this store writes it; anything else names no memory.
fn parse_id(id: &str) -> Result<u64, MemoryError> {
    id.trim().parse().map_err(|_| MemoryError::NotFound { id: id.to_owned() })
}

/// The stems a memory is searched by: its text, key and tags.
fn terms(memory: &Memory) -> Vec<String> {
    let key = memory.key.as_deref().unwrap_or("");
    words(&memory.text)
        .chain(words(key))
        .chain(memory.tags.iter().flat_map(|t| words(t)))
        .map(|w| stem(&w))
        .collect()
}

impl MemoryStore for InMemoryStore {
    fn name(&self) -> &str {
        "in-memory"
    }

    fn save(&self, namespace: &str, memory: NewMemory) -> Result<Saved, MemoryError> {
        check_text(&memory.text)?;
        let now = now_ms();
        let tags = clean_tags(&memory.tags);
        let mut inner = self.write();
        let existing = memory.key.as_ref().and_then(|key| {
            inner
                .namespaces
                .get(namespace)?
                .iter()
                .find(|(_, m)| m.key.as_ref() == Some(key))
                .map(|(id, _)| *id)
        });
        if let Some(id) = existing {
            let slot = inner
                .namespaces
                .get_mut(namespace)
                .and_then(|ns| ns.get_mut(&id))
                .expect("found above, under the same lock");
            slot.text = memory.text;
            slot.tags = tags;
            slot.updated_at_ms = now.max(slot.created_at_ms);
            return Ok(Saved { memory: slot.clone(), replaced: true });
        }
        inner.last_id += 1;
        let id = inner.last_id;
        let saved = Memory {
            id: id.to_string(),
            key: memory.key,
            text: memory.text,
            tags,
            created_at_ms: now,
            updated_at_ms: now,
        };
        inner.namespaces.entry(namespace.to_owned()).or_default().insert(id, saved.clone());
        Ok(Saved { memory: saved, replaced: false })
    }

    fn search(&self, namespace: &str, query: &str, limit: usize) -> Result<Vec<MemoryHit>, MemoryError> {
        let mut query_terms: Vec<String> = Vec::new();
        for term in query_words(query).iter().map(|w| stem(w)) {
            if !query_terms.contains(&term) {
                query_terms.push(term);
            }
        }
        let inner = self.read();
        let Some(memories) = inner.namespaces.get(namespace) else { return Ok(Vec::new()) };
        if query_terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let docs: Vec<(&Memory, Vec<String>)> = memories.values().map(|m| (m, terms(m))).collect();
        let avg_len = docs.iter().map(|(_, t)| t.len()).sum::<usize>() as f64 / docs.len().max(1) as f64;
        let df: Vec<usize> =
            query_terms.iter().map(|q| docs.iter().filter(|(_, t)| t.contains(q)).count()).collect();
        let mut hits: Vec<MemoryHit> = docs
            .iter()
            .filter_map(|(memory, terms)| {
                let tf: Vec<usize> =
                    query_terms.iter().map(|q| terms.iter().filter(|t| *t == q).count()).collect();
                let score = bm25(&tf, &df, docs.len(), terms.len(), avg_len);
                (score > 0.0).then(|| {
                    let at = first_match(&memory.text, &query_terms);
                    MemoryHit {
                        memory: (*memory).clone(),
                        score,
                        snippet: excerpt(&memory.text, at, SNIPPET_CHARS),
                    }
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.memory.updated_at_ms.cmp(&a.memory.updated_at_ms))
                .then(id_of(&b.memory).cmp(&id_of(&a.memory)))
        });
        hits.truncate(limit);
        Ok(hits)
    }

    fn get(&self, namespace: &str, id: &str) -> Result<Option<Memory>, MemoryError> {
        let Ok(id) = parse_id(id) else { return Ok(None) };
        Ok(self.read().namespaces.get(namespace).and_then(|ns| ns.get(&id)).cloned())
    }

    fn update(&self, namespace: &str, id: &str, update: MemoryUpdate) -> Result<Memory, MemoryError> {
        if let Some(text) = &update.text {
            check_text(text)?;
        }
        let key = parse_id(id)?;
        let mut inner = self.write();
        let slot = inner
            .namespaces
            .get_mut(namespace)
            .and_then(|ns| ns.get_mut(&key))
            .ok_or_else(|| MemoryError::NotFound { id: id.to_owned() })?;
        if let Some(text) = update.text {
            slot.text = text;
        }
        if let Some(tags) = update.tags {
            slot.tags = clean_tags(&tags);
        }
        slot.updated_at_ms = now_ms().max(slot.created_at_ms);
        Ok(slot.clone())
    }

    fn delete(&self, namespace: &str, id: &str) -> Result<Memory, MemoryError> {
        let key = parse_id(id)?;
        self.write()
            .namespaces
            .get_mut(namespace)
            .and_then(|ns| ns.remove(&key))
            .ok_or_else(|| MemoryError::NotFound { id: id.to_owned() })
    }

    fn list(&self, namespace: &str, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let inner = self.read();
        let Some(memories) = inner.namespaces.get(namespace) else { return Ok(Vec::new()) };
        let mut all: Vec<&Memory> = memories.values().collect();
        all.sort_by(|a, b| b.updated_at_ms.cmp(&a.updated_at_ms).then(id_of(b).cmp(&id_of(a))));
        Ok(all.into_iter().take(limit).cloned().collect())
    }
}

/// The numeric id (every id this store gives out parses).
fn id_of(memory: &Memory) -> u64 {
    memory.id.parse().unwrap_or(0)
}

/// The byte offset of the first word of `text` whose stem is a query term (0 if none:
/// the match was in the key or tags).
fn first_match(text: &str, query_terms: &[String]) -> usize {
    text.split(|c: char| !c.is_alphanumeric())
        .find(|piece| !piece.is_empty() && query_terms.contains(&stem(&piece.to_lowercase())))
        // `piece` is a slice of `text`: its offset is the distance between the two.
        .map_or(0, |piece| piece.as_ptr() as usize - text.as_ptr() as usize)
}
