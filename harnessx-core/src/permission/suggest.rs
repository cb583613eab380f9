//! [`suggest_rule`]: the rule a terminal offers for "always" on one call, spelled so it
//! means what a person who knows Claude Code's rules reads in it.

use std::path::Path;

use serde_json::Value;

use crate::permission::path;
use crate::permission::shell::Script;

/// The narrowest rule worth offering for "always" on this call: the command's first word
/// and subcommand for a tool with a `command` argument, as a word prefix
/// (`run_bash(git status *)`: `git status` and `git status -s`, not `git statusx`), the
/// folder for a tool with a `path` argument (`write_file(path=src/**)`), else the tool's
/// name. `base` is the base path paths are relative to.
pub fn suggest_rule(tool: &str, arguments: &Value, base: Option<&Path>) -> String {
    if let Some(command) = arguments.get("command").and_then(Value::as_str) {
        let script = Script::parse(command, base);
        if let [only] = script.commands.as_slice()
            && !script.opaque
            && let [first, rest @ ..] = &only.words[..]
            && plain(first)
        {
            let prefix = match rest.first() {
                Some(second)
                    if plain(second) && !second.starts_with('-') && first.len() + second.len() < 60 =>
                {
                    format!("{first} {second}")
                }
                _ => first.clone(),
            };
            return format!("{tool}({prefix} *)");
        }
        return tool.to_owned();
    }
    if let Some(p) = arguments.get("path").and_then(Value::as_str) {
        let normal = path::normalize(p, base);
        if !normal.starts_with('/')
            && !normal.starts_with("..")
            && !normal.contains(['(', ')', '*', '?', '[', '{'])
        {
            return match normal.rsplit_once('/') {
                Some((folder, _)) => format!("{tool}(path={folder}/**)"),
                None => format!("{tool}(path=*)"),
            };
        }
    }
    tool.to_owned()
}

/// A word that reads the same in a command pattern as in the command: no quotes, blanks,
/// stars, operators, expansions, `=` (an argument rule) or `:` (a legacy suffix, or an
/// argument's name).
fn plain(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_alphanumeric() || "-_./+,@%".contains(c))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn suggestions_are_narrow() {
        let bash = |c: &str| suggest_rule("run_bash", &json!({ "command": c }), None);
        assert_eq!(bash("git status -s"), "run_bash(git status *)");
        assert_eq!(bash("ls -la"), "run_bash(ls *)");
        assert_eq!(bash("ls; rm x"), "run_bash");
        assert_eq!(bash("npm run test:unit"), "run_bash(npm run *)");
        assert_eq!(bash("a:b c"), "run_bash");
        assert_eq!(bash("echo $(x)"), "run_bash");
        assert_eq!(bash("''"), "run_bash");
        let base = Some(Path::new("/work/p"));
        assert_eq!(
            suggest_rule("write_file", &json!({"path": "./src/a/b.rs"}), base),
            "write_file(path=src/a/**)"
        );
        assert_eq!(suggest_rule("write_file", &json!({"path": "b.rs"}), base), "write_file(path=*)");
        assert_eq!(suggest_rule("delete", &json!({"path": "../x"}), base), "delete");
        for s in ["run_bash(git status *)", "write_file(path=src/a/**)"] {
            crate::permission::Rule::parse(s).unwrap();
        }
    }
}
