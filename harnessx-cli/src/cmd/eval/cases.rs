//! `harnessx eval`'s case file: `[defaults]` and `[[case]]` tables in TOML, each case a
//! prompt, the files of its fresh folder and what its run must show. A malformed file is
//! one line naming the file, the line and the field (exit 2).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::CliError;

/// The largest case file read (its files' contents are in it).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most cases a file may hold.
const MAX_CASES: usize = 10_000;

/// What a case's run must show; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expect {
    /// Each must be in the final answer.
    #[serde(default)]
    pub(crate) output_contains: Vec<String>,
    /// Each tool must have been called at least once.
    #[serde(default)]
    pub(crate) tools_called: Vec<String>,
    /// No tool of these may have been called.
    #[serde(default)]
    pub(crate) tools_not_called: Vec<String>,
    /// The most tool calls in the run.
    pub(crate) max_tool_calls: Option<u64>,
    /// The most the run may cost, in US dollars (needs a known price).
    pub(crate) max_cost_usd: Option<f64>,
    /// A JSON Schema file (relative to the case file) the answer must fit, as
    /// `--output-schema`.
    pub(crate) output_schema: Option<PathBuf>,
    /// A rubric a model (`--judge-model`) grades the answer against, from 0 to 1.
    pub(crate) judge: Option<String>,
    /// The least grade that passes (default [`JUDGE_THRESHOLD`]).
    pub(crate) judge_threshold: Option<f64>,
}

/// The least grade of `expect.judge` that passes, unless `expect.judge_threshold` says.
pub(crate) const JUDGE_THRESHOLD: f64 = 0.7;

impl Expect {
    /// These expectations, each one not given taken from `defaults`.
    fn or(self, defaults: &Expect) -> Expect {
        let list =
            |mine: Vec<String>, theirs: &Vec<String>| if mine.is_empty() { theirs.clone() } else { mine };
        Expect {
            output_contains: list(self.output_contains, &defaults.output_contains),
            tools_called: list(self.tools_called, &defaults.tools_called),
            tools_not_called: list(self.tools_not_called, &defaults.tools_not_called),
            max_tool_calls: self.max_tool_calls.or(defaults.max_tool_calls),
            max_cost_usd: self.max_cost_usd.or(defaults.max_cost_usd),
            output_schema: self.output_schema.or_else(|| defaults.output_schema.clone()),
            judge: self.judge.or_else(|| defaults.judge.clone()),
            judge_threshold: self.judge_threshold.or(defaults.judge_threshold),
        }
    }
}

/// `[defaults]`: what every case has unless it says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    tools: Option<Vec<String>>,
    system: Option<String>,
    #[serde(default)]
    expect: Option<Expect>,
}

/// One `[[case]]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    prompt: String,
    tools: Option<Vec<String>>,
    system: Option<String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    expect: Option<Expect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    defaults: Option<Defaults>,
    #[serde(default)]
    case: Vec<toml::Spanned<RawCase>>,
}

/// One case, its defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) prompt: String,
    /// The tools (`--tools`), when the case or the defaults name them.
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) system: Option<String>,
    /// Relative path -> content, written to the case's fresh folder.
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) expect: Expect,
    /// The line of its `[[case]]`, for messages.
    pub(crate) line: usize,
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Reads the cases of the file at `path`.
pub(crate) fn read(path: &Path) -> Result<Vec<Case>, CliError> {
    let text = crate::config::file::read_at_most(path, MAX_FILE_BYTES).map_err(|e| match e {
        CliError::Usage(m) => CliError::Usage(format!("eval {m}")),
        e => e,
    })?;
    parse(&text, path)
}

