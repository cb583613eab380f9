//! One configuration file, as written: `harnessx.toml` in a project or
//! `~/.config/harnessx/config.toml`. Its keys are the agent flags' long names with `_`
//! (`max_turns` for `--max-turns`), plus the tables `[permissions]`, `[mcp_servers.NAME]`
//! (or Claude desktop's `[mcpServers.NAME]`) and `[[hooks.EVENT]]` ([`super::hooks`]). Every value keeps its place in the file, so
//! `config show` can say where it came from and an error can name the line.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use std::sync::OnceLock;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use super::hooks::HookTables;
use crate::error::CliError;
use crate::setup::flags::{AgentFile, Level};
use crate::setup::settings::FileKeys;

/// The most a configuration file may hold; a larger one is refused unread.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;

/// What a file says. Every key is optional; an unknown one is an error. The agent
/// settings' keys are declared with their flags ([`AgentFile`]); the tables are read here.
#[derive(Debug, Default)]
pub(crate) struct FileConfig {
    pub(crate) agent: AgentFile,
    /// MCP servers by name; `mcpServers` is Claude desktop's spelling of the same table.
    pub(crate) mcp_servers: Option<Spanned<BTreeMap<String, Spanned<ServerEntry>>>>,
    pub(crate) permissions: Option<PermissionsTable>,
    /// `[[hooks.EVENT]]` tables, by event.
    pub(crate) hooks: Option<HookTables>,
}

/// The tables' keys, after the settings' in [`keys`].
const TABLES: [&str; 4] = ["hooks", "mcpServers", "mcp_servers", "permissions"];

/// Every top-level key a file may hold, in declaration order.
fn keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = Vec::new();
        AgentFile::keys(&mut keys);
        keys.extend(TABLES);
        keys
    })
}

/// A top-level key, refused unless it is one of [`keys`] (so toml names its line).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a setting's name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        if keys().contains(&key) { Ok(key.to_owned()) } else { Err(E::unknown_field(key, keys())) }
    }
}

impl<'de> Deserialize<'de> for FileConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Document)
    }
}

/// The file's top-level table: each key goes to the setting or table that reads it.
struct Document;

impl<'de> Visitor<'de> for Document {
    type Value = FileConfig;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a table of settings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FileConfig, A::Error> {
        let mut config = FileConfig::default();
        while let Some(key) = map.next_key_seed(Key)? {
            if config.agent.take(&key, &mut map)? {
                continue;
            }
            match key.as_str() {
                "mcp_servers" | "mcpServers" => {
                    if config.mcp_servers.is_some() {
                        return Err(de::Error::duplicate_field("mcp_servers"));
                    }
                    config.mcp_servers = Some(map.next_value()?);
                }
                "permissions" => {
                    if config.permissions.is_some() {
                        return Err(de::Error::duplicate_field("permissions"));
                    }
                    config.permissions = Some(map.next_value()?);
                }
                "hooks" => {
                    if config.hooks.is_some() {
                        return Err(de::Error::duplicate_field("hooks"));
                    }
                    config.hooks = Some(map.next_value()?);
                }
                other => return Err(de::Error::unknown_field(other, keys())),
            }
        }
        Ok(config)
    }
}

/// `[permissions]`: the default level and rules, in the shape of the permission files
/// (`allow`, `ask`, `deny` lists of rules).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PermissionsTable {
    pub(crate) default: Option<Spanned<Level>>,
    pub(crate) allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub(crate) ask: Option<Spanned<Vec<Spanned<String>>>>,
    pub(crate) deny: Option<Spanned<Vec<Spanned<String>>>>,
}

/// One MCP server: `command` (with `args`, `env`) for one started as a child process, or
/// `url` (with `headers`) for one over streamable HTTP. `type` is optional, as in Claude
/// desktop's and Claude Code's files.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerEntry {
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    pub(crate) command: Option<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
}

/// A file that was read: where it is and what it says.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) path: PathBuf,
    text: String,
    pub(crate) config: FileConfig,
}

impl Loaded {
    /// Reads and parses the file at `path`. Every failure names the file (and the line,
    /// when the text is at fault).
    pub(crate) fn read(path: &Path) -> Result<Self, CliError> {
        let text = read_capped(path)?;
        Self::parse(path, text)
    }

