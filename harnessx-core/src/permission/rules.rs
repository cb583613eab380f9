//! [`PermissionRules`]: allow, ask and deny rules on a tool's name and arguments, in
//! Claude Code's spelling.
//!
//! A rule is `NAME` (every call of the tool) or `NAME(PATTERN)`:
//!
//! - `NAME(ARG=GLOB)` matches calls whose string argument `ARG` matches `GLOB` (globset
//!   syntax; `*` stays within a folder, `**` crosses folders). An argument named `path`
//!   or ending in `_path` is a path: it is normalised lexically first
//!   ([`path::normalize`]), relative to the [base path](PermissionRules::base_path).
//! - Any other pattern is a command pattern on the tool's `command` argument, read as a
//!   shell script ([`Script`]): an allow rule matches only when *every* simple command of
//!   the script matches an allow rule of the tool and nothing in it is opaque; a deny or
//!   ask rule matches when *any* command does (those of nested scripts too), or when the
//!   script cannot be read. `*` may stand anywhere; `git status *` (a blank before `*`)
//!   stops at a word, `git status*` is a character prefix that matches `git statusx`
//!   too; the legacy `git status:*` is `git status *`; without `*` the command must be
//!   exactly the pattern. `ARG=` or `ARG:` naming `command` itself is the same command
//!   pattern (the script is never matched as one string). The details are in
//!   `command.rs`.
//! - `NAME(ARG:VALUE)`, `ARG` an identifier (Claude Code's newer form), has two readings,
//!   both kept when the rule is parsed, since a rule is parsed before any tool is known:
//!   `NAME(ARG=VALUE)`, and the command pattern `ARG:VALUE` (`run_bash(git:*)` is the
//!   legacy `git *`). Each call settles it by what it holds: the argument reading applies
//!   when the call has a string `ARG`, the command reading when it has a string
//!   `command`. A deny or ask rule matches when a reading that applies matches; an allow
//!   rule needs every reading that applies to match, and at least one to apply, so a
//!   model that adds an argument named like a command's first word gains nothing.
//!   [`check`](PermissionRules::check) refuses the rule when the tool has neither a
//!   string `ARG` nor a `command` argument.
//!
//! Precedence (see [`PermissionManager`](crate::PermissionManager)): deny rules, then ask
//! rules, then allow rules; [`decide`](PermissionRules::decide) answers the first list
//! that matches, or `None`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::permission::command::CommandPattern;
use crate::permission::level::PermissionLevel;
use crate::permission::path;
use crate::permission::rule::{ArgumentPattern, COMMAND, Pattern};
pub use crate::permission::rule::{Rule, RuleError};
use crate::permission::shell::{Script, SimpleCmd};
use crate::registry::ToolRegistry;

/// The rules of one tool, by list.
#[derive(Clone, Default)]
struct ToolRules {
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
}

impl ToolRules {
    fn list(&mut self, level: PermissionLevel) -> &mut Vec<Rule> {
        match level {
            PermissionLevel::Allow => &mut self.allow,
            PermissionLevel::Ask => &mut self.ask,
            PermissionLevel::Deny => &mut self.deny,
        }
    }
}

/// The `allow`, `ask` and `deny` lists of rules as a file holds them (TOML in the CLI's
/// `permissions.toml`, or any serde format).
///
/// ```
/// # use harnessx_core::permission::RuleLists;
/// let lists: RuleLists = serde_json::from_str(r#"{"allow": ["run_bash(git status *)"], "deny": ["delete"]}"#).unwrap();
/// assert_eq!(lists.deny, ["delete"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleLists {
    /// Rules that let a call run without asking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Rules that make a call ask.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
    /// Rules that refuse a call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// Allow, ask and deny rules. See the [module docs](self).
///
/// ```
/// # use harnessx_core::{PermissionLevel, permission::PermissionRules};
/// # use serde_json::json;
/// let rules = PermissionRules::new()
///     .with(PermissionLevel::Allow, "run_bash(git status *)")?
///     .with(PermissionLevel::Deny, "run_bash(rm *)")?;
/// let allow = rules.decide("run_bash", &json!({"command": "git status -s"}));
/// assert_eq!(allow, Some(PermissionLevel::Allow));
/// let slipped = rules.decide("run_bash", &json!({"command": "git status; rm -rf src"}));
/// assert_eq!(slipped, Some(PermissionLevel::Deny));
/// # Ok::<(), harnessx_core::permission::RuleError>(())
/// ```
#[derive(Clone, Default)]
pub struct PermissionRules {
    tools: HashMap<String, ToolRules>,
    base_path: Option<PathBuf>,
    len: usize,
}

