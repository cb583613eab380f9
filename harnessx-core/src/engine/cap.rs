//! The central cap on tool results ([`ToolPolicy::max_result_chars`](crate::ToolPolicy)):
//! applied by the pipeline to every result a handler gave (built-in, user or MCP tool),
//! after the tool's own limits.
//!
//! A longer result reaches the model as its head and its tail with one marker line
//! between them that says how many characters were cut. When the run has a
//! [`ResultDir`], the whole text is saved there first and the marker names the file, so
//! the model can read parts of it with the file tools. Structured content longer than the
//! cap (as compact JSON) is replaced by its capped text, a JSON string. Cuts fall on
//! UTF-8 boundaries, and on a line boundary when one is near.
//!
//! Media parts ([`ToolResult::parts`]: images, documents, audio) are left as they are:
//! cutting an image or a PDF in the middle gives the model garbage, and characters are not
//! their measure. Each producer bounds its media in bytes instead, and refuses what is over
//! its limit with a one-line error (`read_file`'s `max_media_bytes`, `fetch_url`'s
//! `max_bytes`, the CLI's `--max-attach-bytes`, and for MCP servers a limit still to come).
//!
//! Hand-written because it is on every call's path: a result within the cap costs one
//! length comparison (a UTF-8 string has at most as many characters as bytes); only a
//! longer one is counted and cut.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::tool::call::ToolResult;

/// The default of [`ToolPolicy::max_result_chars`](crate::ToolPolicy::max_result_chars).
pub const DEFAULT_MAX_RESULT_CHARS: usize = 40_000;

/// The smallest cap that is applied as given: below it the marker line would not fit
/// beside a useful head and tail, so smaller values are raised to it.
pub const MIN_RESULT_CHARS: usize = 400;

/// How far (in characters) a cut may move to fall on a line boundary.
const LINE_SLACK: usize = 200;

/// Where a run saves the whole text of a capped result, and how the model's file tools
/// name that folder (usually a path relative to their `base_path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultDir {
    /// The folder on this machine (created when the first result is saved).
    pub path: PathBuf,
    /// How markers name the folder for the model.
    pub shown_as: PathBuf,
}

impl ResultDir {
    /// A folder that markers name as it is.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        Self { shown_as: path.clone(), path }
    }

    /// Markers name the folder as `shown` (e.g. relative to the file tools' base path).
    pub fn shown_as(mut self, shown: impl Into<PathBuf>) -> Self {
        self.shown_as = shown.into();
        self
    }
}

/// Caps `result` to `max_chars` characters (content and structured content); saves the
/// whole text under `dir` first when given. A result within the cap is not touched.
pub fn cap_result(result: &mut ToolResult, max_chars: usize, dir: Option<&ResultDir>) {
    let ToolResult { call_id, name, content, structured_content, .. } = result;
    cap_parts(content, structured_content, (name, call_id), max_chars, dir);
}

/// [`cap_result`] on a result's parts: its text, its structured content, and the tool's
/// name and the call's id that name the saved file.
pub(crate) fn cap_parts(
    content: &mut String,
    structured_content: &mut Option<Value>,
    (name, call_id): (&str, &str),
    max_chars: usize,
    dir: Option<&ResultDir>,
) {
    let max_chars = max_chars.max(MIN_RESULT_CHARS);
    if content.len() > max_chars {
        let saved = dir.and_then(|d| save(d, name, call_id, content));
        if let Some(capped) = cap_text(content, max_chars, saved.as_deref()) {
            *content = capped;
        }
    }
    if let Some(structured) = &*structured_content
        && !structured.is_string()
    {
        // Measured without being written out (most results are far within the cap);
        // written only when too long.
        if json_len(structured) > max_chars {
            let text = serde_json::to_string(structured).unwrap_or_default();
            // Its long strings cut first, so its keys and small values stay (a bash
            // result's `exit_code`, a schema's required fields); only a value whose
            // bulk is not in strings (a million numbers) becomes its JSON text, cut.
            let fitted = structured_content.as_mut().is_some_and(|v| cap_strings(v, text.len(), max_chars));
            if !fitted && let Some(capped) = cap_text(&text, max_chars, None) {
                *structured_content = Some(Value::String(capped));
            }
        }
    } else if let Some(Value::String(text)) = structured_content
        && text.len() > max_chars
        && let Some(capped) = cap_text(text, max_chars, None)
    {
        *text = capped;
    }
}

