//! `glob`: the files whose names or paths match a glob pattern.

use std::fmt::Write as _;

use harnessx_core::{ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object, optional_path};
use crate::fs::contain::quoted;
use crate::fs::text::escape_path;
use crate::fs::walk::{PathPattern, prefix_len, walk};

pub(super) const DESCRIPTION: &str = "Find files by glob pattern, e.g. '*.rs' or 'src/**/*.test.ts'. \
A pattern without '/' matches file names at any depth; with '/', paths relative to the directory \
searched. Hidden files and what .gitignore/.ignore files exclude are skipped. Paths come back sorted, \
one per line.";

/// Matches collected before the walk stops (the output shows far fewer).
const HARD_CAP: usize = 1_000_000;

pub(super) fn schema() -> Value {
    object(
        json!({
            "pattern": {"type": "string", "description": "The glob pattern."},
            "path": optional_path("The directory to search"),
        }),
        &["pattern"],
    )
}

#[derive(Deserialize)]
pub(super) struct Args {
    pattern: String,
    #[serde(default)]
    path: String,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let pattern = PathPattern::new(&args.pattern).map_err(ToolError::new)?;
    let target = cfg.scope.locate(&args.path)?;
    let dir = target.open_dir()?;
    let start = start_rel(&target.display);
    let skip = prefix_len(start.as_bytes());
    let (found, report) = walk(dir, start.as_bytes(), cfg.walk, Vec::new, |found: &mut Vec<Vec<u8>>, f| {
        if pattern.is_match(f.name.to_bytes(), &f.rel[skip.min(f.rel.len())..]) {
            found.push(f.rel.to_vec());
        }
        found.len() < HARD_CAP
    });
    let mut paths: Vec<Vec<u8>> = found.into_iter().flatten().collect();
    if paths.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No files match {} under {}.",
            quoted(&args.pattern),
            quoted(&target.display)
        )));
    }
    paths.sort_unstable();
    let total = paths.len();
    let max = cfg.max_directory_entries;
    let mut out = String::new();
    for p in paths.iter().take(max) {
        out.push_str(&escape_path(p));
        out.push('\n');
    }
    if total > max || report.stopped {
        let more = if report.stopped { "more than ".to_owned() } else { String::new() };
        let _ = writeln!(
            out,
            "[results truncated: showing the first {max} of {more}{total} matches, sorted by path; narrow the pattern or the path]"
        );
    }
    if report.unreadable > 0 {
        let _ = writeln!(out, "[{} directories could not be read and were skipped]", report.unreadable);
    }
    Ok(ToolOutput::text(out))
}

/// A target's display path as the prefix of the paths under it (`.` is the root: none).
pub(super) fn start_rel(display: &str) -> String {
    if display == "." { String::new() } else { display.to_owned() }
}
