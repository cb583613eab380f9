//! Plain-text output a model reads easily, and cannot be fooled by: file names that hold
//! a newline or another control character are shown quoted and escaped, so a name cannot
//! pose as another line of a listing or of search results.

use std::fmt::Write;

/// Whether a character may not appear raw in a name we print: control characters, line
/// and paragraph separators, and the invisible direction and zero-width marks that can
/// make a name read as something else.
fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{2028}' | '\u{2029}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// A path (or name) as printed: unchanged when it is valid UTF-8 made of ordinary
/// characters; otherwise (or when it starts with `"`, so a quoted form is unambiguous)
/// double-quoted, with `\n`, `\t`, `\"`, `\\`, `\u{..}` and, for bytes that are not
/// UTF-8, `\x..` escapes.
pub(crate) fn escape_path(bytes: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(bytes)
        && !s.starts_with('"')
        && !s.chars().any(is_unsafe_char)
    {
        return s.to_owned();
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if is_unsafe_char(c) => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

/// A size in bytes, for people and models: `512 B`, `1.5 KiB`, `3.2 MiB`.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_unchanged() {
        assert_eq!(escape_path(b"src/main.rs"), "src/main.rs");
        assert_eq!(escape_path("caf\u{e9} notes.md".as_bytes()), "caf\u{e9} notes.md");
    }

    #[test]
    fn control_characters_cannot_pose_as_another_line() {
        assert_eq!(escape_path(b"a\nb.rs:1:fake"), "\"a\\nb.rs:1:fake\"");
        assert_eq!(escape_path(b"tab\there"), "\"tab\\there\"");
        assert_eq!(escape_path(b"\x1b[31mred"), "\"\\u{1b}[31mred\"");
        assert_eq!(escape_path("rtl\u{202e}txt.exe".as_bytes()), "\"rtl\\u{202e}txt.exe\"");
        assert_eq!(escape_path("sep\u{2028}x".as_bytes()), "\"sep\\u{2028}x\"");
    }

    #[test]
    fn invalid_utf8_and_leading_quotes_are_escaped() {
        assert_eq!(escape_path(b"bad\xffname"), "\"bad\\xffname\"");
        assert_eq!(escape_path(b"\"quoted\""), "\"\\\"quoted\\\"\"");
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(10), "10 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MiB");
    }
}
