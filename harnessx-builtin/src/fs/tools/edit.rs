//! `edit_file`: replace an exact string; an ambiguous or missing match is refused.

use std::io::Read;

use harnessx_core::{ToolAnnotations, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{FsConfig, object};
use crate::fs::contain::{FsError, quoted};

pub(super) const DESCRIPTION: &str = "Replace an exact string in a text file. old_string must match \
exactly once (include enough surrounding lines to make it unique), or set replace_all=true to \
replace every occurrence. Use it to grow or fix a file without rewriting it whole.";

/// Annotations: it writes (not read-only) and replaces text (destructive). Not idempotent:
/// when `new_string` contains `old_string`, the same call again edits again. Local files only
/// (not open world).
pub(super) const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(false).open_world(false);

/// Largest file `edit_file` loads.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

pub(super) fn schema() -> Value {
    object(
        json!({
            "path": {"type": "string", "description": "The file to edit."},
            "old_string": {"type": "string", "description": "The exact text to replace (whitespace included)."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {"type": "boolean",
                            "description": "Replace every occurrence instead of exactly one; default false."},
        }),
        &["path", "old_string", "new_string"],
    )
}

#[derive(Deserialize)]
pub(super) struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

pub(super) fn run(cfg: &FsConfig, args: Args) -> Result<ToolOutput, ToolError> {
    let target = cfg.scope.locate(&args.path)?;
    let shown = quoted(&target.display);
    if args.old_string.is_empty() {
        return Err(ToolError::new("old_string is empty; give the exact text to replace"));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::new("old_string and new_string are the same; nothing would change"));
    }
    let (file, _) = target.open_file()?;
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FsError::new(format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(ToolError::new(format!("{shown} is too large to edit (more than 64 MiB)")));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::new(format!("{shown} is not valid UTF-8 text; edit_file only edits text")))?;
    let positions = occurrences(&text, &args.old_string);
    let first = match (positions.as_slice(), args.replace_all) {
        ([], _) => {
            return Err(ToolError::new(format!(
                "old_string was not found in {shown}; nothing was changed. Read the file and copy the text exactly"
            )));
        }
        ([only], _) => *only,
        ([first, ..], true) => *first,
        (many, false) => {
            return Err(ToolError::new(format!(
                "old_string matches {} times in {shown}; nothing was changed. Include more surrounding text so it \
                 matches exactly once, or set replace_all=true",
                many.len()
            )));
        }
    };
    let (updated, count) = if args.replace_all {
        let count = text.matches(args.old_string.as_str()).count();
        (text.replace(args.old_string.as_str(), &args.new_string), count)
    } else {
        let mut s = String::with_capacity(text.len() + args.new_string.len());
        s.push_str(&text[..first]);
        s.push_str(&args.new_string);
        s.push_str(&text[first + args.old_string.len()..]);
        (s, 1)
    };
    target.write_atomic(updated.as_bytes(), true)?;
    let line = text[..first].matches('\n').count() + 1;
    Ok(ToolOutput::text(if count == 1 {
        format!("Edited {shown}: replaced 1 occurrence at line {line}.")
    } else {
        format!("Edited {shown}: replaced {count} occurrences (the first at line {line}).")
    }))
}

/// Byte offsets of every occurrence of `needle`, overlapping ones included (two
/// overlapping matches are just as ambiguous as two apart).
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(i) = haystack[start..].find(needle) {
        let at = start + i;
        out.push(at);
        start = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::occurrences;

    #[test]
    fn overlapping_occurrences_count_as_ambiguous() {
        assert_eq!(occurrences("aaa", "aa"), [0, 1]);
        assert_eq!(occurrences("x = 1; y = 1;", "= 1"), [2, 9]);
        assert_eq!(occurrences("\u{e9}\u{e9}", "\u{e9}"), [0, 2]);
        assert!(occurrences("abc", "d").is_empty());
    }
}
