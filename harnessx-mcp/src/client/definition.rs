//! The harnessx definition of one MCP tool: its schema, its timeout, and the annotations
//! harnessx acts on, as far as the server is trusted.

use std::sync::Arc;

use harnessx_core::{ReplayPolicy, ToolAnnotations, ToolDefinition, ToolHandler};
use rmcp::model::Tool;
use serde_json::Value;

use super::MCP_TIMEOUT_SECONDS;
use super::call::call;
use super::link::Link;

/// The harnessx definition of one MCP tool.
pub(super) fn definition(tool: &Tool, name: &str, link: &Arc<Link>) -> ToolDefinition {
    let remote = tool.name.to_string();
    let description = tool.description.as_deref().unwrap_or_default().to_owned();
    let permission = link.options.permission;
    let annotations = annotations(tool, link.options.trust_hints);
    let link = link.clone();
    let handler =
        ToolHandler::from_async(move |args: Value, ctx| call(link.clone(), remote.clone(), args, ctx));
    let mut definition = ToolDefinition::new(name, description, schema(tool), handler)
        .with_timeout_seconds(MCP_TIMEOUT_SECONDS)
        .with_concurrent(annotations.read_only == Some(true))
        .with_replay_policy(if annotations.idempotent == Some(true) {
            ReplayPolicy::Idempotent
        } else {
            ReplayPolicy::Manual
        })
        .with_annotations(annotations);
    if let Some(level) = permission {
        definition = definition.with_permission(level);
    }
    definition
}

/// The annotations harnessx acts on for `tool`: all of the server's hints when it is
/// trusted, else only those that ask for care (the side MCP's defaults take when a hint
/// is missing: not read-only, destructive, not idempotent, open world), so that nothing
/// an untrusted server says makes a call less careful.
fn annotations(tool: &Tool, trusted: bool) -> ToolAnnotations {
    let Some(hints) = &tool.annotations else { return ToolAnnotations::new() };
    let keep = |hint: Option<bool>, careful: bool| hint.filter(|&value| trusted || value == careful);
    let mut annotations = ToolAnnotations::new();
    annotations.read_only = keep(hints.read_only_hint, false);
    annotations.destructive = keep(hints.destructive_hint, true);
    annotations.idempotent = keep(hints.idempotent_hint, false);
    annotations.open_world = keep(hints.open_world_hint, true);
    annotations
}

/// The tool's input schema as an object schema (MCP requires `"type": "object"`; a
/// server that leaves out `properties` gets an empty set).
fn schema(tool: &Tool) -> Value {
    let mut schema = tool.input_schema.as_ref().clone();
    schema.entry("type").or_insert_with(|| Value::String("object".into()));
    schema.entry("properties").or_insert_with(|| Value::Object(serde_json::Map::new()));
    Value::Object(schema)
}
