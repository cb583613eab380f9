//! [`PermissionRules`]: allow, ask and deny rules on a tool's name and arguments.
//!
//! A rule is `NAME` (every call of the tool) or `NAME(PATTERN)`:
//!
//! - `NAME(ARG=GLOB)` matches calls whose string argument `ARG` matches `GLOB` (globset
//!   syntax; `*` stays within a folder, `**` crosses folders). An argument named `path`
//!   or ending in `_path` is a path: it is normalised lexically first
//!   ([`path::normalize`]), relative to the [base path](PermissionRules::base_path).
//! - `NAME(PREFIX*)` and `NAME(EXACT)` match the tool's `command` argument as a shell
//!   script ([`Script`]): an allow rule matches only when *every* simple command
//!   of the script matches an allow rule of the tool and nothing in it is opaque; a deny
//!   or ask rule matches when *any* command does (those of nested scripts too), or when
//!   the script cannot be read.
//!
//! `PREFIX*` compares words: `git status*` matches `git status` and `git status -s`, not
//! `git statusx`; a prefix that ends in punctuation continues its last word
//! (`npm run test:*` matches `npm run test:unit`). `*` alone matches every command.
//!
//! Precedence (see [`PermissionManager`](crate::PermissionManager)): deny rules, then ask
//! rules, then allow rules; [`decide`](PermissionRules::decide) answers the first list
//! that matches, or `None`.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::permission::level::PermissionLevel;
use crate::permission::path;
use crate::permission::shell::{Script, SimpleCmd};
use crate::registry::ToolRegistry;

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
enum Pattern {
    /// `NAME`: every call.
    Any,
    /// `NAME(PREFIX*)` / `NAME(EXACT)`: the `command` argument, as a shell script.
    Command(CommandPattern),
    /// `NAME(ARG=GLOB)`.
    Argument { name: String, is_path: bool, matcher: GlobMatcher },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CommandPattern {
    words: Vec<String>,
    /// `PREFIX*` rather than an exact command.
    prefix: bool,
    /// The prefix ends in punctuation: its last word may continue.
    open_last: bool,
}

impl CommandPattern {
    fn matches(&self, words: &[String]) -> bool {
        let n = self.words.len();
        if self.prefix {
            if words.len() < n {
                return false;
            }
        } else if words.len() != n {
            return false;
        }
        let Some((last, init)) = self.words.split_last() else { return true };
        init.iter().zip(words).all(|(p, w)| p == w)
            && if self.open_last { words[n - 1].starts_with(last.as_str()) } else { words[n - 1] == *last }
    }
}

/// One parsed rule.
#[derive(Clone)]
pub struct Rule {
    text: String,
    tool: String,
    pattern: Pattern,
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
                    return Err(malformed("a pattern ends with `)`, as in run_bash(git status*)"));
                };
                (tool.trim_end(), Some(inner))
            }
        };
        if !valid_tool_name(tool) {
            return Err(malformed(
                "expected NAME or NAME(PATTERN), NAME a tool name (letters, digits, `_`, `-`), e.g. read_file(path=src/**) or run_bash(git status*)",
            ));
        }
        let pattern = match inner.map(str::trim) {
            None => Pattern::Any,
            Some("") => return Err(malformed("the pattern in () is empty; write NAME alone for every call")),
            Some(inner) => match argument_pattern(inner) {
                Some((name, glob)) => {
                    let is_path = is_path_argument(name);
                    let glob =
                        if is_path { path::normalize(glob, None).into_owned() } else { glob.to_owned() };
                    let matcher = GlobBuilder::new(&glob)
                        .literal_separator(is_path)
                        .backslash_escape(true)
                        .build()
                        .map_err(|e| malformed(&format!("bad glob {glob:?}: {e}")))?
                        .compile_matcher();
                    Pattern::Argument { name: name.to_owned(), is_path, matcher }
                }
                None => Pattern::Command(command_pattern(inner).map_err(malformed)?),
            },
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

/// `ARG=GLOB`, ARG an identifier.
fn argument_pattern(inner: &str) -> Option<(&str, &str)> {
    let (name, glob) = inner.split_once('=')?;
    let mut bytes = name.bytes();
    let first = bytes.next()?;
    ((first.is_ascii_alphabetic() || first == b'_') && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then_some((name, glob))
}

fn command_pattern(inner: &str) -> Result<CommandPattern, &'static str> {
    let (text, prefix) = match inner.strip_suffix('*') {
        Some(text) => (text, true),
        None => (inner, false),
    };
    if text.contains('*') {
        return Err("a command pattern is a command, or a prefix followed by one `*` at the end");
    }
    let open_last = prefix && text.chars().last().is_some_and(|c| !c.is_alphanumeric() && !c.is_whitespace());
    let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    if words.is_empty() && !prefix {
        return Err("the command pattern is empty");
    }
    Ok(CommandPattern { words, prefix, open_last })
}

/// The rules of one tool, by list.
#[derive(Clone, Default)]
struct ToolRules {
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
    /// Whether any rule looks at the command (the script is parsed only then).
    commands: bool,
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
/// let lists: RuleLists = serde_json::from_str(r#"{"allow": ["run_bash(git status*)"], "deny": ["delete"]}"#).unwrap();
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
///     .with(PermissionLevel::Allow, "run_bash(git status*)")?
///     .with(PermissionLevel::Deny, "run_bash(rm*)")?;
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
        let tool = self.tools.entry(rule.tool.clone()).or_default();
        tool.commands |= matches!(rule.pattern, Pattern::Command(_));
        let list = tool.list(level);
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
            let tool = self.tools.entry(rule.tool.clone()).or_default();
            tool.commands |= matches!(rule.pattern, Pattern::Command(_));
            let list = tool.list(level);
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
    /// string `command` argument. The first problem is the error.
    pub fn check(&self, registry: &ToolRegistry) -> Result<(), RuleError> {
        for (_, rule) in self.iter() {
            let Some(def) = registry.get_tool(&rule.tool) else {
                return Err(RuleError::UnknownTool {
                    rule: rule.text.clone(),
                    tool: rule.tool.clone(),
                    known: registry.tool_names().join(", "),
                });
            };
            let argument = match &rule.pattern {
                Pattern::Any => continue,
                Pattern::Command(_) => "command",
                Pattern::Argument { name, .. } => name.as_str(),
            };
            let properties = def.input_schema.get("properties").and_then(Value::as_object);
            let Some(schema) = properties.and_then(|p| p.get(argument)) else {
                let known: Vec<&str> =
                    properties.map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
                let why = match rule.pattern {
                    Pattern::Command(_) => format!(
                        "a command pattern applies to a tool's `command` argument, and {} has none; match an argument with {}(ARG=GLOB), ARG one of: {}",
                        rule.tool,
                        rule.tool,
                        known.join(", ")
                    ),
                    _ => format!(
                        "{} has no argument {argument:?} (its arguments: {})",
                        rule.tool,
                        known.join(", ")
                    ),
                };
                return Err(RuleError::Argument { rule: rule.text.clone(), why });
            };
            let string = match schema.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
                _ => true,
            };
            if !string {
                return Err(RuleError::Argument {
                    rule: rule.text.clone(),
                    why: format!(
                        "the argument {argument:?} of {} is not a string, and rules match strings",
                        rule.tool
                    ),
                });
            }
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
        let mut commands = false;
        for rule in &rules.allow {
            match &rule.pattern {
                Pattern::Any => return Some(PermissionLevel::Allow),
                Pattern::Argument { .. } if self.argument_matches(rule, arguments, &mut seen) => {
                    return Some(PermissionLevel::Allow);
                }
                Pattern::Argument { .. } => {}
                Pattern::Command(_) => commands = true,
            }
        }
        if commands {
            let s = self.script(arguments, &mut seen.script);
            let every = !s.opaque
                && s.commands.iter().all(|c| {
                    rules
                        .allow
                        .iter()
                        .any(|r| matches!(&r.pattern, Pattern::Command(p) if p.matches(&c.words)))
                });
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
            Pattern::Argument { .. } => self.argument_matches(rule, arguments, seen),
            Pattern::Command(p) => {
                let s = self.script(arguments, &mut seen.script);
                s.unreadable || s.commands.iter().any(|c| deny_view(c, p))
            }
        })
    }

    /// The call's `command`, read once per call.
    fn script<'s>(&self, arguments: &Value, script: &'s mut Option<Script>) -> &'s Script {
        script.get_or_insert_with(|| match arguments.get("command").and_then(Value::as_str) {
            Some(command) => Script::parse(command, self.base_path.as_deref()),
            None => Script { unreadable: true, opaque: true, ..Script::default() },
        })
    }

    fn argument_matches<'v>(&self, rule: &Rule, arguments: &'v Value, seen: &mut Seen<'v>) -> bool {
        let Pattern::Argument { name, is_path, matcher } = &rule.pattern else { return false };
        let Some(value) = arguments.get(name.as_str()).and_then(Value::as_str) else { return false };
        if !*is_path {
            return matcher.is_match(value);
        }
        // Normalised once per call and argument, however many rules look at it.
        let at = match seen.paths.iter().position(|(n, _)| *n == name.as_str()) {
            Some(at) => at,
            None => {
                seen.paths.push((
                    arguments_key(arguments, name),
                    path::normalize(value, self.base_path.as_deref()),
                ));
                seen.paths.len() - 1
            }
        };
        matcher.is_match(&*seen.paths[at].1)
    }
}

