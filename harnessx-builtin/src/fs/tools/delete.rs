//! `delete`: a file, an empty directory, or with `recursive` a whole tree; never the root.

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object};
use crate::fs::contain::quoted;

pub(super) const DESCRIPTION: &str = "Delete a file or a directory. A directory that is not empty \
needs recursive=true. The root directory itself cannot be deleted.";

/// Annotations: it removes files (not read-only, destructive). The same call again finds
/// nothing left to remove (idempotent). Local files only (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false);

pub(super) fn schema() -> Value {
    object(
        json!({
            "path": {"type": "string", "description": "The file or directory to delete."},
            "recursive": {"type": "boolean",
                          "description": "Delete a non-empty directory and everything in it; default false."},
        }),
        &["path"],
    )
}

#[derive(Deserialize)]
pub(super) struct Args {
    path: String,
    #[serde(default)]
    recursive: bool,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let target = cfg.scope.locate(&args.path)?;
    let stats = target.delete(args.recursive)?;
    let shown = quoted(&target.display);
    Ok(ToolOutput::text(if stats.dirs == 0 {
        format!("Deleted {shown}.")
    } else if stats.dirs == 1 && stats.files == 0 {
        format!("Deleted the directory {shown}.")
    } else {
        format!(
            "Deleted the directory {shown} with {} files and {} subdirectories.",
            stats.files,
            stats.dirs - 1
        )
    }))
}