impl fmt::Debug for PermissionRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lists = self.lists();
        f.debug_struct("PermissionRules")
            .field("allow", &lists.allow)
            .field("ask", &lists.ask)
            .field("deny", &lists.deny)
            .field("base_path", &self.base_path)
            .finish()
    }
}

impl PermissionRules {
    /// No rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// The rules of `lists`.
    pub fn from_lists(lists: &RuleLists) -> Result<Self, RuleError> {
        let mut rules = Self::new();
        rules.add_lists(lists)?;
        Ok(rules)
    }

    /// Adds the rules of `lists`.
    pub fn add_lists(&mut self, lists: &RuleLists) -> Result<(), RuleError> {
        for (level, list) in [
            (PermissionLevel::Deny, &lists.deny),
            (PermissionLevel::Ask, &lists.ask),
            (PermissionLevel::Allow, &lists.allow),
        ] {
            for rule in list {
                self.add(level, rule)?;
            }
        }
        Ok(())
    }

    /// Adds one rule to the `level` list.
    pub fn add(&mut self, level: PermissionLevel, rule: &str) -> Result<(), RuleError> {
        let rule = Rule::parse(rule)?;
        let list = self.tools.entry(rule.tool.clone()).or_default().list(level);
        if !list.iter().any(|r| r.text == rule.text) {
            list.push(rule);
            self.len += 1;
        }
        Ok(())
    }

    /// Builder form of [`add`](Self::add).
    pub fn with(mut self, level: PermissionLevel, rule: &str) -> Result<Self, RuleError> {
        self.add(level, rule)?;
        Ok(self)
    }

    /// Adds every rule of `other` (its base path too, when this has none).
    pub fn extend(&mut self, other: &PermissionRules) {
        for (level, rule) in other.iter() {
            let list = self.tools.entry(rule.tool.clone()).or_default().list(level);
            if !list.iter().any(|r| r.text == rule.text) {
                list.push(rule.clone());
                self.len += 1;
            }
        }
        if self.base_path.is_none() {
            self.base_path.clone_from(&other.base_path);
        }
    }

    /// The folder path arguments are relative to (the file tools' base path), and the
    /// workspace a shell command's redirections must stay in. Give it absolute.
    pub fn base_path(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_path = Some(dir.into());
        self
    }

    /// The base path, if set.
    pub fn get_base_path(&self) -> Option<&Path> {
        self.base_path.as_deref()
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every rule with its list: deny, then ask, then allow.
    pub fn iter(&self) -> impl Iterator<Item = (PermissionLevel, &Rule)> {
        let mut tools: Vec<&ToolRules> = self.tools.values().collect();
        tools.sort_by(|a, b| first_text(a).cmp(first_text(b)));
        [PermissionLevel::Deny, PermissionLevel::Ask, PermissionLevel::Allow].into_iter().flat_map(
            move |level| {
                tools.clone().into_iter().flat_map(move |t| {
                    let list = match level {
                        PermissionLevel::Allow => &t.allow,
                        PermissionLevel::Ask => &t.ask,
                        PermissionLevel::Deny => &t.deny,
                    };
                    list.iter().map(move |r| (level, r))
                })
            },
        )
    }

    /// The rules as lists of their text.
    pub fn lists(&self) -> RuleLists {
        let mut lists = RuleLists::default();
        for (level, rule) in self.iter() {
            match level {
                PermissionLevel::Allow => lists.allow.push(rule.text.clone()),
                PermissionLevel::Ask => lists.ask.push(rule.text.clone()),
                PermissionLevel::Deny => lists.deny.push(rule.text.clone()),
            }
        }
        lists
    }

    /// Whether a rule names `tool` alone (`NAME`, no pattern) in the `level` list.
    pub fn names(&self, level: PermissionLevel, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|t| match level {
            PermissionLevel::Allow => t.allow.iter().any(Rule::is_name_only),
            PermissionLevel::Ask => t.ask.iter().any(Rule::is_name_only),
            PermissionLevel::Deny => t.deny.iter().any(Rule::is_name_only),
        })
    }

