//! `glob`: the files whose names or paths match a glob pattern.

use std::fmt::Write as _;

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object, optional_path};
use crate::fs::contain::quoted;
use crate::fs::text::escape_path;
use crate::fs::walk::{Ignores, PathPattern, prefix_len, walk};

pub(super) const DESCRIPTION: &str = "Find files by glob pattern, e.g. '*.rs' or 'src/**/*.test.ts'. \
A pattern without '/' matches file names at any depth; with '/', paths relative to the directory \
searched. Hidden files and what .gitignore/.ignore files exclude are skipped. Paths come back sorted, \
one per line.";

/// Annotations: listing matches changes nothing (read-only, so not destructive), repeats
/// safely (idempotent), and stays inside the filesystem it is given (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);

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
    let inherited = ancestor_ignores(cfg, &target.display);
    let (found, report) =
        walk(dir, start.as_bytes(), inherited, cfg.walk, Vec::new, |found: &mut Vec<Vec<u8>>, f| {
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

/// The ignore rules of the directories between the root and `display` (a directory under
/// the root), as ripgrep reads the ignore files above a path it is given. On the host there
/// is no root to stop at, so none are read.
pub(super) fn ancestor_ignores(cfg: &FsConfig, display: &str) -> Ignores {
    let mut ignores = Ignores::default();
    if !cfg.scope.is_contained() || !cfg.walk.ignore_files || display == "." {
        return ignores;
    }
    let comps: Vec<&str> = display.split('/').collect();
    for depth in 0..comps.len() {
        let rel = comps[..depth].join("/");
        // Reached without following links, like everything else; one that cannot be opened
        // is simply not consulted (opening the start itself reports the problem).
        if let Ok(dir) = cfg.scope.locate(&rel).and_then(|t| t.open_dir()) {
            ignores = ignores.push_dir(&dir, rel.as_bytes());
        }
    }
    ignores
}
