//! The eight filesystem tools: schema, description and handler of each, over a shared
//! [`FsConfig`].

mod delete;
mod edit;
mod generate;
mod glob;
mod grep;
mod list;
mod read;
mod read_media;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use harnessx_core::tool::decode::decode_args;
use harnessx_core::{ToolContext, ToolDefinition, ToolError, ToolHandler, ToolOutput};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::fs::contain::{Resolver, Scope};
use crate::fs::walk::WalkConfig;

/// What every tool of one registration shares: where it acts and its limits. None of it
/// is visible to the model.
#[derive(Debug)]
pub(crate) struct FsConfig {
    pub(crate) scope: Scope,
    pub(crate) max_read_bytes: u64,
    /// The largest image or PDF `read_file` returns (whole, or not at all).
    pub(crate) max_media_bytes: u64,
    pub(crate) max_directory_entries: usize,
    /// Where `generate_file` writes (created on first use).
    pub(crate) output_dir: PathBuf,
    pub(crate) resolver: Resolver,
    pub(crate) walk: WalkConfig,
}

/// The tool's definition with this configuration, annotated (each tool's `ANNOTATIONS`
/// says why). `serial` marks the tools that may change things non-concurrent (what the
/// bundle helper does), decided on their annotations; direct definitions keep the ordinary
/// default.
pub(crate) fn definition(name: &str, cfg: Arc<FsConfig>, serial: bool) -> Option<ToolDefinition> {
    let contained = cfg.scope.is_contained();
    let (description, schema, handler, annotations) = match name {
        "read_file" => (read::DESCRIPTION, read::schema(), handler(cfg, read::run), read::ANNOTATIONS),
        "write_file" => (write::DESCRIPTION, write::schema(), handler(cfg, write::run), write::ANNOTATIONS),
        "edit_file" => (edit::DESCRIPTION, edit::schema(), handler(cfg, edit::run), edit::ANNOTATIONS),
        "delete" => (delete::DESCRIPTION, delete::schema(), handler(cfg, delete::run), delete::ANNOTATIONS),
        "glob" => (glob::DESCRIPTION, glob::schema(), handler(cfg, glob::run), glob::ANNOTATIONS),
        "grep" => (grep::DESCRIPTION, grep::schema(), handler(cfg, grep::run), grep::ANNOTATIONS),
        "list_directory" => (list::DESCRIPTION, list::schema(), handler(cfg, list::run), list::ANNOTATIONS),
        "generate_file" => {
            (generate::DESCRIPTION, generate::schema(), handler(cfg, generate::run), generate::ANNOTATIONS)
        }
        _ => return None,
    };
    let paths = if name == "generate_file" {
        ""
    } else if contained {
        " Paths are relative to the workspace root; symlinks are not followed."
    } else {
        " Paths are host paths, relative to the current directory unless absolute."
    };
    let def = ToolDefinition::new(name, format!("{description}{paths}"), schema, handler)
        .with_annotations(annotations);
    Some(if serial && annotations.may_modify() { def.with_concurrent(false) } else { def })
}

/// A blocking handler (filesystem I/O runs off the async runtime) decoding its arguments
/// as every handler does (`decode_args`: the same error texts as `#[tool]` functions).
fn handler<A, F>(cfg: Arc<FsConfig>, run: F) -> ToolHandler
where
    A: DeserializeOwned,
    F: Fn(&FsConfig, A) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
{
    ToolHandler::from_blocking(move |args: Value, ctx: &ToolContext| match decode_args::<A>(args, ctx) {
        Ok(args) => run(&cfg, args),
        Err(e) => Err(e),
    })
}

/// An object schema that allows no other properties.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// `path` for tools whose path defaults to the root.
fn optional_path(what: &str) -> Value {
    json!({"type": "string", "description": format!("{what}; default: `.`, the top directory.")})
}