    /// Parses `text` as the file at `path`.
    pub(crate) fn parse(path: &Path, text: String) -> Result<Self, CliError> {
        match toml::from_str::<FileConfig>(&text) {
            Ok(config) => Ok(Self { path: path.to_owned(), text, config }),
            Err(e) => {
                let line = e.span().map(|span| line_of(&text, span.start));
                let message = e.message().trim().replace('\n', " ");
                Err(CliError::Usage(match line {
                    Some(line) => format!("{}:{line}: {message}", path.display()),
                    None => format!("{}: {message}", path.display()),
                }))
            }
        }
    }

    /// `FILE:LINE` of the value at `span`.
    pub(crate) fn place(&self, span: Range<usize>) -> String {
        format!("{}:{}", self.path.display(), line_of(&self.text, span.start))
    }

    /// An error about the value at `span`: `FILE:LINE: message`.
    pub(crate) fn error(&self, span: Range<usize>, message: impl std::fmt::Display) -> CliError {
        CliError::Usage(format!("{}: {message}", self.place(span)))
    }

    /// A path the file gives, relative to the file's folder when it is not absolute.
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        match self.path.parent() {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_owned(),
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The text of `path`, refused when it is larger than [`MAX_FILE_BYTES`], not UTF-8,
/// or cannot be read.
pub(crate) fn read_capped(path: &Path) -> Result<String, CliError> {
    read_at_most(path, MAX_FILE_BYTES)
}

/// The text of `path`, refused when it is larger than `max` bytes, not UTF-8, or cannot
/// be read.
pub(crate) fn read_at_most(path: &Path, max: u64) -> Result<String, CliError> {
    let cannot =
        |e: &dyn std::fmt::Display| CliError::Usage(format!("{}: cannot be read: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| cannot(&e))?;
    if bytes.len() as u64 > max {
        return Err(CliError::Usage(format!(
            "{}: larger than {} KiB; is it the right file?",
            path.display(),
            max / 1024
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        CliError::Usage(format!("{}: not UTF-8 text (byte {})", path.display(), e.utf8_error().valid_up_to()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Loaded, String> {
        Loaded::parse(Path::new("/p/harnessx.toml"), text.to_owned()).map_err(|e| match e {
            CliError::Usage(m) => m,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn an_unknown_key_names_the_file_and_line() {
        let e = parse("model = \"test\"\n\nmodle = \"x\"\n").unwrap_err();
        assert!(e.starts_with("/p/harnessx.toml:3: "), "{e}");
        assert!(e.contains("modle"), "{e}");
        let e = parse("[permissions]\nallow = []\nalow = []\n").unwrap_err();
        assert!(e.starts_with("/p/harnessx.toml:3: "), "{e}");
        let e = parse("[mcp_servers.x]\ncommand = \"a\"\ncwd = \"/\"\n").unwrap_err();
        assert!(e.starts_with("/p/harnessx.toml:3: "), "{e}");
    }

    #[test]
    fn malformed_and_mistyped_values_are_errors_with_a_line() {
        for (text, line) in [
            ("model = \n", 1),
            ("max_turns = -1\n", 1),
            ("max_tool_calls = -3\n", 1),
            ("\n\nmax_turns = \"ten\"\n", 3),
            ("tools = \"filesystem\"\n", 1),
            ("sandbox = \"docker\"\n", 1),
            ("[permissions]\ndefault = \"maybe\"\n", 2),
            ("[[[", 1),
            ("model = \"a\"\nmodel = \"b\"\n", 2),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(&format!("/p/harnessx.toml:{line}: ")), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("x = {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&deep).is_err());
        let deep = format!("x = {}1{}\n", "{a = ".repeat(50_000), "}".repeat(50_000));
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn both_spellings_of_the_server_table_parse() {
        let ours = parse("[mcp_servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\n").unwrap();
        let theirs = parse("[mcpServers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"server\"]\n").unwrap();
        for loaded in [ours, theirs] {
            let servers = loaded.config.mcp_servers.unwrap().into_inner();
            assert_eq!(servers["files"].get_ref().command.as_deref(), Some("npx"));
        }
        let e = parse("[mcp_servers.a]\ncommand = \"x\"\n[mcpServers.b]\ncommand = \"y\"\n").unwrap_err();
        assert!(e.contains("duplicate") || e.contains("mcp_servers"), "{e}");
    }

    #[test]
    fn a_line_is_counted_in_bytes_of_any_text() {
        assert_eq!(line_of("", 0), 1);
        assert_eq!(line_of("a\nb\n", 2), 2);
        assert_eq!(line_of("é\nb", 99), 2);
    }
}
