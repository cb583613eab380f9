//! `grep`: search file contents with ripgrep's searcher, in parallel, inside the scope.

use std::fmt::Write as _;
use std::fs::File;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::glob::{ancestor_ignores, start_rel};
use super::{FsConfig, object, optional_path};
use crate::fs::contain::{Kind, quoted};
use crate::fs::text::escape_path;
use crate::fs::walk::{PathPattern, prefix_len, walk};

pub(super) const DESCRIPTION: &str = "Search file contents for a regular expression (Rust regex \
syntax), or for a plain string with literal=true. output_mode 'content' (default) shows matching \
lines as path:line:text, with context lines as path-line-text; 'files_with_matches' lists the \
files; 'count' gives path:count of matching lines. Hidden files, binary files and what \
.gitignore/.ignore files exclude are skipped.";

/// Annotations: searching changes nothing (read-only, so not destructive), repeats safely
/// (idempotent), and stays inside the filesystem it is given (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);

/// Longest line shown, in characters.
const MAX_LINE_CHARS: usize = 500;

/// Most context lines on each side.
const MAX_CONTEXT: u64 = 20;

pub(super) fn schema() -> Value {
    object(
        json!({
            "pattern": {"type": "string", "description": "The regular expression (or, with literal=true, the exact text) to find."},
            "path": optional_path("The file or directory to search"),
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.rs'."},
            "literal": {"type": "boolean", "description": "Treat pattern as plain text, not a regex; default false."},
            "ignore_case": {"type": "boolean", "description": "Match without regard to case; default false."},
            "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                        "description": "Lines of context to show before and after each match (content mode); default 0."},
            "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"],
                            "description": "What to show; default 'content'."},
        }),
        &["pattern"],
    )
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    Content,
    FilesWithMatches,
    Count,
}

#[derive(Deserialize)]
pub(super) struct Args {
    pattern: String,
    #[serde(default)]
    path: String,
    glob: Option<String>,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    context: u64,
    #[serde(default)]
    output_mode: Mode,
}

/// One file's findings.
struct Found {
    rel: Vec<u8>,
    count: u64,
    /// Formatted lines (content mode).
    text: String,
    lines: usize,
}

/// One worker's searcher and findings.
struct State {
    searcher: Searcher,
    matcher: RegexMatcher,
    found: Vec<Found>,
    lines: usize,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.ignore_case)
        .fixed_strings(args.literal)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| ToolError::new(pattern_error(&args.pattern, &e.to_string())))?;
    let filter = args.glob.as_deref().map(PathPattern::new).transpose().map_err(ToolError::new)?;
    let mode = args.output_mode;
    let context = if mode == Mode::Content { args.context.min(MAX_CONTEXT) as usize } else { 0 };
    let new_searcher = || {
        SearcherBuilder::new()
            .line_number(mode == Mode::Content)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build()
    };
    let max_lines = cfg.max_directory_entries;
    // Collect somewhat more than is shown, so the sorted output is usually exact.
    let collect_cap = max_lines.saturating_mul(4).max(10_000);
    let new_state =
        || State { searcher: new_searcher(), matcher: matcher.clone(), found: Vec::new(), lines: 0 };

    let target = cfg.scope.locate(&args.path)?;
    // A file is searched alone (on the host, through a final symlink as reads do).
    let is_file = target.name.is_some() && matches!(target.read_stat(), Ok((Kind::File, _)));
    let (states, report) = if is_file {
        let (file, _) = target.open_file()?;
        let mut state = new_state();
        search_one(&mut state, &file, target.display.as_bytes(), mode, max_lines);
        (vec![state], None)
    } else {
        let dir = target.open_dir()?;
        let start = start_rel(&target.display);
        let skip = prefix_len(start.as_bytes());
        let inherited = ancestor_ignores(cfg, &target.display);
        let (states, report) =
            walk(dir, start.as_bytes(), inherited, cfg.walk, new_state, |state: &mut State, f| {
                if let Some(filter) = &filter
                    && !filter.is_match(f.name.to_bytes(), &f.rel[skip.min(f.rel.len())..])
                {
                    return true;
                }
                let Ok(Some(file)) =
                    crate::fs::contain::open_child_file(std::os::fd::AsFd::as_fd(f.dir), f.name)
                else {
                    return true;
                };
                search_one(state, &file, f.rel, mode, max_lines);
                state.lines < collect_cap
            });
        (states, Some(report))
    };

    let mut found: Vec<Found> = states.into_iter().flat_map(|s| s.found).collect();
    if found.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No matches for {} in {}.",
            quoted(&args.pattern),
            quoted(&target.display)
        )));
    }
    found.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    let mut out = render(&found, mode, context > 0, max_lines, cfg.max_read_bytes);
    if let Some(report) = report {
        if report.stopped {
            out.push_str("[the search stopped early: too many matches; narrow the pattern, path or glob]\n");
        }
        if report.unreadable > 0 {
            let _ = writeln!(out, "[{} directories could not be read and were skipped]", report.unreadable);
        }
    }
    Ok(ToolOutput::text(out))
}