    /// Checks every rule against the tools of `registry`: the tool is registered, an
    /// `ARG=GLOB` names a string argument of it, a command pattern is on a tool with a
    /// string `command` argument, an `ARG:VALUE` has one of the two. The first problem is
    /// the error.
    pub fn check(&self, registry: &ToolRegistry) -> Result<(), RuleError> {
        for (_, rule) in self.iter() {
            let Some(def) = registry.get_tool(&rule.tool) else {
                return Err(RuleError::UnknownTool {
                    rule: rule.text.clone(),
                    tool: rule.tool.clone(),
                    known: registry.tool_names().join(", "),
                });
            };
            let properties = def.input_schema.get("properties").and_then(Value::as_object);
            let argument = |name: &str| match properties.and_then(|p| p.get(name)) {
                None => Argument::Missing,
                Some(schema) if is_string(schema) => Argument::String,
                Some(_) => Argument::NotString,
            };
            let known =
                || properties.map(|p| p.keys().cloned().collect::<Vec<_>>().join(", ")).unwrap_or_default();
            let tool = &rule.tool;
            let why = match &rule.pattern {
                Pattern::Any => continue,
                Pattern::Command(_) => match argument(COMMAND) {
                    Argument::String => continue,
                    Argument::NotString => not_string(COMMAND, tool),
                    Argument::Missing => format!(
                        "a command pattern applies to a tool's `command` argument, and {tool} has none; match an argument with {tool}(ARG=GLOB), ARG one of: {}",
                        known()
                    ),
                },
                Pattern::Argument(a) => match argument(&a.name) {
                    Argument::String => continue,
                    Argument::NotString => not_string(&a.name, tool),
                    Argument::Missing => {
                        format!("{tool} has no argument {:?} (its arguments: {})", a.name, known())
                    }
                },
                Pattern::Either { argument: a, .. } => match (argument(&a.name), argument(COMMAND)) {
                    (Argument::String, _) | (_, Argument::String) => continue,
                    (Argument::NotString, _) => format!(
                        "the argument {:?} of {tool} is not a string, and rules match strings; nor has {tool} a `command` argument for a command pattern",
                        a.name
                    ),
                    (Argument::Missing, _) => format!(
                        "{tool} has no argument {:?} (its arguments: {}) and no `command` argument for a command pattern",
                        a.name,
                        known()
                    ),
                },
            };
            return Err(RuleError::Argument { rule: rule.text.clone(), why });
        }
        Ok(())
    }

    /// The list the call matches first (deny, then ask, then allow), or `None` when no
    /// rule of this set decides it. `arguments` are the validated arguments the tool
    /// will get.
    pub fn decide(&self, tool: &str, arguments: &Value) -> Option<PermissionLevel> {
        let rules = self.tools.get(tool)?;
        let mut seen = Seen::default();
        if self.any(&rules.deny, arguments, &mut seen) {
            return Some(PermissionLevel::Deny);
        }
        if self.any(&rules.ask, arguments, &mut seen) {
            return Some(PermissionLevel::Ask);
        }
        // The command patterns that apply to this call: every command must match one.
        let mut patterns: Vec<&CommandPattern> = Vec::new();
        for rule in &rules.allow {
            match &rule.pattern {
                Pattern::Any => return Some(PermissionLevel::Allow),
                Pattern::Argument(a) if self.argument_matches(a, arguments, &mut seen.paths) => {
                    return Some(PermissionLevel::Allow);
                }
                Pattern::Argument(_) => {}
                Pattern::Command(p) => patterns.push(p),
                Pattern::Either { argument, command } => {
                    // Every reading that applies must match.
                    let named = has_string(arguments, &argument.name);
                    if named && !self.argument_matches(argument, arguments, &mut seen.paths) {
                        continue;
                    }
                    if has_string(arguments, COMMAND) {
                        patterns.push(command);
                    } else if named {
                        return Some(PermissionLevel::Allow);
                    }
                }
            }
        }
        if !patterns.is_empty() {
            let s = self.script(arguments, &mut seen.script);
            let every = !s.opaque && s.commands.iter().all(|c| patterns.iter().any(|p| p.matches(&c.words)));
            if every {
                return Some(PermissionLevel::Allow);
            }
        }
        None
    }

