//! The three knowledge tools over one [`Knowledge`]: read-only, concurrent, `safe`, and
//! allowed (they only read the agent's own index). Unknown ids are error results with
//! close ids; the text is written for the model.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::index::{Knowledge, MAX_LIMIT};
use harnessx_core::tool::decode::decode_args;
use harnessx_core::{
    BlockingToolHandler, HandlerResult, Parts, ReplayPolicy, ToolAnnotations, ToolContext, ToolDefinition,
    ToolError, ToolHandler, ToolOutput,
};

/// The default number of search results.
const DEFAULT_LIMIT: usize = 10;

fn internal(e: super::KnowledgeError) -> ToolError {
    tracing::warn!(error = %e, "knowledge query failed");
    ToolError::new("The knowledge index could not be read.")
}

fn definition(
    name: &str,
    description: &str,
    schema: Value,
    handler: impl BlockingToolHandler,
) -> ToolDefinition {
    ToolDefinition::new(name, description, schema, ToolHandler::Blocking(Arc::new(handler)))
        .with_replay_policy(ReplayPolicy::Safe)
        .with_annotations(
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
        )
}

/// `search_concepts`, `read_concept` and `get_neighbors` over `knowledge`.
pub(crate) fn knowledge_tools(knowledge: &Arc<Knowledge>) -> Vec<ToolDefinition> {
    vec![
        definition(
            "search_concepts",
            "Search the knowledge base: returns the best-matching concepts (id, title, a line of text), best first. Then read one with read_concept.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you are looking for, in words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most results (default 10)."}
                },
                "required": ["query"]
            }),
            Search(knowledge.clone()),
        ),
        definition(
            "read_concept",
            "Read one concept of the knowledge base by id: its text and the concepts it links to.",
            json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The concept's id, as search_concepts gives it."}},
                "required": ["id"]
            }),
            Read(knowledge.clone()),
        ),
        definition(
            "get_neighbors",
            "List the concepts linked to one concept: those it links to (out) and those linking to it (in), with titles.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The concept's id."},
                    "direction": {"type": "string", "enum": ["both", "out", "in"], "description": "Which links (default both)."}
                },
                "required": ["id"]
            }),
            Neighbors(knowledge.clone()),
        ),
    ]
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

struct Search(Arc<Knowledge>);

impl BlockingToolHandler for Search {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        let SearchArgs { query, limit } = decode_args(args, ctx)?;
        let hits = self.0.search(&query, limit.unwrap_or(DEFAULT_LIMIT)).map_err(internal)?;
        if hits.is_empty() {
            return Ok(ToolOutput::text(format!("No concept matches {query:?}. Try other words.")));
        }
        let mut text = String::new();
        for (i, hit) in hits.iter().enumerate() {
            let _ = writeln!(text, "{}. {} — {}: {}", i + 1, hit.id, hit.title, hit.snippet);
        }
        let structured = serde_json::to_value(&hits).ok();
        Ok(ToolOutput {
            content: text.trim_end().to_owned(),
            structured_content: structured,
            parts: Parts::new(),
        })
    }
}

#[derive(Deserialize)]
struct IdArgs {
    id: String,
}

struct Read(Arc<Knowledge>);

impl BlockingToolHandler for Read {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        let IdArgs { id } = decode_args(args, ctx)?;
        let id = self.0.resolve(&id).map_err(ToolError::new)?;
        let concept =
            self.0.concept(&id).map_err(internal)?.ok_or_else(|| ToolError::new("Concept not found."))?;
        let links = self.0.neighbors(&id).map_err(internal)?;
        let mut text = format!("# {}\nid: {}", concept.title, concept.id);
        if !concept.aliases.is_empty() {
            let _ = write!(text, "\naliases: {}", concept.aliases.join(", "));
        }
        if !concept.tags.is_empty() {
            let _ = write!(text, "\ntags: {}", concept.tags.join(", "));
        }
        let _ = write!(text, "\n\n{}\n\n", concept.body.trim());
        if links.outgoing.is_empty() {
            text.push_str("Links out: none.");
        } else {
            text.push_str("Links out:");
            for l in &links.outgoing {
                let _ = write!(text, "\n- {} — {}", l.id, l.title);
            }
        }
        Ok(ToolOutput::text(text))
    }
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Direction {
    #[default]
    Both,
    Out,
    In,
}

#[derive(Deserialize)]
struct NeighborArgs {
    id: String,
    #[serde(default)]
    direction: Direction,
}

struct Neighbors(Arc<Knowledge>);

impl BlockingToolHandler for Neighbors {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        let NeighborArgs { id, direction } = decode_args(args, ctx)?;
        let id = self.0.resolve(&id).map_err(ToolError::new)?;
        let links = self.0.neighbors(&id).map_err(internal)?;
        let mut text = String::new();
        let mut section = |label: &str, list: &[super::ConceptRef]| {
            let _ = write!(text, "{label} ({}):", list.len());
            for l in list {
                let _ = write!(text, "\n- {} — {}", l.id, l.title);
            }
            text.push('\n');
        };
        if direction != Direction::In {
            section(&format!("Links out of {id}"), &links.outgoing);
        }
        if direction != Direction::Out {
            section(&format!("Links into {id}"), &links.incoming);
        }
        let structured = serde_json::to_value(&links).ok();
        Ok(ToolOutput {
            content: text.trim_end().to_owned(),
            structured_content: structured,
            parts: Parts::new(),
        })
    }
}
