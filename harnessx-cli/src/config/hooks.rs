//! Command hooks in the configuration files, in the tables people know from Claude
//! Code's settings:
//!
//! ```toml
//! [[hooks.pre_tool_use]]
//! matcher = "run_bash"            # a tool name, a rule like "write_file(path=src/**)", or "*"
//! command = "python3 .harnessx/check.py"
//! timeout_seconds = 10            # default 60
//! ```
//!
//! Each table is one hook, read as `--hook EVENT:MATCHER=COMMAND` is
//! ([`HookSpec::from_parts`]), so a file knows the events the flag knows. Hooks add up:
//! every file's run, then the command line's (see [`crate::config`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use toml::Spanned;

use super::Source;
use super::file::Loaded;
use crate::error::CliError;
use crate::hooks::HookSpec;

/// The longest `timeout_seconds` taken: a day.
const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;

/// `[hooks]`: each event's `[[hooks.EVENT]]` tables, in the order written.
pub(crate) type HookTables = BTreeMap<String, Vec<Spanned<HookTable>>>;

/// One `[[hooks.EVENT]]` table, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookTable {
    matcher: Option<Spanned<String>>,
    command: Spanned<String>,
    timeout_seconds: Option<Spanned<f64>>,
}

/// One command hook, read and checked: from a file's table or a `--hook` flag.
#[derive(Debug, Clone)]
pub(crate) struct Configured {
    pub(crate) spec: HookSpec,
    /// The event and matcher as written, for `config show`.
    event: String,
    matcher: Option<String>,
    /// In seconds, as written (or the default).
    timeout_seconds: f64,
    /// A file's `FILE:LINE`, or the command line.
    pub(crate) source: Source,
}

impl Configured {
    /// `--hook EVENT:MATCHER=COMMAND` (or `EVENT=COMMAND`), under the default timeout.
    pub(crate) fn flag(text: &str) -> Result<Self, CliError> {
        let spec = HookSpec::parse(text).map_err(CliError::Usage)?;
        // The event ends at the first `:` (then the matcher) or `=` (no matcher); the
        // command is the text the spec kept, at the end.
        let at = text.find([':', '=']).unwrap_or(text.len());
        let matcher = (text[at..].starts_with(':'))
            .then(|| text[at + 1..].trim_end().strip_suffix(spec.command.as_str()))
            .flatten()
            .and_then(|rest| rest.trim_end().strip_suffix('='))
            .map(|matcher| matcher.trim().to_owned());
        Ok(Self {
            event: text[..at].trim().to_owned(),
            matcher,
            timeout_seconds: harnessx::hooks::DEFAULT_HOOK_TIMEOUT.as_secs_f64(),
            spec,
            source: Source::Flag,
        })
    }

    /// How long the hook may take to answer.
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_seconds)
    }

    /// How `config show` shows it.
    pub(crate) fn shown(&self) -> Value {
        let seconds = self.timeout_seconds;
        let timeout = if seconds.fract() == 0.0 { json!(seconds as u64) } else { json!(seconds) };
        json!({
            "event": self.event,
            "matcher": self.matcher,
            "command": self.spec.command,
            "timeout_seconds": timeout,
            "from": self.source.to_string(),
        })
    }
}

/// The hooks of `files` (highest precedence first), each file's in the order written.
/// Every error names the file and line.
pub(crate) fn from_files(files: &[&Loaded]) -> Result<Vec<Configured>, CliError> {
    let mut hooks = Vec::new();
    for file in files {
        let Some(tables) = &file.config.hooks else { continue };
        let mut written: Vec<(&str, &Spanned<HookTable>)> = tables
            .iter()
            .flat_map(|(event, entries)| entries.iter().map(move |entry| (event.as_str(), entry)))
            .collect();
        written.sort_by_key(|(_, entry)| entry.span().start);
        for (event, entry) in written {
            hooks.push(checked(file, event, entry)?);
        }
    }
    Ok(hooks)
}

/// One table, checked: its event, matcher and command as the flag's, a positive timeout.
fn checked(file: &Loaded, event: &str, entry: &Spanned<HookTable>) -> Result<Configured, CliError> {
    let table = entry.get_ref();
    let matcher = table.matcher.as_ref().map(|m| m.get_ref().as_str());
    let command = table.command.get_ref();
    // The line of what is wrong: the matcher's or the command's, else the table's.
    let span = match (&table.matcher, command.trim().is_empty()) {
        (_, true) => table.command.span(),
        (Some(m), false) => m.span(),
        (None, false) => entry.span(),
    };
    let spec = HookSpec::from_parts(event, matcher, command).map_err(|e| file.error(span, e))?;
    let timeout_seconds = match &table.timeout_seconds {
        None => harnessx::hooks::DEFAULT_HOOK_TIMEOUT.as_secs_f64(),
        Some(seconds) => {
            let value = *seconds.get_ref();
            if !(value > 0.0 && value <= MAX_TIMEOUT_SECONDS) {
                return Err(file.error(
                    seconds.span(),
                    format!("timeout_seconds {value}: give the seconds a hook may take, more than 0 and at most {MAX_TIMEOUT_SECONDS} (the default is 60)"),
                ));
            }
            value
        }
    };
    Ok(Configured {
        spec,
        event: event.to_owned(),
        matcher: matcher.map(|m| m.trim().to_owned()),
        timeout_seconds,
        source: Source::File(file.place(entry.span())),
    })
}