/// What one call's matching has worked out so far: its script, its normalised paths.
#[derive(Default)]
struct Seen<'v> {
    script: Option<Script>,
    paths: Vec<(&'v str, std::borrow::Cow<'v, str>)>,
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

/// The narrowest rule worth offering for "always" on this call: the command's first word
/// and subcommand for a tool with a `command` argument (`run_bash(git status*)`), the
/// folder for a tool with a `path` argument (`write_file(path=src/**)`), else the tool's
/// name. `base` is the base path paths are relative to.
pub fn suggest_rule(tool: &str, arguments: &Value, base: Option<&Path>) -> String {
    if let Some(command) = arguments.get("command").and_then(Value::as_str) {
        let script = Script::parse(command, base);
        if let [only] = script.commands.as_slice()
            && !script.opaque
        {
            let words = &only.words[..];
            let take = match words {
                [first, second, ..] if !second.starts_with('-') && first.len() + second.len() < 60 => 2,
                [_, ..] => 1,
                [] => 0,
            };
            let safe = words[..take].iter().all(|w| !w.contains(['(', ')', '*', '=']) && !w.is_empty());
            if take > 0 && safe {
                return format!("{tool}({}*)", words[..take].join(" "));
            }
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
    fn parses_and_refuses() {
        for ok in [
            "read_file",
            "run_bash(git status*)",
            "run_bash(*)",
            "write_file(path=src/**)",
            " grep ( path = x ) ",
        ] {
            Rule::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in
            ["", "run bash", "run_bash(", "run_bash()", "run_bash(git * x)", "x(path=[)", "(x)", "a)b("]
        {
            let err = Rule::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("malformed permission rule"), "{bad}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn prefix_and_exact() {
        let r = rules(&[
            (Allow, "run_bash(git status*)"),
            (Allow, "run_bash(ls)"),
            (Allow, "run_bash(npm run test:*)"),
        ]);
        let d = |c: &str| r.decide("run_bash", &json!({"command": c}));
        assert_eq!(d("git status"), Some(Allow));
        assert_eq!(d("git  status -s"), Some(Allow));
        assert_eq!(d("git statusx"), None);
        assert_eq!(d("ls"), Some(Allow));
        assert_eq!(d("ls -la"), None);
        assert_eq!(d("npm run test:unit"), Some(Allow));
        assert_eq!(d("git status && ls"), Some(Allow));
        assert_eq!(d("git status && rm x"), None);
        assert_eq!(d("git status $(rm x)"), None);
        assert_eq!(d("FOO=1 git status"), None);
    }

    #[test]
    fn deny_matches_any_part_and_beats_allow() {
        let r = rules(&[(Allow, "run_bash(*)"), (Deny, "run_bash(rm*)"), (Ask, "run_bash(git push*)")]);
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

    #[test]
    fn suggestions_are_narrow() {
        assert_eq!(
            suggest_rule("run_bash", &json!({"command": "git status -s"}), None),
            "run_bash(git status*)"
        );
        assert_eq!(suggest_rule("run_bash", &json!({"command": "ls -la"}), None), "run_bash(ls*)");
        assert_eq!(suggest_rule("run_bash", &json!({"command": "ls; rm x"}), None), "run_bash");
        let base = Some(Path::new("/work/p"));
        assert_eq!(
            suggest_rule("write_file", &json!({"path": "./src/a/b.rs"}), base),
            "write_file(path=src/a/**)"
        );
        assert_eq!(suggest_rule("write_file", &json!({"path": "b.rs"}), base), "write_file(path=*)");
        assert_eq!(suggest_rule("delete", &json!({"path": "../x"}), base), "delete");
        for s in ["run_bash(git status*)", "write_file(path=src/a/**)"] {
            Rule::parse(s).unwrap();
        }
    }
}