    /// Whether any rule of a deny or ask list matches.
    fn any<'v>(&self, list: &[Rule], arguments: &'v Value, seen: &mut Seen<'v>) -> bool {
        list.iter().any(|rule| match &rule.pattern {
            Pattern::Any => true,
            Pattern::Argument(a) => self.argument_matches(a, arguments, &mut seen.paths),
            Pattern::Command(p) => self.script_has(p, arguments, &mut seen.script),
            Pattern::Either { argument, command } => {
                self.argument_matches(argument, arguments, &mut seen.paths)
                    || (has_string(arguments, COMMAND)
                        && self.script_has(command, arguments, &mut seen.script))
            }
        })
    }

    /// Whether a command of the call's script matches, seen as a deny rule sees it, or
    /// the script cannot be read.
    fn script_has(&self, pattern: &CommandPattern, arguments: &Value, script: &mut Option<Script>) -> bool {
        let s = self.script(arguments, script);
        s.unreadable || s.commands.iter().any(|c| deny_view(c, pattern))
    }

    /// The call's `command`, read once per call.
    fn script<'s>(&self, arguments: &Value, script: &'s mut Option<Script>) -> &'s Script {
        script.get_or_insert_with(|| match arguments.get(COMMAND).and_then(Value::as_str) {
            Some(command) => Script::parse(command, self.base_path.as_deref()),
            None => Script { unreadable: true, opaque: true, ..Script::default() },
        })
    }

    fn argument_matches<'v>(
        &self,
        pattern: &ArgumentPattern,
        arguments: &'v Value,
        paths: &mut Vec<(&'v str, Cow<'v, str>)>,
    ) -> bool {
        let ArgumentPattern { name, is_path, matcher } = pattern;
        let Some(value) = arguments.get(name.as_str()).and_then(Value::as_str) else { return false };
        if !*is_path {
            return matcher.is_match(value);
        }
        // Normalised once per call and argument, however many rules look at it.
        let at = match paths.iter().position(|(n, _)| *n == name.as_str()) {
            Some(at) => at,
            None => {
                paths.push((
                    arguments_key(arguments, name),
                    path::normalize(value, self.base_path.as_deref()),
                ));
                paths.len() - 1
            }
        };
        matcher.is_match(&*paths[at].1)
    }
}

/// What `check` finds of an argument in a tool's schema.
enum Argument {
    Missing,
    String,
    NotString,
}

fn is_string(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        _ => true,
    }
}

fn not_string(argument: &str, tool: &str) -> String {
    format!("the argument {argument:?} of {tool} is not a string, and rules match strings")
}

/// Whether the call has a string argument `name`.
fn has_string(arguments: &Value, name: &str) -> bool {
    arguments.get(name).is_some_and(Value::is_string)
}

/// What one call's matching has worked out so far: its script, its normalised paths.
#[derive(Default)]
struct Seen<'v> {
    script: Option<Script>,
    paths: Vec<(&'v str, Cow<'v, str>)>,
}

/// The key of `arguments` named `name`, borrowed from the arguments.
fn arguments_key<'v>(arguments: &'v Value, name: &str) -> &'v str {
    arguments.as_object().and_then(|o| o.get_key_value(name)).map_or("", |(k, _)| k.as_str())
}

/// A deny or ask rule looks at a command from its name on, and past wrappers
/// (`sudo rm ..` is `rm ..` too), as well as whole.
fn deny_view(command: &SimpleCmd, pattern: &CommandPattern) -> bool {
    pattern.matches(&command.words) || command.tails().any(|tail| pattern.matches(tail))
}

