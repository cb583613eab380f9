//! A server's resources offered to the model ([`McpOptions::resources`](crate::McpOptions)):
//! `{prefix}list_resources`, the resources the server lists (their URI, name, type, size
//! and description, one per line), and `{prefix}read_resource`, one resource's contents,
//! text as text and blobs as media parts, as a tool result's embedded resources are.

use std::sync::Arc;

use harnessx_core::{ReplayPolicy, ToolAnnotations, ToolDefinition, ToolError, ToolHandler, ToolOutput};
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use super::MCP_TIMEOUT_SECONDS;
use super::link::Link;
use super::output::resource;

/// The two tools of `link`'s server, named with `prefix`.
pub(super) fn definitions(link: &Arc<Link>, prefix: &str) -> Vec<ToolDefinition> {
    let shown = &link.shown;
    let listed = link.clone();
    let list = ToolHandler::from_async(move |_args: Value, _ctx| list(listed.clone()));
    let read_by = link.clone();
    let read = ToolHandler::from_async(move |args: Value, _ctx| read(read_by.clone(), args));
    let empty = json!({"type": "object", "properties": {}, "additionalProperties": false});
    let uri = json!({
        "type": "object",
        "properties": {"uri": {"type": "string", "minLength": 1, "description": "The resource's URI, as list_resources gives it."}},
        "required": ["uri"],
        "additionalProperties": false
    });
    // Reading a resource changes nothing (MCP's resources are read); its contents come
    // from the server (open world).
    let annotations = || {
        let mut a = ToolAnnotations::new();
        a.read_only = Some(true);
        a.open_world = Some(true);
        a
    };
    let tool = |name: String, description: String, schema: Value, handler: ToolHandler| {
        let mut definition = ToolDefinition::new(name, description, schema, handler)
            .with_timeout_seconds(MCP_TIMEOUT_SECONDS)
            .with_concurrent(true)
            .with_replay_policy(ReplayPolicy::Safe)
            .with_annotations(annotations());
        if let Some(level) = link.options.permission {
            definition = definition.with_permission(level);
        }
        definition
    };
    vec![
        tool(
            format!("{prefix}list_resources"),
            format!(
                "List the resources (documents, files, data) the MCP server {shown} offers: one per line, its URI first."
            ),
            empty,
            list,
        ),
        tool(
            format!("{prefix}read_resource"),
            format!("Read one resource of the MCP server {shown} by its URI (from {prefix}list_resources)."),
            uri,
            read,
        ),
    ]
}

async fn list(link: Arc<Link>) -> Result<ToolOutput, ToolError> {
    let service = link.service().await.map_err(ToolError::new)?;
    let resources = service.list_all_resources().await.map_err(|e| {
        ToolError::new(format!("the MCP server `{}` could not list its resources: {e}", link.shown))
    })?;
    if resources.is_empty() {
        return Ok(ToolOutput::from(format!("The MCP server {} offers no resources.", link.shown)));
    }
    let lines: Vec<String> = resources
        .iter()
        .map(|r| {
            let mut line = format!("{} — {}", r.uri, r.title.as_deref().unwrap_or(&r.name));
            if let Some(media_type) = &r.mime_type {
                line.push_str(&format!(" ({media_type}"));
                if let Some(size) = r.size {
                    line.push_str(&format!(", {size} bytes"));
                }
                line.push(')');
            }
            if let Some(description) = r.description.as_deref().filter(|d| !d.trim().is_empty()) {
                line.push_str(": ");
                line.push_str(&description.split_whitespace().collect::<Vec<_>>().join(" "));
            }
            line
        })
        .collect();
    Ok(ToolOutput::from(lines.join("\n")))
}

async fn read(link: Arc<Link>, args: Value) -> Result<ToolOutput, ToolError> {
    let uri = args["uri"].as_str().unwrap_or_default().to_owned();
    let service = link.service().await.map_err(ToolError::new)?;
    let result = service.read_resource(ReadResourceRequestParams::new(uri.clone())).await.map_err(|e| {
        ToolError::new(format!("the MCP server `{}` could not read the resource {uri}: {e}", link.shown))
    })?;
    let mut lines = Vec::with_capacity(result.contents.len());
    let mut parts = Vec::new();
    for contents in &result.contents {
        let (line, part) = resource(contents);
        lines.push(line);
        parts.extend(part);
    }
    if lines.is_empty() {
        lines.push(format!("[resource {uri}: empty]"));
    }
    Ok(ToolOutput { content: lines.join("\n"), structured_content: None, parts: parts.into() })
}
