//! The memory tools: one handler type over a store and a namespace, what each tool's
//! arguments are, and how results read to the model.

use std::sync::Arc;

use harnessx_core::time::UtcDateTime;
use harnessx_core::tool::decode::decode_args;
use harnessx_core::{
    BlockingToolHandler, HandlerResult, Memory, MemoryError, MemoryHit, MemoryStore, MemoryUpdate, NewMemory,
    Parts, ToolContext, ToolError, ToolOutput,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::SNIPPET_CHARS;
use super::text::excerpt;

/// Default and largest number of results of `search_memories` and `list_memories`.
pub(super) const DEFAULT_SEARCH_LIMIT: usize = 5;
pub(super) const DEFAULT_LIST_LIMIT: usize = 10;
pub(super) const MAX_LIMIT: usize = 50;

/// Which tool a [`MemoryTool`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Save,
    Search,
    Read,
    Update,
    Delete,
    List,
}

/// A memory tool over one store and namespace.
pub(super) struct MemoryTool {
    pub(super) kind: Kind,
    pub(super) store: Arc<dyn MemoryStore>,
    pub(super) namespace: Arc<str>,
}

/// An id as the model may write it: `"12"` or `12`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Id {
    Text(String),
    Number(u64),
}

impl Id {
    fn into_string(self) -> String {
        match self {
            Id::Text(s) => s.trim().to_owned(),
            Id::Number(n) => n.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct SaveArgs {
    text: String,
    key: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct IdArgs {
    id: Id,
}

#[derive(Deserialize)]
struct UpdateArgs {
    id: Id,
    text: Option<String>,
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct ListArgs {
    limit: Option<usize>,
}

/// A store error as the model sees it: busy is worth retrying (read tools are `safe`, so
/// the engine retries them), the rest is one line.
fn tool_error(err: MemoryError) -> ToolError {
    match err {
        MemoryError::Busy(_) => ToolError::transient(err.to_string()),
        _ => ToolError::new(err.to_string()),
    }
}

impl BlockingToolHandler for MemoryTool {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        let (store, ns) = (&*self.store, &*self.namespace);
        match self.kind {
            Kind::Save => {
                let SaveArgs { text, key, tags } = decode_args(args, ctx)?;
                let key = key.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty());
                let saved = store.save(ns, NewMemory { text, key, tags }).map_err(tool_error)?;
                let m = &saved.memory;
                let text = match (&m.key, saved.replaced) {
                    (Some(key), true) => {
                        format!(
                            "Saved memory {} (key \"{key}\"), replacing what was saved under that key.",
                            m.id
                        )
                    }
                    (Some(key), false) => format!("Saved memory {} (key \"{key}\").", m.id),
                    (None, _) => format!("Saved memory {}.", m.id),
                };
                let mut structured = memory_json(m);
                structured["replaced"] = saved.replaced.into();
                Ok(ToolOutput { content: text, structured_content: Some(structured), parts: Parts::new() })
            }
            Kind::Search => {
                let SearchArgs { query, limit } = decode_args(args, ctx)?;
                let hits =
                    store.search(ns, &query, limit.unwrap_or(DEFAULT_SEARCH_LIMIT)).map_err(tool_error)?;
                Ok(render_hits(&query, &hits))
            }
            Kind::Read => {
                let IdArgs { id } = decode_args(args, ctx)?;
                let id = id.into_string();
                let memory = store
                    .get(ns, &id)
                    .map_err(tool_error)?
                    .ok_or(MemoryError::NotFound { id })
                    .map_err(tool_error)?;
                let mut head = format!("Memory {}", memory.id);
                if let Some(key) = &memory.key {
                    head.push_str(&format!(" (key \"{key}\")"));
                }
                head.push_str(&format!(", saved {}", date(memory.updated_at_ms)));
                if !memory.tags.is_empty() {
                    head.push_str(&format!(", tags: {}", memory.tags.join(", ")));
                }
                let content = format!("{head}\n{}", memory.text);
                Ok(ToolOutput {
                    content,
                    structured_content: Some(memory_json(&memory)),
                    parts: Parts::new(),
                })
            }
            Kind::Update => {
                let UpdateArgs { id, text, tags } = decode_args(args, ctx)?;
                if text.is_none() && tags.is_none() {
                    return Err(ToolError::new(
                        "nothing to update: pass the new `text`, the new `tags`, or both",
                    ));
                }
                let memory =
                    store.update(ns, &id.into_string(), MemoryUpdate { text, tags }).map_err(tool_error)?;
                Ok(ToolOutput {
                    content: format!("Updated memory {}.", memory.id),
                    structured_content: Some(memory_json(&memory)),
                    parts: Parts::new(),
                })
            }
            Kind::Delete => {
                let IdArgs { id } = decode_args(args, ctx)?;
                let memory = store.delete(ns, &id.into_string()).map_err(tool_error)?;
                Ok(ToolOutput {
                    content: format!("Deleted memory {}.", memory.id),
                    structured_content: Some(memory_json(&memory)),
                    parts: Parts::new(),
                })
            }
            Kind::List => {
                let ListArgs { limit } = decode_args(args, ctx)?;
                let memories = store.list(ns, limit.unwrap_or(DEFAULT_LIST_LIMIT)).map_err(tool_error)?;
                Ok(render_list(&memories))
            }
        }
    }
}

/// A memory's facts for the structured content.
fn memory_json(m: &Memory) -> Value {
    json!({
        "id": m.id,
        "key": m.key,
        "text": m.text,
        "tags": m.tags,
        "created_at_ms": m.created_at_ms,
        "updated_at_ms": m.updated_at_ms,
    })
}

/// `- [12] snippet (key "k"; tags: a, b)`.
fn line(id: &str, excerpt: &str, m: &Memory) -> String {
    let mut extra = Vec::new();
    if let Some(key) = &m.key {
        extra.push(format!("key \"{key}\""));
    }
    if !m.tags.is_empty() {
        extra.push(format!("tags: {}", m.tags.join(", ")));
    }
    let extra = if extra.is_empty() { String::new() } else { format!(" ({})", extra.join("; ")) };
    format!("- [{id}] {excerpt}{extra}")
}

fn render_hits(query: &str, hits: &[MemoryHit]) -> ToolOutput {
    let content = if hits.is_empty() {
        "No memory matches. Try other words, or list_memories to see the most recent ones.".to_owned()
    } else {
        let mut text = format!(
            "{} {} best first (ids in brackets; read_memory shows one whole):",
            hits.len(),
            if hits.len() == 1 { "memory matches," } else { "memories match," }
        );
        for hit in hits {
            text.push('\n');
            text.push_str(&line(&hit.memory.id, &hit.snippet, &hit.memory));
        }
        text
    };
    let structured = json!({
        "query": query,
        "hits": hits.iter().map(|h| {
            let mut v = memory_json(&h.memory);
            v["score"] = h.score.into();
            v["snippet"] = h.snippet.clone().into();
            v
        }).collect::<Vec<_>>(),
    });
    ToolOutput { content, structured_content: Some(structured), parts: Parts::new() }
}

fn render_list(memories: &[Memory]) -> ToolOutput {
    let content = if memories.is_empty() {
        "No memories are saved yet.".to_owned()
    } else {
        let mut text = format!(
            "The {} most recent {}, newest first (ids in brackets; read_memory shows one whole):",
            memories.len(),
            if memories.len() == 1 { "memory" } else { "memories" }
        );
        for m in memories {
            text.push('\n');
            text.push_str(&line(&m.id, &excerpt(&m.text, 0, SNIPPET_CHARS), m));
        }
        text
    };
    let structured = json!({ "memories": memories.iter().map(memory_json).collect::<Vec<_>>() });
    ToolOutput { content, structured_content: Some(structured), parts: Parts::new() }
}

/// `2026-11-30 14:05 UTC` from milliseconds since the epoch.
fn date(ms: u64) -> String {
    let t = UtcDateTime::from_unix_ms(ms);
    format!("{:04}-{:02}-{:02} {:02}:{:02} UTC", t.year, t.month, t.day, t.hour, t.minute)
}

pub(super) const SAVE_DESCRIPTION: &str = "Save something worth remembering in later conversations: a fact about the user, a preference, a decision, a lesson learned. Write it as a self-contained sentence (it will be found by its words later). Give a `key` to keep one memory per topic: saving again under the same key replaces it. Returns the memory's id.";
pub(super) const SEARCH_DESCRIPTION: &str = "Search saved memories by meaning of the words: returns the best matches first, each with its id and an excerpt. Use plain words (no query syntax); different forms of a word match (\"deploying\" finds \"deploy\"). Search before saving to avoid duplicates, and before answering questions about the user or past work.";
pub(super) const READ_DESCRIPTION: &str =
    "Read one saved memory whole, by its id (from search_memories or list_memories).";
pub(super) const UPDATE_DESCRIPTION: &str = "Change a saved memory, by its id: give the new `text`, the new `tags` (replacing the old ones), or both. Use it when something remembered has changed or was wrong.";
pub(super) const DELETE_DESCRIPTION: &str = "Delete a saved memory for good, by its id. Use it when the memory is wrong or the user asks to forget it.";
pub(super) const LIST_DESCRIPTION: &str =
    "List the most recently saved or changed memories, newest first, each with its id and an excerpt.";

fn id_schema() -> Value {
    json!({
        "type": ["string", "integer"],
        "description": "The memory's id, as search_memories or list_memories showed it."
    })
}

fn limit_schema(default: usize, what: &str) -> Value {
    json!({
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "description": format!("Most {what} to return (default {default}).")
    })
}

fn tags_schema(description: &str) -> Value {
    json!({ "type": "array", "items": {"type": "string"}, "description": description })
}

/// The input schema of each tool.
pub(super) fn schema(kind: Kind) -> Value {
    match kind {
        Kind::Save => json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "description": "What to remember, as a self-contained statement."},
                "key": {"type": "string", "minLength": 1, "description": "Optional topic name; saving again under it replaces that memory."},
                "tags": tags_schema("Optional labels, searched along with the text.")
            },
            "required": ["text"],
            "additionalProperties": false
        }),
        Kind::Search => json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Words to look for."},
                "limit": limit_schema(DEFAULT_SEARCH_LIMIT, "matches")
            },
            "required": ["query"],
            "additionalProperties": false
        }),
        Kind::Read | Kind::Delete => json!({
            "type": "object",
            "properties": { "id": id_schema() },
            "required": ["id"],
            "additionalProperties": false
        }),
        Kind::Update => json!({
            "type": "object",
            "properties": {
                "id": id_schema(),
                "text": {"type": "string", "minLength": 1, "description": "The new text."},
                "tags": tags_schema("The new labels, replacing the old ones.")
            },
            "required": ["id"],
            "additionalProperties": false
        }),
        Kind::List => json!({
            "type": "object",
            "properties": { "limit": limit_schema(DEFAULT_LIST_LIMIT, "memories") },
            "additionalProperties": false
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        // 2026-11-30 14:25:48 UTC
        assert_eq!(date(1_796_048_748_000), "2026-11-30 14:25 UTC");
        assert_eq!(date(951_782_400_000), "2000-02-29 00:00 UTC");
    }
}
