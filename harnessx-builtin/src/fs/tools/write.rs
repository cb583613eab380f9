//! `write_file`: create a file, or replace one when `overwrite` is set; published atomically.

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object};
use crate::fs::contain::quoted;
use crate::fs::text::human_size;

pub(super) const DESCRIPTION: &str = "Write a text file, creating missing parent directories. \
An existing file is replaced only with overwrite=true. Readers never see a partly written file. \
To change part of a file, prefer edit_file.";

/// Annotations: it writes (not read-only) and with `overwrite` replaces what was there
/// (destructive). The same call again leaves the same file (idempotent: without `overwrite`
/// it is refused, with it the content is the same). Local files only (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false);

pub(super) fn schema() -> Value {
    object(
        json!({
            "path": {"type": "string", "description": "The file to write."},
            "content": {"type": "string", "description": "The complete new content of the file."},
            "overwrite": {"type": "boolean", "description": "Replace the file if it exists; default false."},
        }),
        &["path", "content"],
    )
}

/// The arguments of `write_file`, and of `generate_file`, which takes the same three.
#[derive(Deserialize)]
pub(super) struct Args {
    pub(super) path: String,
    pub(super) content: String,
    #[serde(default)]
    pub(super) overwrite: bool,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let target = cfg.scope.locate_creating(&args.path)?;
    let existed = target.write_atomic(args.content.as_bytes(), args.overwrite)?;
    let verb = if existed { "Replaced" } else { "Created" };
    Ok(ToolOutput::text(format!(
        "{verb} {} ({}).",
        quoted(&target.display),
        human_size(args.content.len() as u64)
    )))
}
