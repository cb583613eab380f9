//! Configuration files: `harnessx.toml` in the project (the first one found from the
//! working directory upward) and the user's `config.toml` (`$XDG_CONFIG_HOME/harnessx/`,
//! else `~/.config/harnessx/`). They set what the agent flags set (`run`, `chat`,
//! `resume`, `worker`, `config show`), with this precedence: a flag on the command line,
//! then the project's file, then the user's, then the flag's default. A setting is taken
//! whole from one place: `--tools` replaces a file's `tools`, and a project's
//! `[permissions] allow` replaces the user's. MCP servers are merged by name across the
//! files (the project's server of a name replaces the user's), and `--mcp` or `--mcp-http`
//! on the command line replace them all.
//!
//! Hooks are the exception: they add up. A hook is usually a policy (refuse these
//! writes, redact those reads) that a flag must not drop without a word, and Claude Code
//! merges the hooks of all its settings files too. Every `[[hooks.EVENT]]` table of the
//! project's file runs, then the user's, then each `--hook`, in that order (within a
//! file, in the order written; [`hooks`]). They apply to every command that runs tools:
//! `run`, `chat`, `resume`, `worker`, and also `tools call` and `mcp serve`, which read
//! nothing else from the files ([`apply_hooks`]) but stop, as the others do, on a file
//! that cannot be read: its hooks cannot be known.
//!
//! [`apply`] writes the merged settings into the command's [`AgentArgs`], so the rest of
//! the command sees one set of flags, and reports where each came from ([`Applied`], what
//! `harnessx config show` prints).

pub(crate) mod file;
pub(crate) mod hooks;

use std::path::{Path, PathBuf};

use harnessx::PermissionLevel;
use harnessx::mcp::McpServer;
use serde_json::{Value, json};
use toml::Spanned;

use self::file::{Loaded, PermissionsTable, ServerEntry};
use crate::error::CliError;
use crate::setup::flags::{AgentArgs, AgentFile, HookArgs};
use crate::setup::settings::Declared;

/// The project file's name.
pub(crate) const PROJECT_FILE: &str = "harnessx.toml";

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The command line.
    Flag,
    /// A file, as `FILE:LINE`.
    File(String),
    /// Nobody set it.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Flag => f.write_str("command line"),
            Self::File(place) => f.write_str(place),
            Self::Default => f.write_str("default"),
        }
    }
}

/// One merged setting: its key (as a file spells it), its value, where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Setting {
    pub(crate) key: &'static str,
    pub(crate) value: Value,
    pub(crate) source: Source,
}

/// What [`apply`] did: the files it read (project first) and every setting.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) files: Vec<(PathBuf, &'static str)>,
    pub(crate) settings: Vec<Setting>,
}

/// The configuration files that apply here, highest precedence first: the project's,
/// then the user's. Missing files are skipped; a file that exists and cannot be read or
/// parsed is an error naming it.
pub(crate) fn load() -> Result<Vec<(Loaded, &'static str)>, CliError> {
    let mut files = Vec::new();
    if let Some(path) = std::env::current_dir().ok().as_deref().and_then(project_file) {
        files.push((Loaded::read(&path)?, "project"));
    }
    if let Some(path) = user_file() {
        let same = files.first().is_some_and(|(project, _)| same_file(&project.path, &path));
        if path.exists() && !same {
            files.push((Loaded::read(&path)?, "user"));
        }
    }
    Ok(files)
}

/// The first `harnessx.toml` in `start` or a folder above it.
pub(crate) fn project_file(start: &Path) -> Option<PathBuf> {
    start.ancestors().map(|dir| dir.join(PROJECT_FILE)).find(|path| path.exists())
}

