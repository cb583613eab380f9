//! YAML front matter: the `---` block that opens a `SKILL.md` (and a knowledge concept),
//! split from the Markdown body and decoded into a `Deserialize` type.
//!
//! Errors carry the line of the whole file (the front matter starts on line 2), so a
//! build error can point at `path:line`.

use serde::de::DeserializeOwned;
use serde_saphyr::MessageFormatter;
use serde_saphyr::budget::{Budget, BudgetBreach};

/// Why a file's front matter could not be read: a one-line message and the file's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrontMatterError {
    /// 1-based line in the whole file.
    pub(crate) line: u64,
    /// What was wrong, in one line.
    pub(crate) message: String,
}

/// The front matter of `text` decoded as `T`, and the body after it.
pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> Result<(T, &str), FrontMatterError> {
    let (yaml, body) = split(text)?;
    let value = serde_saphyr::from_str::<T>(yaml).map_err(|e| {
        let inner = e.without_snippet();
        let mut cause = inner;
        while let serde_saphyr::Error::AliasError { error, .. }
        | serde_saphyr::Error::WithSnippet { error, .. } = cause
        {
            cause = error;
        }
        let message = match cause {
            serde_saphyr::Error::Budget { breach, .. } => budget_message(breach),
            other => serde_saphyr::DefaultMessageFormatter.format_message(other).into_owned(),
        };
        // The YAML starts on the file's second line.
        let line = inner.location().map_or(1, |l| l.line()) + 1;
        FrontMatterError { line, message: one_line(&message) }
    })?;
    Ok((value, body))
}

/// What a person can do about a breached YAML budget (serde-saphyr's defaults bound
/// depth, size and alias expansion; its own text is the breach's `Debug` form).
fn budget_message(breach: &BudgetBreach) -> String {
    let limits = Budget::default();
    match breach {
        BudgetBreach::Depth { .. } => {
            format!("the YAML nests lists and maps more than {} levels deep; flatten it", limits.max_depth)
        }
        BudgetBreach::Nodes { .. } => format!(
            "the YAML has more than {} values once aliases are expanded (each `*alias` counts every value of its anchor again); shorten it",
            limits.max_nodes
        ),
        BudgetBreach::Aliases { .. } => {
            format!("the YAML uses more than {} aliases (`*name`); shorten it", limits.max_aliases)
        }
        other => format!("the YAML is over a size limit ({other:?}); shorten it"),
    }
}

/// The YAML between the opening and closing `---` lines, and the body after them.
pub(crate) fn split(text: &str) -> Result<(&str, &str), FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(FrontMatterError {
            line: 1,
            message: "the file must start with a `---` line opening its YAML front matter".into(),
        });
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            let body = &text[at + line.len()..];
            return Ok((&text[start..at], body.strip_prefix('\n').unwrap_or(body)));
        }
        at += line.len();
    }
    Err(FrontMatterError {
        line: 1,
        message: "the front matter opened here is never closed by a `---` line".into(),
    })
}

/// `text` on one line: runs of whitespace (newlines included) become one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    struct Fm {
        name: String,
    }

    #[test]
    fn splits_front_matter_from_body() {
        let (yaml, body) = split("---\nname: a\n---\n\n# Title\n").unwrap();
        assert_eq!(yaml, "name: a\n");
        assert_eq!(body, "# Title\n");
        let (yaml, body) = split("---\r\nname: a\r\n---\r\nbody").unwrap();
        assert_eq!(yaml, "name: a\r\n");
        assert_eq!(body, "body");
    }

    #[test]
    fn missing_or_unclosed_front_matter_is_line_one() {
        assert_eq!(split("# no front matter").unwrap_err().line, 1);
        assert!(split("---\nname: a\n").unwrap_err().message.contains("never closed"));
    }

    #[test]
    fn yaml_errors_carry_the_file_line() {
        let err = parse::<Fm>("---\n# comment\nname: [\n---\n").unwrap_err();
        assert_eq!(err.line, 3, "{err:?}");
        assert!(!err.message.contains('\n'));
        let err = parse::<Fm>("---\nother: 1\n---\n").unwrap_err();
        assert!(err.message.contains("name"), "{err:?}");
        assert_eq!(parse::<Fm>("---\nname: a\n---\nbody").unwrap().0.name, "a");
    }
}
