//! `generate_file`: a downloadable file, written to the application's output directory.

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde_json::{Value, json};

use super::{FsConfig, object};
use crate::fs::contain::{Scope, quoted};
use crate::fs::text::human_size;

pub(super) const DESCRIPTION: &str = "Create a file for the user to download, such as a report or \
an export. path is the file name (subdirectories allowed) inside the download area, not a \
workspace path. An existing file is replaced only with overwrite=true.";

/// Annotations: it writes (not read-only) and with `overwrite` replaces an earlier file
/// (destructive). The same call again leaves the same file (idempotent, as `write_file`).
/// It writes to the application's own output directory, a closed domain: the download
/// reaches a person only through the application (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false);

pub(super) fn schema() -> Value {
    object(
        json!({
            "path": {"type": "string", "description": "File name in the download area, e.g. 'report.md'."},
            "content": {"type": "string", "description": "The complete content of the file."},
            "overwrite": {"type": "boolean", "description": "Replace the file if it exists; default false."},
        }),
        &["path", "content"],
    )
}

pub(super) use super::write::Args;

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    // The output directory is the application's: created on first use, and a root of its own
    // (the same containment as base_path, whether or not base_path is set).
    std::fs::create_dir_all(&cfg.output_dir).map_err(|e| {
        tracing::error!(dir = %cfg.output_dir.display(), error = %e, "cannot create the output directory");
        ToolError::new("the download area is not available; the details were logged for the operator")
    })?;
    let scope = Scope::contained(&cfg.output_dir, cfg.resolver).map_err(|e| {
        tracing::error!(error = %e, "cannot open the output directory");
        ToolError::new("the download area is not available; the details were logged for the operator")
    })?;
    let target = scope.locate_creating(&args.path)?;
    target.name_for("write")?;
    let existed = target.write_atomic(args.content.as_bytes(), args.overwrite)?;
    let verb = if existed { "Replaced" } else { "Generated" };
    let mut out = ToolOutput::text(format!(
        "{verb} {} ({}) in the download area.",
        quoted(&target.display),
        human_size(args.content.len() as u64)
    ));
    out.structured_content = Some(json!({"file": target.display, "bytes": args.content.len()}));
    Ok(out)
}