/// `$XDG_CONFIG_HOME/harnessx/config.toml` (an absolute `XDG_CONFIG_HOME` only, as the
/// XDG spec says), else `$HOME/.config/harnessx/config.toml`; none without either.
pub(crate) fn user_file() -> Option<PathBuf> {
    let absolute = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|home| home.join(".config")))?;
    Some(base.join("harnessx").join("config.toml"))
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// Merges the files `files` (highest precedence first) under the command line into
/// `args`. `given(id)`: whether the flag whose clap id is `id` (its field name) was on
/// the command line.
pub(crate) fn apply(
    args: &mut AgentArgs,
    files: &[(Loaded, &'static str)],
    given: &dyn Fn(&str) -> bool,
) -> Result<Applied, CliError> {
    let mut settings = Vec::new();
    let mut note =
        |key: &'static str, value: Value, source: Source| settings.push(Setting { key, value, source });
    let layers: Vec<&Loaded> = files.iter().map(|(loaded, _)| loaded).collect();

    // Each setting declared with its flag: the flag, else the first file that sets it,
    // else the default.
    let declared: Vec<(&Loaded, &AgentFile)> = layers.iter().map(|l| (*l, &l.config.agent)).collect();
    args.merge(&declared, given, &mut note)?;
    // What the command line gave, even at its default, the resume command repeats.
    let mut flags = Vec::new();
    AgentArgs::declared(&mut flags);
    args.typed = flags.iter().filter(|d| given(d.id)).map(|d| d.id.to_owned()).collect();

    // The system prompt: `system` or `system_file`, one setting.
    let source = if given("system") || given("system_file") {
        Source::Flag
    } else if let Some(file) =
        layers.iter().find(|l| l.config.agent.system.is_some() || l.config.agent.system_file.is_some())
    {
        match (&file.config.agent.system, &file.config.agent.system_file) {
            (Some(_), Some(path)) => {
                return Err(file.error(path.span(), "give `system` or `system_file`, not both"));
            }
            (Some(text), None) => {
                args.system = Some(text.get_ref().clone());
                Source::File(file.place(text.span()))
            }
            (None, Some(path)) => {
                args.system_file = Some(file.resolve(path.get_ref()));
                Source::File(file.place(path.span()))
            }
            (None, None) => unreachable!("found above"),
        }
    } else {
        Source::Default
    };
    let shown = match (&args.system, &args.system_file) {
        (Some(text), _) => json!(text),
        (None, Some(path)) => json!({ "file": path.display().to_string() }),
        (None, None) => Value::Null,
    };
    note("system", shown, source);

    // [permissions]: each of its keys on its own.
    let permissions: Vec<(&Loaded, &PermissionsTable)> =
        layers.iter().filter_map(|l| l.config.permissions.as_ref().map(|p| (*l, p))).collect();
    let source = if given("default_permission") {
        Source::Flag
    } else if let Some((file, level)) =
        permissions.iter().find_map(|(f, p)| p.default.as_ref().map(|d| (*f, d)))
    {
        args.permissions.default_permission = Some(*level.get_ref());
        Source::File(file.place(level.span()))
    } else {
        Source::Default
    };
    let level =
        args.permissions.default_permission.map_or_else(|| "allow".into(), crate::setup::flags::value_name);
    note("permissions.default", json!(level), source);
    for (key, id) in
        [("permissions.allow", "allow"), ("permissions.ask", "ask"), ("permissions.deny", "deny")]
    {
        let (target, level) = match id {
            "allow" => (&args.permissions.allow, PermissionLevel::Allow),
            "ask" => (&args.permissions.ask, PermissionLevel::Ask),
            _ => (&args.permissions.deny, PermissionLevel::Deny),
        };
        if given(id) {
            note(key, json!(target), Source::Flag);
        } else if let Some((file, rules)) =
            permissions.iter().find_map(|(f, p)| rules_of(p, id).map(|r| (*f, r)))
        {
            let place = file.place(rules.span());
            let rules = checked_rules(file, level, rules.get_ref())?;
            note(key, json!(rules), Source::File(place.clone()));
            args.permissions.configured.push((place, level, rules));
        } else {
            note(key, json!(target), Source::Default);
        }
    }

    // MCP servers, merged by name; the command line's replace them.
    let mut shown = serde_json::Map::new();
    let mut places: Vec<String> = Vec::new();
    if given("mcp") || given("mcp_http") {
        for line in &args.mcp.mcp {
            shown.insert(line.clone(), json!({ "command_line": line, "from": Source::Flag.to_string() }));
        }
        for url in &args.mcp.mcp_http {
            shown.insert(url.clone(), json!({ "url": url, "from": Source::Flag.to_string() }));
        }
    } else {
        let mut by_name: std::collections::BTreeMap<String, (McpServer, Value)> = Default::default();
        // Lowest precedence first, so a project's server replaces the user's.
        for file in layers.iter().rev() {
            let Some(servers) = &file.config.mcp_servers else { continue };
            for (name, entry) in servers.get_ref() {
                let server = server_of(file, name, entry)?;
                let mut described = describe(entry.get_ref());
                described["from"] = json!(file.place(entry.span()));
                if !places.contains(&file.path.display().to_string()) {
                    places.push(file.path.display().to_string());
                }
                by_name.insert(name.clone(), (server, described));
            }
        }
        for (name, (server, described)) in by_name {
            shown.insert(name.clone(), described);
            args.mcp.configured.push((name, server));
        }
    }
    let source = if given("mcp") || given("mcp_http") {
        Source::Flag
    } else if places.is_empty() {
        Source::Default
    } else {
        // Each server says its own line.
        Source::File(places.join(", "))
    };
    note("mcp_servers", Value::Object(shown), source);

    // Hooks: every file's, then the command line's.
    args.hooks.configured = hooks::from_files(&layers)?;
    let (shown, source) = hooks::shown(&args.hooks.all()?);
    note("hooks", shown, source);

    Ok(Applied { files: files.iter().map(|(l, scope)| (l.path.clone(), *scope)).collect(), settings })
}

/// Puts the hooks of `files` (highest precedence first) before the command line's in
/// `hooks`: what `tools call` and `mcp serve` take from the files.
pub(crate) fn apply_hooks(hooks: &mut HookArgs, files: &[(Loaded, &'static str)]) -> Result<(), CliError> {
    let layers: Vec<&Loaded> = files.iter().map(|(loaded, _)| loaded).collect();
    hooks.configured = self::hooks::from_files(&layers)?;
    Ok(())
}

/// The `[permissions]` list `id` (`allow`, `ask` or `deny`).
fn rules_of<'a>(table: &'a PermissionsTable, id: &str) -> Option<&'a Spanned<Vec<Spanned<String>>>> {
    match id {
        "allow" => table.allow.as_ref(),
        "ask" => table.ask.as_ref(),
        _ => table.deny.as_ref(),
    }
}

/// The rules of a `[permissions]` list, each parsed as `--allow`/`--ask`/`--deny` would
/// parse it (`read_file`, `run_bash(git *)`, `write_file(path=src/**)`): a malformed one is
/// an error naming the file and line. Whether the tools exist is checked once they are
/// loaded, as for the project's rules file.
fn checked_rules(
    file: &Loaded,
    level: PermissionLevel,
    rules: &[Spanned<String>],
) -> Result<Vec<String>, CliError> {
    let mut parsed = harnessx::PermissionRules::new();
    for rule in rules {
        parsed
            .add(level, rule.get_ref())
            .map_err(|e| file.error(rule.span(), format!("permission rule {:?}: {e}", rule.get_ref())))?;
    }
    Ok(rules.iter().map(|r| r.get_ref().clone()).collect())
}

/// An MCP server entry as a server to connect to, checked.
fn server_of(file: &Loaded, name: &str, entry: &Spanned<ServerEntry>) -> Result<McpServer, CliError> {
    let e = entry.get_ref();
    let fail = |m: String| Err(file.error(entry.span(), format!("MCP server {name:?}: {m}")));
    let kind = e.kind.as_deref().map(str::to_ascii_lowercase);
    match (kind.as_deref(), &e.command, &e.url) {
        (Some("sse"), ..) => fail(
            "the SSE transport is not supported; give the server's streamable HTTP `url` (type \"http\")"
                .into(),
        ),
        (None | Some("stdio"), Some(command), None) => {
            if !e.headers.is_empty() {
                return fail("`headers` apply to a `url` server, not a `command` one".into());
            }
            if command.trim().is_empty() {
                return fail("`command` is empty".into());
            }
            let env: Vec<(String, String)> = e.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            Ok(McpServer::stdio(command.clone(), e.args.clone(), env))
        }
        (None | Some("http" | "streamable-http" | "streamable_http" | "streamablehttp"), None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return fail(format!("url {url:?}: give an http:// or https:// URL"));
            }
            if !e.args.is_empty() || !e.env.is_empty() {
                return fail("`args` and `env` apply to a `command` server, not a `url` one".into());
            }
            let headers: Vec<(String, String)> =
                e.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            Ok(McpServer::http(url.clone(), headers))
        }
        (_, Some(_), Some(_)) => fail("give `command` or `url`, not both".into()),
        (_, None, None) => {
            fail("give `command` (a program to start) or `url` (a streamable HTTP server)".into())
        }
        (Some(other), ..) => fail(format!(
            "type {other:?} does not fit this entry: use \"stdio\" with `command`, \"http\" with `url`"
        )),
    }
}

/// How `config show` describes a server: its command or URL, the names (never the
/// values) of its environment and headers, which may hold secrets.
fn describe(e: &ServerEntry) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(command) = &e.command {
        out.insert("command".into(), json!(command));
        out.insert("args".into(), json!(e.args));
    }
    if let Some(url) = &e.url {
        out.insert("url".into(), json!(url));
    }
    if !e.env.is_empty() {
        out.insert("env".into(), json!(e.env.keys().collect::<Vec<_>>()));
    }
    if !e.headers.is_empty() {
        out.insert("headers".into(), json!(e.headers.keys().collect::<Vec<_>>()));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        agent: AgentArgs,
    }

    fn loaded(path: &str, text: &str) -> (Loaded, &'static str) {
        (Loaded::parse(Path::new(path), text.to_owned()).unwrap(), "test")
    }

    fn merged(flags: &[&str], files: &[(Loaded, &'static str)]) -> Result<(AgentArgs, Applied), String> {
        let matches = <Flags as clap::CommandFactory>::command()
            .try_get_matches_from(std::iter::once("harnessx").chain(flags.iter().copied()))
            .unwrap();
        let mut args = <Flags as clap::FromArgMatches>::from_arg_matches(&matches).unwrap().agent;
        let given = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        match apply(&mut args, files, &given) {
            Ok(applied) => Ok((args, applied)),
            Err(CliError::Usage(m)) => Err(m),
            Err(e) => panic!("{e:?}"),
        }
    }

    fn source<'a>(applied: &'a Applied, key: &str) -> &'a Source {
        &applied.settings.iter().find(|s| s.key == key).unwrap().source
    }

    #[test]
    fn flags_beat_the_project_which_beats_the_user() {
        let project = loaded("/w/harnessx.toml", "model = \"openai:project\"\n\nmax_turns = 7\n");
        let user =
            loaded("/h/config.toml", "model = \"openai:user\"\nmax_turns = 9\nbase_url = \"http://u\"\n");
        let files = [project, user];
        let (args, applied) = merged(&[], &files).unwrap();
        assert_eq!(args.model, "openai:project");
        assert_eq!(args.max_turns, 7);
        assert_eq!(args.base_url.as_deref(), Some("http://u"));
        assert_eq!(source(&applied, "model"), &Source::File("/w/harnessx.toml:1".into()));
        assert_eq!(source(&applied, "max_turns"), &Source::File("/w/harnessx.toml:3".into()));
        assert_eq!(source(&applied, "base_url"), &Source::File("/h/config.toml:3".into()));
        assert_eq!(source(&applied, "tools"), &Source::Default);
        // An empty list is no tools, not the default.
        let (args, applied) = merged(&[], &[loaded("/w/harnessx.toml", "tools = []\n")]).unwrap();
        assert_eq!(args.tools, [""]);
        assert_eq!(applied.settings.iter().find(|s| s.key == "tools").unwrap().value, json!([]));

        let (args, applied) = merged(&["--model", "anthropic:flag", "--max-turns", "50"], &files).unwrap();
        assert_eq!(args.model, "anthropic:flag");
        // A flag given with its default value is still the command line's word.
        assert_eq!(args.max_turns, 50);
        assert_eq!(source(&applied, "max_turns"), &Source::Flag);
    }

    #[test]
    fn paths_in_a_file_are_relative_to_its_folder() {
        let files = [loaded(
            "/w/sub/harnessx.toml",
            "system_file = \"prompt.md\"\nbase_path = \"..\"\nskills = [\"/abs\"]\n",
        )];
        let (args, _) = merged(&[], &files).unwrap();
        assert_eq!(args.system_file.as_deref(), Some(Path::new("/w/sub/prompt.md")));
        assert_eq!(args.base_path.as_deref(), Some(Path::new("/w/sub/..")));
        assert_eq!(args.skills, [PathBuf::from("/abs")]);
    }

    #[test]
    fn permission_lists_take_rules_and_refuse_malformed_ones_with_a_line() {
        let files = [loaded(
            "/w/harnessx.toml",
            "[permissions]\ndefault = \"ask\"\nallow = [\"read_file\", \"run_bash(git status*)\"]\nask = [\"run_bash\"]\ndeny = [\"delete\"]\n",
        )];
        let (args, _) = merged(&["--deny", "write_file"], &files).unwrap();
        let configured: Vec<_> = args
            .permissions
            .configured
            .iter()
            .map(|(place, level, rules)| (place.as_str(), *level, rules.clone()))
            .collect();
        assert_eq!(
            configured,
            [
                (
                    "/w/harnessx.toml:3",
                    PermissionLevel::Allow,
                    vec!["read_file".to_owned(), "run_bash(git status*)".into()]
                ),
                ("/w/harnessx.toml:4", PermissionLevel::Ask, vec!["run_bash".to_owned()]),
            ],
            "the file's lists, with their lines; the deny list is replaced by the flag"
        );
        assert_eq!(args.permissions.deny, ["write_file"]);
        assert!(args.permissions.allow.is_empty(), "a file's rules are not flags");
        assert!(matches!(args.permissions.default_permission, Some(crate::setup::flags::Level::Ask)));

        let files = [loaded(
            "/w/harnessx.toml",
            "[permissions]\nallow = [\n  \"read_file\",\n  \"run_bash(git *\",\n]\n",
        )];
        let e = merged(&[], &files).unwrap_err();
        assert!(e.starts_with("/w/harnessx.toml:4: permission rule \"run_bash(git *\": "), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn limits_and_price_come_from_a_file_and_bad_ones_name_their_line() {
        let files = [loaded(
            "/w/harnessx.toml",
            "max_tool_calls = 3\nmax_tokens = 1000\nmax_cost_usd = 0.5\nprice = \"1.25,10,0.125\"\n",
        )];
        let (args, applied) = merged(&["--max-tokens", "99"], &files).unwrap();
        assert_eq!(args.limits.max_tool_calls, Some(3));
        assert_eq!(args.limits.max_tokens, Some(99), "the flag wins");
        assert_eq!(args.limits.max_cost_usd, Some(0.5));
        assert!(args.price.is_some());
        assert_eq!(source(&applied, "max_cost_usd"), &Source::File("/w/harnessx.toml:3".into()));
        for (text, line) in [("\nmax_cost_usd = -1.0\n", 2), ("price = \"cheap\"\n", 1)] {
            let e = merged(&[], &[loaded("/w/harnessx.toml", text)]).unwrap_err();
            assert!(e.starts_with(&format!("/w/harnessx.toml:{line}: ")), "{text}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn claude_desktop_servers_are_taken_and_merged_by_name() {
        let user = loaded(
            "/h/config.toml",
            "[mcpServers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"files\"]\nenv = { TOKEN = \"secret\" }\n\n[mcpServers.web]\nurl = \"https://example.com/mcp\"\n",
        );
        let project = loaded("/w/harnessx.toml", "[mcp_servers.files]\ncommand = \"./files-server\"\n");
        let files = [project, user];
        let (args, applied) = merged(&[], &files).unwrap();
        let names: Vec<&str> = args.mcp.configured.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["files", "web"]);
        let shown = &applied.settings.iter().find(|s| s.key == "mcp_servers").unwrap().value;
        assert_eq!(shown["files"]["command"], "./files-server", "{shown}");
        assert_eq!(shown["files"]["from"], "/w/harnessx.toml:1", "the table's line: {shown}");
        assert_eq!(shown["web"]["url"], "https://example.com/mcp");
        assert!(!shown.to_string().contains("secret"), "values of env are not shown: {shown}");
        // The command line's servers replace the files'.
        let (args, _) = merged(&["--mcp-http", "http://127.0.0.1:1/mcp"], &files).unwrap();
        assert!(args.mcp.configured.is_empty());
    }

    #[test]
    fn a_bad_server_entry_names_its_line() {
        for (text, words) in [
            ("[mcpServers.x]\nargs = []\n", "give `command`"),
            ("[mcpServers.x]\ncommand = \"a\"\nurl = \"http://b\"\n", "not both"),
            ("[mcpServers.x]\ntype = \"sse\"\nurl = \"http://b\"\n", "SSE"),
            ("[mcpServers.x]\nurl = \"ftp://b\"\n", "http://"),
        ] {
            let e = merged(&[], &[loaded("/w/harnessx.toml", text)]).unwrap_err();
            assert!(e.starts_with("/w/harnessx.toml:"), "{text:?}: {e}");
            assert!(e.contains(words), "{text:?}: {e}");
        }
    }

    #[test]
    fn hooks_add_up_the_projects_then_the_users_then_the_flags() {
        let project = loaded(
            "/w/harnessx.toml",
            "model = \"test\"\n[[hooks.pre_tool_use]]\nmatcher = \"write_file\"\ncommand = \"./project.sh\"\n",
        );
        let user = loaded(
            "/h/config.toml",
            "[[hooks.post_tool_use]]\nmatcher = \"*\"\ncommand = \"./user.sh\"\ntimeout_seconds = 5\n",
        );
        let files = [project, user];
        let (args, applied) = merged(&["--hook", "pre_tool_use:*=./flag.sh"], &files).unwrap();
        let order: Vec<String> = args.hooks.all().unwrap().iter().map(|h| h.spec.command.clone()).collect();
        assert_eq!(order, ["./project.sh", "./user.sh", "./flag.sh"]);
        let hooks = applied.settings.iter().find(|s| s.key == "hooks").unwrap();
        let from: Vec<&str> =
            hooks.value.as_array().unwrap().iter().map(|h| h["from"].as_str().unwrap()).collect();
        assert_eq!(from, ["/w/harnessx.toml:2", "/h/config.toml:1", "command line"]);
        assert_eq!(hooks.source, Source::File("/w/harnessx.toml, /h/config.toml, command line".into()));
        // The resume line repeats the flags' hooks; the files' are read again.
        assert_eq!(args.to_flags(), ["--hook", "pre_tool_use:*=./flag.sh"]);
        // None anywhere: an empty list, by default.
        let (_, applied) = merged(&[], &[]).unwrap();
        assert_eq!(applied.settings.iter().find(|s| s.key == "hooks").unwrap().value, json!([]));
        assert_eq!(source(&applied, "hooks"), &Source::Default);
    }

    #[test]
    fn system_and_system_file_together_are_an_error() {
        let e =
            merged(&[], &[loaded("/w/harnessx.toml", "system = \"a\"\nsystem_file = \"b\"\n")]).unwrap_err();
        assert!(e.starts_with("/w/harnessx.toml:2: "), "{e}");
        let (args, applied) =
            merged(&["--system", "flag"], &[loaded("/w/harnessx.toml", "system = \"file\"\n")]).unwrap();
        assert_eq!(args.system.as_deref(), Some("flag"));
        assert_eq!(source(&applied, "system"), &Source::Flag);
    }

    #[test]
    fn a_bad_tool_choice_in_a_file_names_its_line() {
        let e = merged(&[], &[loaded("/w/harnessx.toml", "\ntool_choice = \"\"\n")]).unwrap_err();
        assert!(e.starts_with("/w/harnessx.toml:2: "), "{e}");
    }

    /// A file setting each declared key, and the line its value is on.
    const SAMPLES: &[(&str, &str, usize)] = &[
        ("model", "model = \"openai:x\"\n", 1),
        ("base_url", "base_url = \"http://h\"\n", 1),
        ("fallback_models", "fallback_models = [\"openai:y\"]\n", 1),
        ("tools", "tools = [\"read_file\"]\n", 1),
        ("base_path", "base_path = \"d\"\n", 1),
        ("record", "record = \"tapes\"\n", 1),
        ("replay", "replay = \"tapes\"\n", 1),
        ("max_turns", "max_turns = 3\n", 1),
        ("max_result_chars", "max_result_chars = 100\n", 1),
        ("context_window", "context_window = 8192\n", 1),
        ("max_tool_calls", "max_tool_calls = 2\n", 1),
        ("max_tokens", "max_tokens = 9\n", 1),
        ("max_cost_usd", "max_cost_usd = 0.5\n", 1),
        ("price", "price = \"1,2\"\n", 1),
        ("tool_choice", "tool_choice = \"required\"\n", 1),
        ("parallel_tool_calls", "parallel_tool_calls = false\n", 1),
        ("reasoning_effort", "reasoning_effort = \"low\"\n", 1),
        ("reasoning_budget", "reasoning_budget = 2000\n", 1),
        ("skills", "skills = [\"s\"]\n", 1),
        ("knowledge", "knowledge = [\"k\"]\n", 1),
        ("knowledge_index", "knowledge_index = \"k.db\"\n", 1),
        ("blob_store", "blob_store = \"blobs\"\n", 1),
        ("system", "system = \"Be brief.\"\n", 1),
        ("system_file", "system_file = \"p.md\"\n", 1),
        ("sandbox", "sandbox = \"bubblewrap\"\n", 1),
        ("sandbox_network", "sandbox_network = true\n", 1),
        ("web_allow_private", "web_allow_private = true\n", 1),
        ("web_allow", "web_allow = [\"intra\"]\n", 1),
        ("permissions.default", "[permissions]\ndefault = \"ask\"\n", 2),
        ("permissions.allow", "[permissions]\nallow = [\"read_file\"]\n", 2),
        ("permissions.ask", "[permissions]\nask = [\"read_file\"]\n", 2),
        ("permissions.deny", "[permissions]\ndeny = [\"read_file\"]\n", 2),
        ("mcp_servers", "[mcp_servers.x]\ncommand = \"a\"\n", 1),
        ("mcp_trust", "mcp_trust = true\n", 1),
        ("mcp_resources", "mcp_resources = true\n", 1),
        ("hooks", "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"true\"\n", 1),
    ];

    #[test]
    fn every_declared_key_is_read_from_a_file_and_shown_with_its_line() {
        let mut declared = Vec::new();
        AgentArgs::declared(&mut declared);
        for decl in &declared {
            let crate::setup::settings::Key::Named(key) = decl.key else { continue };
            let (_, text, line) = SAMPLES
                .iter()
                .find(|(k, ..)| *k == key)
                .unwrap_or_else(|| panic!("{key} (--{}) has no sample in SAMPLES", decl.id));
            let (_, applied) = merged(&[], &[loaded("/w/harnessx.toml", text)]).unwrap();
            let place = format!("/w/harnessx.toml:{line}");
            let from: Vec<String> = applied.settings.iter().map(|s| s.source.to_string()).collect();
            assert!(
                applied.settings.iter().any(|s| match &s.source {
                    // Servers and hooks each say their own line; the setting names the file.
                    Source::File(at) => {
                        at == &place || (matches!(key, "mcp_servers" | "hooks") && at == "/w/harnessx.toml")
                    }
                    _ => false,
                }),
                "{key}: no setting came from {place}: {from:?}"
            );
        }
    }

    #[test]
    fn the_project_file_is_found_upward() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(dir.path().join("a/harnessx.toml"), "").unwrap();
        assert_eq!(project_file(&deep), Some(dir.path().join("a/harnessx.toml")));
    }
}