/// The length of `value`'s compact JSON text, counted as it is written, into nothing.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a writer that cannot fail does not fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The least a string inside structured content is cut to: room for its head, the
/// marker and its tail.
const MIN_STRING_CHARS: usize = 200;

/// The length of `s` as a JSON string's contents: escapes included, quotes not.
fn escaped_len(s: &str) -> usize {
    s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                0..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// Cuts the longest strings in `value` (whose compact JSON is `len` bytes) so that its
/// JSON fits `max_chars`, each to the same length (strings shorter than that stay
/// whole). Returns whether it fits now; when it cannot (the bulk is not in strings),
/// `value` is left as it was.
fn cap_strings(value: &mut Value, len: usize, max_chars: usize) -> bool {
    fn lengths(value: &Value, out: &mut Vec<usize>) {
        match value {
            Value::String(s) => out.push(escaped_len(s)),
            Value::Array(items) => items.iter().for_each(|v| lengths(v, out)),
            Value::Object(map) => map.values().for_each(|v| lengths(v, out)),
            _ => {}
        }
    }
    fn cut(value: &mut Value, each: usize) {
        match value {
            Value::String(s) => {
                // `each` is in JSON bytes; the text gets its share of them.
                let json = escaped_len(s);
                if json > each {
                    let chars = (each as u128 * s.len() as u128 / json as u128) as usize;
                    if let Some(capped) = cap_text(s, chars.max(MIN_STRING_CHARS / 2), None) {
                        *s = capped;
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| cut(v, each)),
            Value::Object(map) => map.values_mut().for_each(|v| cut(v, each)),
            _ => {}
        }
    }
    let mut sizes = Vec::new();
    lengths(value, &mut sizes);
    let strings: usize = sizes.iter().sum();
    // What is not string text (keys, quotes, numbers, escapes) stays as it is.
    let Some(room) = max_chars.checked_sub(len.saturating_sub(strings)) else { return false };
    // The largest `each` with sum(min(size, each)) <= room, over the sizes in order.
    sizes.sort_unstable();
    let (mut spent, mut each) = (0usize, None);
    for (i, &size) in sizes.iter().enumerate() {
        let rest = sizes.len() - i;
        if spent + size * rest > room {
            each = Some((room - spent) / rest);
            break;
        }
        spent += size;
    }
    let Some(each) = each else { return true };
    if each < MIN_STRING_CHARS {
        return false;
    }
    let before = value.clone();
    // The marker line is counted in `each`; escapes may still push it over: checked.
    cut(value, each);
    let fits = serde_json::to_string(value).is_ok_and(|t| t.len() <= max_chars);
    if !fits {
        *value = before;
    }
    fits
}

/// `text` cut to at most `max_chars` characters (the marker line included): its head, a
/// marker naming how many characters were cut (and `saved`, the file with all of it), its
/// tail. `None` when it is within the cap.
pub fn cap_text(text: &str, max_chars: usize, saved: Option<&str>) -> Option<String> {
    if text.len() <= max_chars {
        return None;
    }
    // ASCII text (most tool output) has a character per byte: no counting, no walking.
    let ascii = text.is_ascii();
    let total = if ascii { text.len() } else { text.chars().count() };
    if total <= max_chars {
        return None;
    }
    // The marker's length depends on the count it names: sized for the largest count.
    let marker_room = marker(total, saved).chars().count() + 2;
    let keep = max_chars.saturating_sub(marker_room).max(2);
    let head_chars = keep * 3 / 5;
    let tail_chars = keep - head_chars;
    let at = |n: usize| if ascii { n.min(text.len()) } else { byte_at(text, n) };
    let head_end = line_back(text, at(head_chars));
    let tail_start = line_forward(text, at(total - tail_chars));
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let count = |s: &str| if ascii { s.len() } else { s.chars().count() };
    let cut = total - count(head) - count(tail);
    let mut out = String::with_capacity(head.len() + tail.len() + marker_room + 8);
    out.push_str(head);
    if !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker(cut, saved));
    out.push('\n');
    out.push_str(tail);
    Some(out)
}

/// The line between head and tail.
fn marker(cut: usize, saved: Option<&str>) -> String {
    match saved {
        Some(file) => format!(
            "[… {cut} characters cut here; the whole result is saved in {file}: read parts of it with the file tools …]"
        ),
        None => format!("[… {cut} characters cut here to fit the result limit …]"),
    }
}

/// The byte offset of character `n` (the end when there are fewer).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// `at` moved back to just after a newline, when one is within [`LINE_SLACK`] bytes
/// before it (and the head keeps something).
fn line_back(text: &str, at: usize) -> usize {
    let from = floor_boundary(text, at.saturating_sub(LINE_SLACK));
    match text[from..at].rfind('\n') {
        Some(i) if from + i + 1 > 0 && from + i + 1 < at => from + i + 1,
        _ => at,
    }
}

/// `at` moved forward to just after a newline, when one is within [`LINE_SLACK`] bytes
/// after it.
fn line_forward(text: &str, at: usize) -> usize {
    let to = floor_boundary(text, (at + LINE_SLACK).min(text.len()));
    match text[at..to].find('\n') {
        Some(i) if at + i + 1 < text.len() => at + i + 1,
        _ => at,
    }
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Saves `content` in a new file of `dir` named after the tool and the call; the name as
/// the model reads it, or `None` when it could not be written (logged for the operator;
/// the marker then names no file).
fn save(dir: &ResultDir, tool: &str, call_id: &str, content: &str) -> Option<String> {
    if let Err(e) = std::fs::create_dir_all(&dir.path) {
        tracing::warn!(dir = %dir.path.display(), error = %e, "cannot create the folder for capped tool results");
        return None;
    }
    let stem = format!("{}-{}", safe_name(tool), safe_name(call_id));
    // Call ids are unique within a run; another run may have used the same one (a test
    // model's `call_1_0`): a few numbered names, then one made unique by the time.
    let stamp = || {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        format!("{stem}-{}-{}.txt", now.as_nanos(), std::process::id())
    };
    for n in 0..=16u32 {
        let name = match n {
            0 => format!("{stem}.txt"),
            16 => stamp(),
            n => format!("{stem}-{n}.txt"),
        };
        let path = dir.path.join(&name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                if let Err(e) = file.write_all(content.as_bytes()) {
                    tracing::warn!(file = %path.display(), error = %e, "cannot save a capped tool result");
                    let _ = std::fs::remove_file(&path);
                    return None;
                }
                return Some(shown(&dir.shown_as, &name));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot save a capped tool result");
                return None;
            }
        }
    }
    None
}

fn shown(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// A name part of ASCII letters, digits, `-` and `_` (anything else becomes `_`), at most
/// 64 characters: call ids come from the provider.
fn safe_name(text: &str) -> String {
    let name: String = text
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    if name.is_empty() { "result".into() } else { name }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolOutput;

    fn result(text: &str) -> ToolResult {
        ToolResult::success("call_1", "t", ToolOutput::text(text))
    }

    #[test]
    fn json_len_is_the_length_of_the_compact_text() {
        for v in [
            serde_json::json!(5),
            serde_json::json!({"a": "line\nwith \"quotes\" and \u{1} é 🦀", "b": [1.5, null, true, {"c": []}]}),
            serde_json::json!("x".repeat(10_000)),
        ] {
            assert_eq!(json_len(&v), serde_json::to_string(&v).unwrap().len());
        }
    }

    #[test]
    fn a_result_within_the_cap_is_untouched() {
        let mut r = result(&"é".repeat(500));
        cap_result(&mut r, 500, None);
        assert_eq!(r.content, "é".repeat(500), "500 characters in 1000 bytes are within a 500 cap");
    }

    #[test]
    fn a_long_result_keeps_head_and_tail_with_a_marker() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let mut r = result(&text);
        cap_result(&mut r, 1000, None);
        assert!(r.content.chars().count() <= 1000, "{}", r.content.chars().count());
        assert!(r.content.starts_with("line 0\nline 1\n"));
        assert!(r.content.ends_with("line 1999\n"));
        let marker = r.content.lines().find(|l| l.starts_with("[…")).unwrap();
        let kept = r.content.chars().count() - marker.chars().count() - 1;
        let cut: usize = marker.split(' ').nth(1).unwrap().parse().unwrap();
        assert_eq!(cut + kept, text.chars().count(), "the marker counts what was cut: {marker}");
        // Cut on line boundaries: every kept line is whole.
        for line in r.content.lines().filter(|l| !l.starts_with("[…")) {
            assert!(line.starts_with("line ") && line[5..].parse::<u32>().is_ok(), "{line:?}");
        }
    }

    #[test]
    fn cuts_fall_on_utf8_boundaries_without_lines() {
        for s in ["é", "日本", "🦀x", "a"] {
            let text = s.repeat(3000);
            let capped = cap_text(&text, 700, None).unwrap();
            assert!(capped.chars().count() <= 700);
            assert!(capped.starts_with(s) && capped.ends_with(s));
        }
    }

    #[test]
    fn a_tiny_cap_is_raised_to_the_minimum() {
        let mut r = result(&"x".repeat(5000));
        cap_result(&mut r, 1, None);
        assert!(r.content.chars().count() <= MIN_RESULT_CHARS);
        assert!(r.content.starts_with('x') && r.content.ends_with('x'));
    }

    #[test]
    fn the_whole_text_is_saved_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let text = "0123456789".repeat(1000);
        let results = ResultDir::new(dir.path().join("out")).shown_as("results");
        let mut r = ToolResult::success("call/../x", "mcp.tool", ToolOutput::text(text.clone()));
        cap_result(&mut r, 1000, Some(&results));
        assert!(r.content.contains("saved in results/mcp_tool-call____x.txt"), "{}", r.content);
        let saved = std::fs::read_to_string(dir.path().join("out/mcp_tool-call____x.txt")).unwrap();
        assert_eq!(saved, text);
        // The same call id again gets its own file.
        let mut again = ToolResult::success("call/../x", "mcp.tool", ToolOutput::text(text.clone()));
        cap_result(&mut again, 1000, Some(&results));
        assert!(again.content.contains("results/mcp_tool-call____x-1.txt"), "{}", again.content);
    }

    #[test]
    fn an_unwritable_folder_still_caps() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let mut r = result(&"y".repeat(5000));
        cap_result(&mut r, 1000, Some(&ResultDir::new(file.join("sub"))));
        assert!(r.content.contains("characters cut here to fit"), "{}", r.content);
    }

    #[test]
    fn structured_content_is_capped_the_same_way() {
        let value = serde_json::json!({"rows": (0..3000).collect::<Vec<_>>()});
        let mut r = ToolResult::success("c", "t", ToolOutput::json(value));
        cap_result(&mut r, 1000, None);
        assert!(r.content.chars().count() <= 1000);
        let Some(Value::String(s)) = &r.structured_content else { panic!("{:?}", r.structured_content) };
        assert!(s.chars().count() <= 1000 && s.starts_with("{\"rows\":[0,1,2") && s.ends_with("2999]}"));
    }

    #[test]
    fn structured_content_keeps_its_keys_and_small_values_when_its_strings_are_cut() {
        let value = serde_json::json!({
            "exit_code": 0, "output_limit_reached": true,
            "stdout": "y\n".repeat(50_000), "stderr": "e".repeat(3_000), "note": "short",
        });
        let mut r = ToolResult::success("c", "t", ToolOutput::json(value));
        cap_result(&mut r, 4_000, None);
        let v = r.structured_content.unwrap();
        assert!(serde_json::to_string(&v).unwrap().len() <= 4_000);
        assert_eq!((v["exit_code"].as_i64(), v["output_limit_reached"].as_bool()), (Some(0), Some(true)));
        assert_eq!(v["note"], "short");
        let (out, err) = (v["stdout"].as_str().unwrap(), v["stderr"].as_str().unwrap());
        assert!(
            out.starts_with("y\ny\n") && out.ends_with("y\n") && out.contains("characters cut here"),
            "{out}"
        );
        assert!(err.contains("characters cut here"));
        // Strings too many to share the room: the JSON text, cut.
        let many = serde_json::json!((0..5_000).map(|i| format!("s{i}")).collect::<Vec<_>>());
        let mut r = ToolResult::success("c", "t", ToolOutput::json(many));
        cap_result(&mut r, 1_000, None);
        assert!(matches!(&r.structured_content, Some(Value::String(s)) if s.chars().count() <= 1_000));
    }
}
