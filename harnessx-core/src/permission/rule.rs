//! [`Rule`]: one rule as written, `NAME` or `NAME(PATTERN)`, read into what its pattern
//! looks at. What each form means, and how a set of rules decides a call, is in
//! [`rules`](super::rules).

use std::fmt;

use globset::{GlobBuilder, GlobMatcher};

use crate::permission::command::CommandPattern;
use crate::permission::path;

/// A rule that cannot be used: malformed, or naming a tool or argument that is not there.
/// The message names the rule and says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The rule's text is not `NAME` or `NAME(PATTERN)`.
    #[error("malformed permission rule {rule:?}: {why}")]
    Malformed {
        /// The rule as written.
        rule: String,
        /// What is wrong, and the form expected.
        why: String,
    },
    /// The rule names a tool that is not registered.
    #[error("permission rule {rule:?} names the tool {tool:?}, which is not registered (known: {known})")]
    UnknownTool {
        /// The rule as written.
        rule: String,
        /// The tool it names.
        tool: String,
        /// The registered tools, comma-separated.
        known: String,
    },
    /// The rule names an argument the tool does not have, or one that is not a string.
    #[error("permission rule {rule:?}: {why}")]
    Argument {
        /// The rule as written.
        rule: String,
        /// What is wrong with the argument.
        why: String,
    },
}

/// What a rule's pattern looks at.
#[derive(Clone)]
pub(super) enum Pattern {
    /// `NAME`: every call.
    Any,
    /// `NAME(PATTERN)`: the `command` argument, as a shell script.
    Command(CommandPattern),
    /// `NAME(ARG=GLOB)`.
    Argument(ArgumentPattern),
    /// `NAME(ARG:VALUE)`: the argument, or the command pattern `ARG:VALUE`, as the call
    /// settles it (see [`rules`](super::rules)).
    Either { argument: ArgumentPattern, command: CommandPattern },
}

/// `ARG=GLOB` on a string argument.
#[derive(Clone)]
pub(super) struct ArgumentPattern {
    pub(super) name: String,
    pub(super) is_path: bool,
    pub(super) matcher: GlobMatcher,
}

impl ArgumentPattern {
    fn new(name: &str, glob: &str) -> Result<Self, String> {
        let is_path = is_path_argument(name);
        let glob = if is_path { path::normalize(glob, None).into_owned() } else { glob.to_owned() };
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(is_path)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("bad glob {glob:?}: {e}"))?
            .compile_matcher();
        Ok(Self { name: name.to_owned(), is_path, matcher })
    }
}

/// The argument whose script command patterns read.
pub(super) const COMMAND: &str = "command";

/// One parsed rule.
#[derive(Clone)]
pub struct Rule {
    pub(super) text: String,
    pub(super) tool: String,
    pub(super) pattern: Pattern,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn is_path_argument(name: &str) -> bool {
    name == "path" || name.ends_with("_path")
}

impl Rule {
    /// Parses `NAME` or `NAME(PATTERN)`.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let malformed = |why: &str| RuleError::Malformed { rule: text.to_owned(), why: why.to_owned() };
        let trimmed = text.trim();
        let (tool, inner) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return Err(malformed("a pattern ends with `)`, as in run_bash(git status *)"));
                };
                (tool.trim_end(), Some(inner))
            }
        };
        if !valid_tool_name(tool) {
            return Err(malformed(
                "expected NAME or NAME(PATTERN), NAME a tool name (letters, digits, `_`, `-`), e.g. read_file(path=src/**) or run_bash(git status *)",
            ));
        }
        let pattern = match inner.map(str::trim) {
            None => Pattern::Any,
            Some("") => return Err(malformed("the pattern in () is empty; write NAME alone for every call")),
            Some(inner) => pattern(inner).map_err(|why| malformed(&why))?,
        };
        Ok(Self { text: trimmed.to_owned(), tool: tool.to_owned(), pattern })
    }

    /// The tool the rule is about.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The rule as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it matches every call of its tool (`NAME` alone).
    pub fn is_name_only(&self) -> bool {
        matches!(self.pattern, Pattern::Any)
    }
}

/// The pattern in `NAME(..)`.
fn pattern(inner: &str) -> Result<Pattern, String> {
    if let Some((name, glob)) = named(inner, '=') {
        return Ok(match name {
            COMMAND => Pattern::Command(CommandPattern::parse(glob)?),
            _ => Pattern::Argument(ArgumentPattern::new(name, glob)?),
        });
    }
    let Some((name, value)) = named(inner, ':') else {
        return Ok(Pattern::Command(CommandPattern::parse(inner)?));
    };
    if name == COMMAND {
        return Ok(Pattern::Command(CommandPattern::parse(value)?));
    }
    // Both readings, as far as each can be read.
    Ok(match (ArgumentPattern::new(name, value), CommandPattern::parse(inner)) {
        (Ok(argument), Ok(command)) => Pattern::Either { argument, command },
        (Ok(argument), Err(_)) => Pattern::Argument(argument),
        (Err(_), Ok(command)) => Pattern::Command(command),
        (Err(_), Err(why)) => return Err(why),
    })
}

/// `ARG` and what follows `separator` in `ARG=GLOB` or `ARG:VALUE`, ARG an identifier.
fn named(inner: &str, separator: char) -> Option<(&str, &str)> {
    let (name, glob) = inner.split_once(separator)?;
    let mut bytes = name.bytes();
    let first = bytes.next()?;
    ((first.is_ascii_alphabetic() || first == b'_') && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then_some((name, glob))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        for ok in [
            "read_file",
            "run_bash(git status*)",
            "run_bash(git status *)",
            "run_bash(git * x)",
            "run_bash(*)",
            "run_bash(:*)",
            "write_file(path=src/**)",
            "write_file(path:src/**)",
            " grep ( path = x ) ",
        ] {
            Rule::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in
            ["", "run bash", "run_bash(", "run_bash()", "run_bash(git | x)", "x(path=[)", "(x)", "a)b("]
        {
            let err = Rule::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("malformed permission rule"), "{bad}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
