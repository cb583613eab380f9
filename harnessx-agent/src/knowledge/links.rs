//! The links of a concept's Markdown: `[[id]]` (also `[[id|label]]`, `[[id#part]]`) and
//! relative Markdown links to other `.md` files (`[text](../b.md#part)`). Links inside
//! fenced code blocks and inline code are not links; web links, anchors and links to other
//! kinds of file (images) are not concept links.
//!
//! Hand-written rather than a Markdown parser: only these two forms are edges, and a
//! scan of each line is enough for them.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// One link as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) enum RawLink {
    /// `[[target]]`: an id or an alias.
    Wiki(String),
    /// `[text](target.md)`: a path relative to the linking file.
    Path(String),
}

impl RawLink {
    /// The link as the author wrote its target, for reports.
    pub(crate) fn written(&self) -> String {
        match self {
            Self::Wiki(t) => format!("[[{t}]]"),
            Self::Path(t) => format!("({t})"),
        }
    }
}

/// The links of `body`, in order, each once. Linear in the size of the body: each line is
/// scanned left to right once per link form, and a link seen before is found in a set (a
/// file of a million distinct links took hours when each was compared with every earlier
/// one).
pub(crate) fn extract(body: &str) -> Vec<RawLink> {
    let mut out = Links::default();
    let mut fenced = false;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Inline code spans: drop the text between pairs of backticks.
        let mut text = String::with_capacity(line.len());
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                text.push_str(part);
            }
        }
        scan_line(&text, &mut out);
    }
    out.order
}

/// Links in the order first seen, each once.
#[derive(Default)]
struct Links {
    order: Vec<RawLink>,
    seen: HashSet<RawLink>,
}

fn scan_line(line: &str, out: &mut Links) {
    let mut push = |link: RawLink| {
        if out.seen.insert(link.clone()) {
            out.order.push(link);
        }
    };
    let mut rest = line;
    while let Some(start) = rest.find("[[") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("]]") else { break };
        let inner = &after[..end];
        let target = inner.split(['|', '#']).next().unwrap_or("").trim();
        if !target.is_empty() {
            push(RawLink::Wiki(target.to_owned()));
        }
        rest = &after[end + 2..];
    }
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        let path = target.split('#').next().unwrap_or("");
        let is_web = target.contains("://") || target.starts_with("mailto:");
        if !is_web && path.to_ascii_lowercase().ends_with(".md") {
            push(RawLink::Path(path.trim_start_matches('<').trim_end_matches('>').to_owned()));
        }
        rest = &after[end + 1..];
    }
}

/// `target` (relative to the folder of `from`) as one normalised path, without touching
/// the filesystem: `.` dropped, `..` taking a component off.
pub(crate) fn resolve_path(from: &Path, target: &str) -> PathBuf {
    let base = from.parent().unwrap_or(Path::new(""));
    normalise(&base.join(target))
}

/// `path` with `.` and `..` folded away.
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiki_and_relative_markdown_links() {
        let body = "See [[black-hole]] and [[Neutron Star|neutron stars]], [[sun#core]].\n\
                    Also [the orbit](../physics/orbit.md#kepler) and [web](https://x.org/a.md), \
                    ![img](pic.png), [anchor](#top), [[black-hole]] again.";
        assert_eq!(
            extract(body),
            [
                RawLink::Wiki("black-hole".into()),
                RawLink::Wiki("Neutron Star".into()),
                RawLink::Wiki("sun".into()),
                RawLink::Path("../physics/orbit.md".into()),
            ]
        );
    }

    #[test]
    fn code_is_not_links() {
        let body = "```\n[[not-a-link]]\n```\nInline `[[nor-this]]` but [[this]].";
        assert_eq!(extract(body), [RawLink::Wiki("this".into())]);
    }

    #[test]
    fn paths_resolve_against_the_linking_file() {
        assert_eq!(resolve_path(Path::new("/k/a/x.md"), "../b/y.md"), PathBuf::from("/k/b/y.md"));
        assert_eq!(resolve_path(Path::new("/k/a/x.md"), "./z.md"), PathBuf::from("/k/a/z.md"));
    }
}
