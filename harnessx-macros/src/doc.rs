//! Doc-comment parsing: the tool description and the per-parameter texts of an `Args:`
//! (or rustdoc `# Arguments`) section. Pure logic over lines; unit-tested below.
//!
//! A fenced code block (```` ``` ```` or `~~~`, any info string, indented or not) is
//! opaque: nothing inside it starts a section or a parameter entry. In the description it
//! is kept as written; in an `Args:` section it is left out of the parameter text.

use proc_macro2::Span;

/// One documented parameter: its name, its text, and the doc line it came from.
#[derive(Debug, Clone)]
pub(crate) struct ArgDoc {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) span: Span,
}

/// A doc comment split into the description and the parameter entries.
#[derive(Debug, Default)]
pub(crate) struct ParsedDoc {
    pub(crate) description: String,
    pub(crate) args: Vec<ArgDoc>,
}

/// The recognised section headers, Google style (`Args:`) and rustdoc style (`# Errors`).
const GOOGLE_SECTIONS: [&str; 9] =
    ["Args", "Arguments", "Returns", "Raises", "Errors", "Examples", "Example", "Note", "Notes"];
const RUSTDOC_SECTIONS: [&str; 8] =
    ["Arguments", "Args", "Errors", "Examples", "Example", "Panics", "Returns", "Safety"];

#[derive(Debug, PartialEq)]
enum Header {
    Args,
    Other,
}

fn header(line: &str) -> Option<Header> {
    let t = line.trim();
    let name = if let Some(rest) = t.strip_prefix('#') {
        let rest = rest.trim_start_matches('#');
        if !rest.starts_with(' ') {
            return None;
        }
        let rest = rest.trim();
        RUSTDOC_SECTIONS.iter().find(|s| **s == rest)?
    } else {
        let rest = t.strip_suffix(':')?;
        GOOGLE_SECTIONS.iter().find(|s| **s == rest)?
    };
    Some(if matches!(*name, "Args" | "Arguments") { Header::Args } else { Header::Other })
}

/// Parses one line of an `Args:` section as the start of an entry:
/// `name: text`, `name (type): text`, `` * `name` - text `` or `` - `name`: text ``.
fn entry(line: &str) -> Option<(String, String)> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix("* ").or_else(|| t.strip_prefix("- ")) {
        let rest = rest.trim_start().strip_prefix('`')?;
        let (name, after) = rest.split_once('`')?;
        if !is_ident(name) {
            return None;
        }
        let after = after.trim_start();
        let text = after
            .strip_prefix("- ")
            .or_else(|| after.strip_prefix("– "))
            .or_else(|| after.strip_prefix(':'))
            .or_else(|| (after == "-" || after.is_empty()).then_some(""))?;
        return Some((name.to_owned(), text.trim().to_owned()));
    }
    let (head, text) = t.split_once(':')?;
    let head = head.trim_end();
    let name = match head.split_once(' ') {
        Some((name, ty)) if ty.trim_start().starts_with('(') && ty.ends_with(')') => name,
        Some(_) => return None,
        None => head,
    };
    is_ident(name).then(|| (name.to_owned(), text.trim().to_owned()))
}