/// How `config show` shows `hooks`, and where they came from: the command line, the
/// files (each hook says its line), both, or nowhere.
pub(crate) fn shown(hooks: &[Configured]) -> (Value, Source) {
    let mut places: Vec<String> = Vec::new();
    for hook in hooks {
        let place = match &hook.source {
            Source::File(at) => at.rsplit_once(':').map_or(at.as_str(), |(path, _)| path).to_owned(),
            other => other.to_string(),
        };
        if !places.contains(&place) {
            places.push(place);
        }
    }
    let source = if hooks.is_empty() {
        Source::Default
    } else if hooks.iter().all(|h| h.source == Source::Flag) {
        Source::Flag
    } else {
        Source::File(places.join(", "))
    };
    (Value::Array(hooks.iter().map(Configured::shown).collect()), source)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn hooks(text: &str) -> Result<Vec<Configured>, String> {
        let file = Loaded::parse(Path::new("/p/harnessx.toml"), text.to_owned()).map_err(|e| match e {
            CliError::Usage(m) => m,
            other => panic!("{other:?}"),
        })?;
        from_files(&[&file]).map_err(|e| match e {
            CliError::Usage(m) => m,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn tables_become_hooks_in_the_order_written_with_their_lines() {
        let read = hooks(
            "[[hooks.pre_tool_use]]\nmatcher = \"run_bash\"\ncommand = \"./check.sh\"\ntimeout_seconds = 10\n\n\
             [[hooks.post_tool_use]]\nmatcher = \"read_file(path=notes/**)\"\ncommand = \"./redact.sh\"\n\n\
             [[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"./log.sh\"\ntimeout_seconds = 0.5\n",
        )
        .unwrap();
        let shown: Vec<Value> = read.iter().map(Configured::shown).collect();
        assert_eq!(
            shown,
            [
                json!({"event": "pre_tool_use", "matcher": "run_bash", "command": "./check.sh", "timeout_seconds": 10, "from": "/p/harnessx.toml:1"}),
                json!({"event": "post_tool_use", "matcher": "read_file(path=notes/**)", "command": "./redact.sh", "timeout_seconds": 60, "from": "/p/harnessx.toml:6"}),
                json!({"event": "pre_tool_use", "matcher": "*", "command": "./log.sh", "timeout_seconds": 0.5, "from": "/p/harnessx.toml:10"}),
            ]
        );
        assert_eq!(read[0].timeout(), Duration::from_secs(10));
        assert!(
            read[0].spec.point == crate::hooks::Point::PreToolUse
                && read[1].spec.point == crate::hooks::Point::PostToolUse
        );
    }

    #[test]
    fn a_bad_table_is_one_line_naming_the_file_and_line() {
        for (text, line, says) in [
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\ntimeout = 5\n",
                4,
                "unknown field `timeout`",
            ),
            ("[[hooks.pre_tool_use]]\nmatcher = \"*\"\n", 1, "missing field `command`"),
            ("[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = 7\n", 3, "invalid type"),
            ("[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"  \"\n", 3, "`command` is empty"),
            ("\n[[hooks.pre_tool_use]]\ncommand = \"x\"\n", 2, "needs a `matcher`"),
            (
                "[[hooks.pre_tool_use]]\ncommand = \"x\"\nmatcher = \"run_bash(git *\"\n",
                3,
                "hook matcher \"run_bash(git *\"",
            ),
            ("[[hooks.before]]\nmatcher = \"*\"\ncommand = \"x\"\n", 2, "unknown hook event \"before\""),
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\ntimeout_seconds = 0\n",
                4,
                "timeout_seconds 0",
            ),
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\ntimeout_seconds = -1\n",
                4,
                "more than 0",
            ),
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\ntimeout_seconds = nan\n",
                4,
                "more than 0",
            ),
            (
                "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\ntimeout_seconds = \"10\"\n",
                4,
                "invalid type",
            ),
            ("hooks = 3\n", 1, "invalid type"),
            ("[hooks.pre_tool_use]\nmatcher = \"*\"\ncommand = \"x\"\n", 1, "invalid type"),
        ] {
            let e = hooks(text).unwrap_err();
            assert!(e.starts_with(&format!("/p/harnessx.toml:{line}: ")), "{text:?}: {e}");
            assert!(e.contains(says), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn a_flag_is_shown_split_into_its_parts() {
        let flag =
            Configured::flag("pre_tool_use: write_file(path=src/**) = ./check.sh --strict=yes").unwrap();
        assert_eq!(
            flag.shown(),
            json!({"event": "pre_tool_use", "matcher": "write_file(path=src/**)", "command": "./check.sh --strict=yes", "timeout_seconds": 60, "from": "command line"})
        );
        let (_, source) = shown(std::slice::from_ref(&flag));
        assert_eq!(source, Source::Flag);
        let file = hooks("[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\n").unwrap();
        let (value, source) = shown(&[file[0].clone(), flag]);
        assert_eq!(source, Source::File("/p/harnessx.toml, command line".into()));
        assert_eq!(value.as_array().unwrap().len(), 2);
        assert_eq!(shown(&[]), (json!([]), Source::Default));
    }
}