fn search_one(state: &mut State, file: &File, rel: &[u8], mode: Mode, max_lines: usize) {
    let mut sink = Collect {
        path: if mode == Mode::Content { escape_path(rel) } else { String::new() },
        mode,
        count: 0,
        text: String::new(),
        lines: 0,
        max_lines,
    };
    // An unreadable file is skipped, as ripgrep does (it may have vanished mid-walk).
    let ok = state.searcher.search_file(&state.matcher, file, &mut sink).is_ok();
    if ok && sink.count > 0 {
        state.lines += sink.lines.max(1);
        state.found.push(Found { rel: rel.to_vec(), count: sink.count, text: sink.text, lines: sink.lines });
    }
}

fn render(found: &[Found], mode: Mode, context: bool, max_lines: usize, max_bytes: u64) -> String {
    let max_bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut out = String::new();
    let mut lines = 0usize;
    let mut truncated = false;
    let total_matches: u64 = found.iter().map(|f| f.count).sum();
    for (i, f) in found.iter().enumerate() {
        let piece = match mode {
            Mode::Content => {
                let mut p = String::new();
                if context && i > 0 {
                    p.push_str("--\n");
                }
                p.push_str(&f.text);
                p
            }
            Mode::FilesWithMatches => format!("{}\n", escape_path(&f.rel)),
            Mode::Count => format!("{}:{}\n", escape_path(&f.rel), f.count),
        };
        let piece_lines = if mode == Mode::Content { f.lines } else { 1 };
        if lines + piece_lines > max_lines || out.len() + piece.len() > max_bytes {
            // Show what fits of this file's lines, then stop.
            for line in piece.lines() {
                if lines >= max_lines || out.len() + line.len() + 1 > max_bytes {
                    break;
                }
                out.push_str(line);
                out.push('\n');
                lines += 1;
            }
            truncated = true;
            break;
        }
        out.push_str(&piece);
        lines += piece_lines;
    }
    if mode == Mode::Count {
        let _ = writeln!(out, "[{total_matches} matching lines in {} files]", found.len());
    }
    if truncated {
        let _ = writeln!(
            out,
            "[results truncated: {total_matches} matching lines in {} files in all; narrow the pattern, path or glob]",
            found.len()
        );
    }
    out
}

/// Collects one file's matches in the output format.
struct Collect {
    path: String,
    mode: Mode,
    count: u64,
    text: String,
    lines: usize,
    max_lines: usize,
}

impl Collect {
    fn push(&mut self, sep: char, line_number: Option<u64>, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let _ = write!(self.text, "{}{sep}{}{sep}", self.path, line_number.unwrap_or(0));
        match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                let _ = writeln!(self.text, "{}... [line cut at {MAX_LINE_CHARS} characters]", &text[..cut]);
            }
            None => {
                self.text.push_str(text);
                self.text.push('\n');
            }
        }
        self.lines += 1;
    }
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        match self.mode {
            Mode::FilesWithMatches => Ok(false),
            Mode::Count => Ok(true),
            Mode::Content => {
                // Past what can be shown, keep counting but stop formatting.
                if self.lines < self.max_lines {
                    self.push(':', m.line_number(), m.bytes());
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _searcher: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.lines < self.max_lines {
            self.push('-', c.line_number(), c.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        if self.lines < self.max_lines {
            self.text.push_str("--\n");
        }
        Ok(true)
    }
}

/// The model's one line for a pattern the regex engine refused: the pattern (cut when
/// long) and the engine's reason, without the engine's multi-line picture of the pattern
/// (which repeats all of it, twice, for a megabyte pattern).
fn pattern_error(pattern: &str, engine: &str) -> String {
    let reason = engine
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or_else(|| engine.lines().next().unwrap_or_default().trim());
    format!("invalid pattern {}: {reason}", quoted(pattern))
}
