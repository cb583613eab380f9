//! Helpers the durable tests share.
// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::Path;

use harnessx_agent::model::{Message, ModelRequest};

/// The tool results in the request so far, in order, joined with `" | "`: what the test
/// models answer with, so a final answer shows every result the model saw.
pub(crate) fn tool_contents(req: &ModelRequest) -> String {
    let seen: Vec<&str> = req
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    seen.join(" | ")
}

/// Appends one line to `dir/name` (O_APPEND: safe across the processes of a test).
pub(crate) fn log(dir: &Path, name: &str, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join(name)).unwrap();
    writeln!(f, "{line}").unwrap();
}

/// The lines of `dir/name`; none when it does not exist.
pub(crate) fn lines(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(name))
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}