fn first_text(t: &ToolRules) -> &str {
    t.deny.iter().chain(&t.ask).chain(&t.allow).next().map(|r| r.tool.as_str()).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(list: &[(PermissionLevel, &str)]) -> PermissionRules {
        let mut r = PermissionRules::new().base_path("/work/p");
        for (level, rule) in list {
            r.add(*level, rule).unwrap();
        }
        r
    }

    use PermissionLevel::{Allow, Ask, Deny};

    #[test]
    fn prefix_and_exact() {
        let r = rules(&[
            (Allow, "run_bash(git status *)"),
            (Allow, "run_bash(ls)"),
            (Allow, "run_bash(npm run test:*)"),
            (Allow, "run_bash(cargo t*)"),
        ]);
        let d = |c: &str| r.decide("run_bash", &json!({"command": c}));
        assert_eq!(d("git status"), Some(Allow));
        assert_eq!(d("git  status -s"), Some(Allow));
        assert_eq!(d("git statusx"), None);
        assert_eq!(d("ls"), Some(Allow));
        assert_eq!(d("ls -la"), None);
        assert_eq!(d("npm run test --watch"), Some(Allow));
        assert_eq!(d("npm run test:unit"), None, "`:*` is Claude Code's ` *`");
        assert_eq!(d("cargo test -p x"), Some(Allow));
        assert_eq!(d("cargo tree"), Some(Allow));
        assert_eq!(d("git status && ls"), Some(Allow));
        assert_eq!(d("git status && rm x"), None);
        assert_eq!(d("git status $(rm x)"), None);
        assert_eq!(d("FOO=1 git status"), None);
    }

    // `run_bash(command=git *)` was a glob over the whole script, so `git x; rm y` matched.
    #[test]
    fn the_command_argument_is_always_a_script() {
        for rule in ["run_bash(command=git *)", "run_bash(command:git *)"] {
            let r = rules(&[(Allow, rule)]);
            let d = |c: &str| r.decide("run_bash", &json!({"command": c}));
            assert_eq!(d("git x"), Some(Allow), "{rule}");
            assert_eq!(d("git x; rm y"), None, "{rule}");
        }
    }

    #[test]
    fn an_argument_colon_rule_needs_every_reading_that_applies() {
        let r = rules(&[(Allow, "t(git:*)"), (Deny, "u(git:*)")]);
        let d = |tool: &str, a: Value| r.decide(tool, &a);
        assert_eq!(d("t", json!({"command": "git log"})), Some(Allow));
        assert_eq!(d("t", json!({"git": "x"})), Some(Allow), "the argument reading alone");
        assert_eq!(d("t", json!({"command": "rm x", "git": "x"})), None);
        assert_eq!(d("t", json!({"other": "x"})), None, "no reading applies");
        assert_eq!(d("u", json!({"command": "ls; git log"})), Some(Deny));
        assert_eq!(d("u", json!({"git": "x"})), Some(Deny));
        assert_eq!(d("u", json!({"other": "x"})), None, "no script is no unreadable script");
    }

    #[test]
    fn deny_matches_any_part_and_beats_allow() {
        let r = rules(&[(Allow, "run_bash(*)"), (Deny, "run_bash(rm *)"), (Ask, "run_bash(git push *)")]);
        let d = |c: &str| r.decide("run_bash", &json!({"command": c}));
        assert_eq!(d("ls; rm -rf x"), Some(Deny));
        assert_eq!(d("echo $(rm -rf x)"), Some(Deny));
        assert_eq!(d("bash -c 'rm -rf x'"), Some(Deny));
        assert_eq!(d("sudo rm -rf x"), Some(Deny));
        assert_eq!(d("echo 'unterminated"), Some(Deny), "an unreadable script matches deny");
        assert_eq!(d("git push origin"), Some(Ask));
        assert_eq!(d("ls"), Some(Allow));
    }

    #[test]
    fn path_globs_after_normalisation() {
        let r = rules(&[(Allow, "read_file(path=src/**)"), (Deny, "read_file(path=src/secret/**)")]);
        let d = |p: &str| r.decide("read_file", &json!({"path": p}));
        assert_eq!(d("src/a.rs"), Some(Allow));
        assert_eq!(d("src/deep/er/a.rs"), Some(Allow));
        assert_eq!(d("./src//a.rs"), Some(Allow));
        assert_eq!(d("/work/p/src/a.rs"), Some(Allow));
        assert_eq!(d("src/../../etc/passwd"), None);
        assert_eq!(d("/etc/passwd"), None);
        assert_eq!(d("src/./secret/k"), Some(Deny));
        assert_eq!(d("src/x/../secret//k"), Some(Deny));
        assert_eq!(d("/work/p/src/secret/k"), Some(Deny));
        let star = rules(&[(Allow, "read_file(path=src/*)")]);
        assert_eq!(star.decide("read_file", &json!({"path": "src/a/b"})), None, "* stays in a folder");
    }
}