/// The cases of `text` (the file at `path`); every error is `FILE:LINE: message`.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Vec<Case>, CliError> {
    let at = |line: usize, message: &str| CliError::Usage(format!("{}:{line}: {message}", path.display()));
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_of(text, span.start));
        let mut message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        // A value of the wrong type: the error names the type, the line its key.
        if let Some(key) = text.lines().nth(line - 1).and_then(|l| l.split_once('=')).map(|(k, _)| k.trim())
            && !key.is_empty()
            && !key.starts_with('[')
            && !message.contains(key)
        {
            message = format!("{key}: {message}");
        }
        at(line, &message)
    })?;
    let defaults = raw.defaults.unwrap_or_default();
    if raw.case.is_empty() {
        return Err(at(1, "no [[case]]: give at least one, with a name and a prompt"));
    }
    if raw.case.len() > MAX_CASES {
        return Err(at(1, &format!("{} cases: at most {MAX_CASES}", raw.case.len())));
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut cases = Vec::with_capacity(raw.case.len());
    for spanned in raw.case {
        let line = line_of(text, spanned.span().start);
        let raw = spanned.into_inner();
        if raw.name.trim().is_empty() {
            return Err(at(line, "case: `name` is empty"));
        }
        if let Some(first) = seen.insert(raw.name.clone(), line) {
            return Err(at(line, &format!("case {:?}: the name of the case at line {first} too", raw.name)));
        }
        for file in raw.files.keys() {
            let relative = Path::new(file);
            let inside = relative.components().all(|c| matches!(c, std::path::Component::Normal(_)));
            if file.is_empty() || !inside {
                return Err(at(
                    line,
                    &format!("case {:?}: files: {file:?} is not a path inside the case's folder", raw.name),
                ));
            }
        }
        let mut expect =
            raw.expect.unwrap_or_default().or(defaults.expect.as_ref().unwrap_or(&Expect::default()));
        if let Some(max) = expect.max_cost_usd
            && !(max.is_finite() && max >= 0.0)
        {
            return Err(at(
                line,
                &format!("case {:?}: expect.max_cost_usd must be a positive number", raw.name),
            ));
        }
        if let Some(threshold) = expect.judge_threshold
            && !(0.0..=1.0).contains(&threshold)
        {
            return Err(at(
                line,
                &format!("case {:?}: expect.judge_threshold must be between 0 and 1", raw.name),
            ));
        }
        if expect.judge_threshold.is_some() && expect.judge.is_none() {
            return Err(at(
                line,
                &format!("case {:?}: expect.judge_threshold without expect.judge (the rubric)", raw.name),
            ));
        }
        // A schema file is relative to the case file's folder.
        if let Some(schema) = &expect.output_schema {
            expect.output_schema = Some(path.parent().unwrap_or(Path::new("")).join(schema));
        }
        cases.push(Case {
            name: raw.name,
            prompt: raw.prompt,
            tools: raw.tools.or_else(|| defaults.tools.clone()),
            system: raw.system.or_else(|| defaults.system.clone()),
            files: raw.files,
            expect,
            line,
        });
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[defaults]
tools = ["read_file", "grep"]

[[case]]
name = "finds the secret"
prompt = "What is the secret word in note.txt?"
files = { "note.txt" = "The secret word is tangerine." }
expect.output_contains = ["tangerine"]
expect.tools_called = ["read_file"]
expect.tools_not_called = ["run_bash"]
expect.max_tool_calls = 5
expect.max_cost_usd = 0.01

[[case]]
name = "second"
prompt = "Hi"
tools = ["list_directory"]
"#;

    fn error(text: &str) -> String {
        match parse(text, Path::new("evals.toml")).unwrap_err() {
            CliError::Usage(line) => line,
            other => panic!("not a usage error: {other:?}"),
        }
    }

    #[test]
    fn cases_take_the_defaults_they_do_not_override() {
        let cases = parse(GOOD, Path::new("evals.toml")).unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].tools.as_deref(), Some(&["read_file".to_owned(), "grep".to_owned()][..]));
        assert_eq!(cases[0].files["note.txt"], "The secret word is tangerine.");
        assert_eq!(cases[0].expect.max_tool_calls, Some(5));
        assert_eq!(cases[0].line, 5, "{cases:?}");
        assert_eq!(cases[1].tools.as_deref(), Some(&["list_directory".to_owned()][..]));
        assert_eq!(cases[1].line, 15);
    }

    #[test]
    fn a_malformed_file_names_the_line_and_the_field() {
        let wrong_type = "[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.max_tool_calls = \"five\"\n";
        let e = error(wrong_type);
        assert!(e.starts_with("evals.toml:4: ") && e.contains("max_tool_calls"), "{e}");
        let unknown = "[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.output_contain = [\"x\"]\n";
        let e = error(unknown);
        assert!(e.starts_with("evals.toml:4: ") && e.contains("output_contain"), "{e}");
        let missing = "[[case]]\nname = \"a\"\n";
        assert!(error(missing).contains("prompt"), "{}", error(missing));
        assert!(error("x = = 1").starts_with("evals.toml:1: "), "{}", error("x = = 1"));
        assert!(error("").contains("no [[case]]"));
        let twice = "[[case]]\nname = \"a\"\nprompt = \"p\"\n[[case]]\nname = \"a\"\nprompt = \"q\"\n";
        assert_eq!(error(twice), "evals.toml:4: case \"a\": the name of the case at line 1 too");
        let escape = "[[case]]\nname = \"a\"\nprompt = \"p\"\nfiles = { \"../x\" = \"y\" }\n";
        assert!(error(escape).contains("is not a path inside the case's folder"), "{}", error(escape));
        let absolute = "[[case]]\nname = \"a\"\nprompt = \"p\"\nfiles = { \"/etc/x\" = \"y\" }\n";
        assert!(error(absolute).contains("not a path inside"), "{}", error(absolute));
        for e in [error(wrong_type), error(unknown), error(twice)] {
            assert!(!e.contains('\n'), "{e}");
        }
        let deep = format!("x = {}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(error(&deep).starts_with("evals.toml:"), "a deep file is an error, not a crash");
    }

    #[test]
    fn a_case_keeps_each_expectation_of_the_defaults_it_does_not_give() {
        let text = "[defaults]\nexpect.max_tool_calls = 4\nexpect.judge = \"polite\"\n\n[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.output_contains = [\"x\"]\nexpect.judge_threshold = 0.9\nexpect.output_schema = \"s.json\"\n";
        let cases = parse(text, Path::new("evals/cases.toml")).unwrap();
        let expect = &cases[0].expect;
        assert_eq!(expect.output_contains, ["x"]);
        assert_eq!((expect.max_tool_calls, expect.judge.as_deref()), (Some(4), Some("polite")));
        assert_eq!(expect.judge_threshold, Some(0.9));
        // A schema file is relative to the case file.
        assert_eq!(expect.output_schema.as_deref(), Some(Path::new("evals/s.json")));
        let out_of_range =
            "[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.judge = \"r\"\nexpect.judge_threshold = 1.5\n";
        assert_eq!(
            error(out_of_range),
            "evals.toml:1: case \"a\": expect.judge_threshold must be between 0 and 1"
        );
        let no_rubric = "[[case]]\nname = \"a\"\nprompt = \"p\"\nexpect.judge_threshold = 0.5\n";
        assert!(error(no_rubric).contains("without expect.judge"), "{}", error(no_rubric));
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing.toml");
        let Err(CliError::Usage(e)) = read(&path) else { panic!("a usage error") };
        assert!(e.starts_with("eval ") && e.contains("missing.toml"), "{e}");
        std::fs::write(&path, GOOD).unwrap();
        assert_eq!(read(&path).unwrap().len(), 2);
        std::fs::write(&path, b"[[case]]\nname = \"\xff\"\n").unwrap();
        let Err(CliError::Usage(e)) = read(&path) else { panic!("a usage error") };
        assert!(e.contains("not UTF-8"), "{e}");
        let Err(CliError::Usage(e)) = read(dir.path()) else { panic!("a folder is a usage error") };
        assert!(e.starts_with("eval "), "{e}");
    }
}