fn is_ident(s: &str) -> bool {
    let s = s.strip_prefix("r#").unwrap_or(s);
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// An opening code fence: three or more backticks or tildes (a backtick fence's info
/// string has no backtick, so ```` ```x``` ```` is inline code). Returns the fence
/// character and length.
fn fence_open(line: &str) -> Option<(char, usize)> {
    let t = line.trim_start();
    let c = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = t.len() - t.trim_start_matches(c).len();
    let info = &t[len..];
    (len >= 3 && !(c == '`' && info.contains('`'))).then_some((c, len))
}

/// Whether `line` closes a fence opened with `len` times `c`: at least as many of the
/// same character and nothing else.
fn fence_close(line: &str, (c, len): (char, usize)) -> bool {
    let t = line.trim();
    t.len() >= len && t.chars().all(|x| x == c)
}

/// For each line, whether it belongs to a fenced code block (the fences included). An
/// unclosed fence runs to the end, as in Markdown.
fn fenced(lines: &[(String, Span)]) -> Vec<bool> {
    let mut open = None;
    lines
        .iter()
        .map(|(line, _)| match open {
            Some(fence) => {
                if fence_close(line, fence) {
                    open = None;
                }
                true
            }
            None => {
                open = fence_open(line);
                open.is_some()
            }
        })
        .collect()
}

/// Splits doc lines (one per `///` line, leading space removed, with its span).
pub(crate) fn parse(lines: &[(String, Span)]) -> ParsedDoc {
    let mut doc = ParsedDoc::default();
    let fenced = fenced(lines);
    let is_header = |i: usize| !fenced[i] && header(&lines[i].0).is_some();
    let mut description: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() && !is_header(i) {
        description.push(lines[i].0.trim_end());
        i += 1;
    }
    while description.last().is_some_and(|l| l.trim().is_empty()) {
        description.pop();
    }
    let first = description.iter().position(|l| !l.trim().is_empty()).unwrap_or(description.len());
    doc.description = description[first..].join("\n");

    let mut in_args = false;
    let mut entry_indent: Option<usize> = None;
    for ((line, span), fenced) in lines[i..].iter().zip(&fenced[i..]) {
        if *fenced {
            continue;
        }
        if let Some(h) = header(line) {
            in_args = h == Header::Args;
            entry_indent = None;
            continue;
        }
        if !in_args || line.trim().is_empty() {
            continue;
        }
        let ind = indent(line);
        let continuation = doc.args.last_mut().filter(|_| entry_indent.is_some_and(|e| ind > e));
        match (continuation, entry(line)) {
            (Some(last), _) => push_text(&mut last.text, line.trim()),
            (None, Some((name, text))) => {
                entry_indent.get_or_insert(ind);
                doc.args.push(ArgDoc { name, text, span: *span });
            }
            (None, None) => {
                if let Some(last) = doc.args.last_mut() {
                    push_text(&mut last.text, line.trim());
                }
            }
        }
    }
    doc
}

fn push_text(text: &mut String, more: &str) {
    if !text.is_empty() {
        text.push(' ');
    }
    text.push_str(more);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(String, Span)> {
        text.lines().map(|l| (l.to_owned(), Span::call_site())).collect()
    }

    fn args(doc: &ParsedDoc) -> Vec<(&str, &str)> {
        doc.args.iter().map(|a| (a.name.as_str(), a.text.as_str())).collect()
    }

    #[test]
    fn google_style() {
        let doc =
            parse(&lines("Multiply two numbers.\n\nArgs:\n    a: First number.\n    b: Second number.\n"));
        assert_eq!(doc.description, "Multiply two numbers.");
        assert_eq!(args(&doc), [("a", "First number."), ("b", "Second number.")]);
    }

    #[test]
    fn description_keeps_several_lines_and_stops_at_any_section() {
        let doc = parse(&lines("\nFirst line.\nSecond line.\n\nThird.\n\nReturns:\n    The sum.\n"));
        assert_eq!(doc.description, "First line.\nSecond line.\n\nThird.");
        assert!(doc.args.is_empty());
        let doc = parse(&lines("Reads.\n# Errors\nWhen missing.\n# Examples\nx"));
        assert_eq!(doc.description, "Reads.");
    }

    #[test]
    fn continuation_lines_and_types() {
        let doc = parse(&lines(
            "D.\nArgs:\n  path (str): Where to read,\n      relative to the root.\n  limit: Max bytes.\nNote:\n  x: not an arg.",
        ));
        assert_eq!(args(&doc), [("path", "Where to read, relative to the root."), ("limit", "Max bytes.")]);
    }

    #[test]
    fn rustdoc_style() {
        let doc = parse(&lines(
            "Fetch a page.\n\n# Arguments\n\n* `url` - The address.\n  Must be https.\n* `max_length` - Cut-off.\n\n# Errors\n\n* `x` - no.",
        ));
        assert_eq!(doc.description, "Fetch a page.");
        assert_eq!(args(&doc), [("url", "The address. Must be https."), ("max_length", "Cut-off.")]);
    }

    #[test]
    fn fences_open_and_close() {
        assert_eq!(fence_open("```"), Some(('`', 3)));
        assert_eq!(fence_open("    ```rust,ignore"), Some(('`', 3)));
        assert_eq!(fence_open("~~~~ python"), Some(('~', 4)));
        assert_eq!(fence_open("``"), None);
        assert_eq!(fence_open("```inline``` code"), None);
        assert_eq!(fence_open("~~~ a`b"), Some(('~', 3)));
        assert!(fence_close("  ```  ", ('`', 3)));
        assert!(fence_close("`````", ('`', 3)));
        assert!(!fence_close("```", ('`', 4)));
        assert!(!fence_close("~~~", ('`', 3)));
        assert!(!fence_close("``` rust", ('`', 3)));
    }

    #[test]
    fn fenced_blocks_are_opaque_anywhere() {
        // In the description: kept as written, and an `Args:` inside does not end it.
        let doc = parse(&lines("Run a script.\n\n```python\nArgs:\n    a: no\n```\n\nArgs:\n    a: Yes."));
        assert_eq!(doc.description, "Run a script.\n\n```python\nArgs:\n    a: no\n```");
        assert_eq!(args(&doc), [("a", "Yes.")]);
        // In `Args:`: indented, tilde fences with an info string are skipped, and an entry
        // after the fence is still an entry.
        let doc = parse(&lines(
            "D.\nArgs:\n    a: First.\n    ~~~text\n    b: not an entry\n    # Errors\n    ~~~\n    b: Second.",
        ));
        assert_eq!(args(&doc), [("a", "First."), ("b", "Second.")]);
        // An unclosed fence runs to the end.
        let doc = parse(&lines("D.\nExamples:\n```\nArgs:\n  a: no"));
        assert!(doc.args.is_empty());
        // A longer closing fence closes; a shorter one does not.
        let doc = parse(&lines("D.\nArgs:\n  a: A.\n````\n```\nb: no\n`````\n  b: B."));
        assert_eq!(args(&doc), [("a", "A."), ("b", "B.")]);
    }

    // An `Args:` block inside a fenced example in `Examples:` used to start a section and
    // redefine `a` with the example's text.
    #[test]
    fn args_inside_a_fenced_example_does_not_redefine_a_parameter() {
        let doc = parse(&lines(
            "Multiply.\n\nArgs:\n    a: First number.\n\nExamples:\n    ```\n    Args:\n        a: 6\n    ```\n",
        ));
        assert_eq!(doc.description, "Multiply.");
        assert_eq!(args(&doc), [("a", "First number.")]);
    }

    #[test]
    fn headers_are_exact() {
        assert_eq!(header("Args:"), Some(Header::Args));
        assert_eq!(header("  # Arguments"), Some(Header::Args));
        assert_eq!(header("## Panics"), Some(Header::Other));
        assert_eq!(header("Arguments are checked:"), None);
        assert_eq!(header("#Errors"), None);
        assert_eq!(entry("r#type: The kind."), Some(("r#type".into(), "The kind.".into())));
        assert_eq!(entry("see also: this"), None);
    }
}
