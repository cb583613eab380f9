//! Skills: folders of instructions the model opens when a task fits them.
//!
//! A skill is a folder with a `SKILL.md` — YAML front matter (`name`, `description`,
//! optional `allowed-tools`) and a Markdown body — plus any files beside it: the layout of
//! Claude Code and the Agent Skills convention, so existing skill folders work unchanged.
//! Front-matter keys this crate does not use (`license`, `metadata`, `model`, ..) are
//! accepted and ignored.
//!
//! [`AgentBuilder::skills`](crate::AgentBuilder::skills) reads the front matter only. The
//! agent then gets one tool, `Skill`, and a block in its system prompt listing each skill's
//! name and one-line description (sorted by name, fixed for the agent's life, so the
//! prompt prefix stays cache-friendly). `Skill(name)` reads the body at call time and lists
//! the folder's other files, which the model reads with the file tools.
//!
//! `allowed-tools` is **advisory**: it is shown to the model with the body and kept on
//! [`Skill::allowed_tools`], but the permission manager does not enforce it. Enforcing it
//! would need a per-turn permission scope the manager does not have; a caller who wants it
//! enforced can read the list and configure permissions.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::front_matter::{self, one_line};
use harnessx_core::tool::decode::decode_args;
use harnessx_core::tool::name::{repair_key, strip_known_prefixes, suggestions};
use harnessx_core::{
    BlockingToolHandler, HandlerResult, ReplayPolicy, ToolAnnotations, ToolContext, ToolDefinition,
    ToolError, ToolHandler, ToolOutput,
};

/// The name of the tool that opens a skill.
pub const SKILL_TOOL_NAME: &str = "Skill";

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// The most files of a skill's folder listed with its body.
const MAX_LISTED_FILES: usize = 200;

/// Why skills could not be loaded. Each message is one line naming the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A `SKILL.md` whose front matter is missing or invalid.
    #[error("{}:{line}: invalid skill front matter: {message}", path.display())]
    FrontMatter {
        /// The `SKILL.md`.
        path: PathBuf,
        /// The line (1-based) of the problem.
        line: u64,
        /// What was wrong.
        message: String,
    },
    /// A folder or file could not be read.
    #[error("cannot read skills at {}: {message}", path.display())]
    Io {
        /// The folder or file.
        path: PathBuf,
        /// The operating system's error.
        message: String,
    },
    /// A folder given to [`SkillSource::dir`] holds no skill.
    #[error("no skills in {}: expected {SKILL_FILE} in it or in its subfolders", path.display())]
    Empty {
        /// The folder.
        path: PathBuf,
    },
    /// Two skills with one name.
    #[error("two skills are named {name:?} ({first} and {second}): rename one")]
    Duplicate {
        /// The name.
        name: String,
        /// Where the first came from.
        first: String,
        /// Where the second came from.
        second: String,
    },
    /// A skill built in code with an empty name or description.
    #[error("skill {name:?}: {message}")]
    Invalid {
        /// The name as given.
        name: String,
        /// What was wrong.
        message: String,
    },
}

/// The front matter of a `SKILL.md`.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    allowed_tools: Option<AllowedTools>,
}

/// `allowed-tools` as Claude Code writes it (`Read, Grep`) or as a YAML list.
#[derive(Deserialize)]
#[serde(untagged)]
enum AllowedTools {
    Text(String),
    List(Vec<String>),
}

impl AllowedTools {
    fn into_vec(self) -> Vec<String> {
        let items = match self {
            Self::Text(text) => text.split([',', ' ']).map(str::to_owned).collect(),
            Self::List(items) => items,
        };
        items.into_iter().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect()
    }
}

/// Where a skill's body comes from.
#[derive(Debug, Clone)]
enum Body {
    /// Read from the `SKILL.md` at call time; the folder's other files are listed.
    File { skill_md: PathBuf, folder: PathBuf, shown: Option<String> },
    /// Given in code.
    Text(String),
}

/// One skill: a name, a one-line description, optionally the tools it expects, and a body.
#[derive(Debug, Clone)]
pub struct Skill {
    name: String,
    description: String,
    allowed_tools: Option<Vec<String>>,
    body: Body,
}

impl Skill {
    /// A skill built in code: its body is `body`, and it has no files.
    pub fn new(name: impl Into<String>, description: impl Into<String>, body: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            allowed_tools: None,
            body: Body::Text(body.into()),
        }
    }

    /// The same skill with an `allowed-tools` list (advisory; see the module docs).
    pub fn with_allowed_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Reads the front matter of the skill folder `folder` (which holds a `SKILL.md`).
    /// The files are listed to the model under `shown` (the folder as the model's file
    /// tools know it), or relative to the skill folder when `None`.
    fn load(folder: &Path, shown: Option<String>) -> Result<Self, SkillError> {
        let skill_md = folder.join(SKILL_FILE);
        let text = std::fs::read_to_string(&skill_md)
            .map_err(|e| SkillError::Io { path: skill_md.clone(), message: e.to_string() })?;
        let (fm, _) = front_matter::parse::<FrontMatter>(&text).map_err(|e| SkillError::FrontMatter {
            path: skill_md.clone(),
            line: e.line,
            message: e.message,
        })?;
        let invalid = |message: &str| SkillError::FrontMatter {
            path: skill_md.clone(),
            line: 1,
            message: message.to_owned(),
        };
        if fm.name.trim().is_empty() {
            return Err(invalid("`name` is empty"));
        }
        if fm.description.trim().is_empty() {
            return Err(invalid("`description` is empty"));
        }
        Ok(Self {
            name: fm.name.trim().to_owned(),
            description: one_line(&fm.description),
            allowed_tools: fm.allowed_tools.map(AllowedTools::into_vec),
            body: Body::File { skill_md, folder: folder.to_path_buf(), shown },
        })
    }

    /// The name the model opens it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The one-line description shown in the system prompt.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tools the skill expects (`allowed-tools`), if it says. Advisory.
    pub fn allowed_tools(&self) -> Option<&[String]> {
        self.allowed_tools.as_deref()
    }

    /// The skill's folder, for a skill read from one.
    pub fn folder(&self) -> Option<&Path> {
        match &self.body {
            Body::File { folder, .. } => Some(folder),
            Body::Text(_) => None,
        }
    }

    /// Where it came from, for error messages.
    fn origin(&self) -> String {
        match &self.body {
            Body::File { skill_md, .. } => skill_md.display().to_string(),
            Body::Text(_) => "a skill built in code".to_owned(),
        }
    }

    /// What `Skill(name)` returns: the body, the advisory tool list, the other files.
    fn open(&self) -> Result<String, ToolError> {
        let mut out = String::new();
        match &self.body {
            Body::Text(body) => out.push_str(body.trim_end()),
            Body::File { skill_md, folder, shown } => {
                let unreadable = || ToolError::new(format!("The skill {:?} could not be read.", self.name));
                let text = std::fs::read_to_string(skill_md).map_err(|e| {
                    tracing::warn!(path = %skill_md.display(), error = %e, "skill unreadable");
                    unreadable()
                })?;
                let (_, body) = front_matter::split(&text).map_err(|e| {
                    tracing::warn!(path = %skill_md.display(), line = e.line, error = %e.message, "skill front matter");
                    unreadable()
                })?;
                out.push_str(body.trim_end());
                let files = list_files(folder);
                if !files.is_empty() {
                    match shown {
                        Some(prefix) => out.push_str(&format!(
                            "\n\nFiles of this skill (read them with the file tools), in {prefix}/:"
                        )),
                        None => out.push_str("\n\nFiles of this skill, relative to its folder:"),
                    }
                    for file in &files {
                        match shown {
                            Some(prefix) => out.push_str(&format!("\n- {prefix}/{file}")),
                            None => out.push_str(&format!("\n- {file}")),
                        }
                    }
                    if files.len() == MAX_LISTED_FILES {
                        out.push_str("\n- … (more files not listed)");
                    }
                }
            }
        }
        if let Some(tools) = &self.allowed_tools {
            out.push_str(&format!("\n\nThis skill expects to use only these tools: {}.", tools.join(", ")));
        }
        Ok(out)
    }
}

/// The files of a skill folder other than its `SKILL.md`, by relative path with `/`,
/// sorted; hidden entries and symbolic links are skipped; at most [`MAX_LISTED_FILES`].
fn list_files(folder: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if out.len() >= MAX_LISTED_FILES {
                return;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            if kind.is_dir() {
                walk(&entry.path(), &rel, out);
            } else if kind.is_file() && rel != SKILL_FILE {
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    walk(folder, "", &mut out);
    out
}

/// Where skills come from: folders on disk, or skills built in code. Several sources can
/// be given to [`AgentBuilder::skills`](crate::AgentBuilder::skills).
#[derive(Debug, Clone)]
pub struct SkillSource {
    items: Vec<SourceItem>,
}

#[derive(Debug, Clone)]
enum SourceItem {
    Dir { path: PathBuf, shown: Option<String> },
    Skill(Skill),
}

impl SkillSource {
    /// A folder of skills: either one skill folder (it holds a `SKILL.md`), or a folder
    /// whose subfolders are skills (`.claude/skills/`). The skills' files are listed to
    /// the model under this path as written when it is relative (so pass it relative to
    /// the file tools' `base_path`), or relative to each skill's folder when absolute (so
    /// no host path reaches the model); [`shown_as`](Self::shown_as) chooses otherwise.
    pub fn dir(path: impl Into<PathBuf>) -> Self {
        Self { items: vec![SourceItem::Dir { path: path.into(), shown: None }] }
    }

    /// Several folders, each as [`dir`](Self::dir).
    pub fn dirs<I, P>(paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Self { items: paths.into_iter().map(|p| SourceItem::Dir { path: p.into(), shown: None }).collect() }
    }

    /// Skills built in code.
    pub fn skills(skills: impl IntoIterator<Item = Skill>) -> Self {
        Self { items: skills.into_iter().map(SourceItem::Skill).collect() }
    }

    /// Lists the files of this source's folders under `prefix` (the path by which the
    /// model's file tools reach the folder given to [`dir`](Self::dir)), e.g. `"skills"`
    /// when the file tools' `base_path` is the folder's parent.
    pub fn shown_as(mut self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        for item in &mut self.items {
            if let SourceItem::Dir { shown, .. } = item {
                *shown = Some(prefix.trim_end_matches('/').to_owned());
            }
        }
        self
    }

    /// The skills of this source, front matter only.
    fn load(self, into: &mut Vec<Skill>) -> Result<(), SkillError> {
        for item in self.items {
            match item {
                SourceItem::Skill(skill) => {
                    if skill.name.trim().is_empty() {
                        return Err(SkillError::Invalid {
                            name: skill.name,
                            message: "the name is empty".into(),
                        });
                    }
                    if skill.description.trim().is_empty() {
                        return Err(SkillError::Invalid {
                            name: skill.name,
                            message: "the description is empty".into(),
                        });
                    }
                    into.push(Skill { description: one_line(&skill.description), ..skill });
                }
                SourceItem::Dir { path, shown } => load_dir(&path, shown, into)?,
            }
        }
        Ok(())
    }
}

impl From<Skill> for SkillSource {
    fn from(skill: Skill) -> Self {
        Self::skills([skill])
    }
}

/// The skills of one folder given to [`SkillSource::dir`].
fn load_dir(path: &Path, shown: Option<String>, into: &mut Vec<Skill>) -> Result<(), SkillError> {
    let io = |e: std::io::Error| SkillError::Io { path: path.to_path_buf(), message: e.to_string() };
    let base =
        shown.or_else(|| path.is_relative().then(|| path.to_string_lossy().trim_end_matches('/').to_owned()));
    if path.join(SKILL_FILE).is_file() {
        into.push(Skill::load(path, base)?);
        return Ok(());
    }
    let mut folders: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && entry.path().join(SKILL_FILE).is_file() {
            folders.push((name, entry.path()));
        }
    }
    if folders.is_empty() {
        return Err(SkillError::Empty { path: path.to_path_buf() });
    }
    folders.sort();
    for (name, folder) in folders {
        let shown = base.as_ref().map(|b| if b.is_empty() { name.clone() } else { format!("{b}/{name}") });
        into.push(Skill::load(&folder, shown)?);
    }
    Ok(())
}

/// The loaded skills, by name.
#[derive(Clone)]
pub(crate) struct Skills {
    by_name: Arc<BTreeMap<String, Skill>>,
}

impl fmt::Debug for Skills {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.by_name.keys()).finish()
    }
}

impl Skills {
    /// Loads every source (front matter only); two skills with one name fail.
    pub(crate) fn load(sources: Vec<SkillSource>) -> Result<Self, SkillError> {
        let mut all = Vec::new();
        for source in sources {
            source.load(&mut all)?;
        }
        let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
        for skill in all {
            if let Some(first) = by_name.get(&skill.name) {
                return Err(SkillError::Duplicate {
                    name: skill.name.clone(),
                    first: first.origin(),
                    second: skill.origin(),
                });
            }
            by_name.insert(skill.name.clone(), skill);
        }
        Ok(Self { by_name: Arc::new(by_name) })
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The skills, sorted by name.
    pub(crate) fn list(&self) -> impl Iterator<Item = &Skill> {
        self.by_name.values()
    }

    /// The block added to the system prompt: one line per skill, sorted by name. It
    /// depends only on the skills' front matter, so it is the same on every request.
    pub(crate) fn prompt_block(&self) -> String {
        let mut block = format!(
            "Skills: instructions for particular tasks. Before a task one of them fits, call {SKILL_TOOL_NAME} with its name and follow what it says.",
        );
        for skill in self.by_name.values() {
            block.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        block
    }

    /// The skill `requested` names: exactly, or differing only by case and separators
    /// from exactly one skill (the same repair as tool names). Otherwise the error text
    /// for the model, with close names and the whole list.
    fn resolve(&self, requested: &str) -> Result<&Skill, String> {
        if let Some(skill) = self.by_name.get(requested) {
            return Ok(skill);
        }
        let key = repair_key(strip_known_prefixes(requested.trim()));
        let matches: Vec<&Skill> = self.by_name.values().filter(|s| repair_key(&s.name) == key).collect();
        if let [only] = matches.as_slice() {
            return Ok(only);
        }
        let names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        let close: Vec<&str> = if matches.len() > 1 {
            matches.iter().take(3).map(|s| s.name.as_str()).collect()
        } else {
            suggestions(requested, names.iter().copied(), 3)
        };
        let mut text = if matches.len() > 1 {
            format!("Unknown skill {requested:?}: it matches more than one skill.")
        } else {
            format!("Unknown skill {requested:?}.")
        };
        if !close.is_empty() {
            text.push_str(&format!(" Did you mean: {}?", close.join(", ")));
        }
        text.push_str(&format!(
            " Available skills: {}. Call {SKILL_TOOL_NAME} again with one of these exact names.",
            names.join(", ")
        ));
        Err(text)
    }

    /// The `Skill` tool over these skills: read-only, concurrent, `safe`, allowed (it
    /// only reads the agent's own skill files).
    pub(crate) fn tool(&self) -> ToolDefinition {
        let description = format!(
            "Open a skill: returns its instructions and lists its files. The skills and what each is for are listed in the system prompt under \"Skills\". Skills: {}.",
            self.by_name.keys().cloned().collect::<Vec<_>>().join(", ")
        );
        ToolDefinition::new(
            SKILL_TOOL_NAME,
            description,
            skill_schema(),
            ToolHandler::Blocking(Arc::new(OpenSkill { skills: self.clone() })),
        )
        .with_replay_policy(ReplayPolicy::Safe)
        .with_annotations(ToolAnnotations::new().read_only(true).open_world(false))
    }
}

/// Skills as MCP prompts (`harnessx mcp serve --skills DIR`, through
/// [`serve_mcp_with_prompts`](harnessx_mcp::serve_mcp_with_prompts)): each skill is a
/// prompt of its name and description, with no arguments, whose one user message is its
/// instructions as the `Skill` tool gives them (the body of its `SKILL.md`, its files
/// listed).
#[cfg(feature = "mcp")]
#[derive(Debug, Clone)]
pub struct SkillPrompts {
    skills: Skills,
}

#[cfg(feature = "mcp")]
impl SkillPrompts {
    /// Loads `sources` (front matter only; each body is read when asked for), as an
    /// agent does: two skills with one name fail.
    pub fn load(sources: impl IntoIterator<Item = SkillSource>) -> Result<Self, SkillError> {
        Ok(Self { skills: Skills::load(sources.into_iter().collect())? })
    }
}

#[cfg(feature = "mcp")]
impl harnessx_mcp::PromptSource for SkillPrompts {
    fn prompts(&self) -> Vec<harnessx_mcp::McpPrompt> {
        self.skills
            .list()
            .map(|s| harnessx_mcp::McpPrompt {
                name: s.name.clone(),
                description: Some(s.description.clone()),
                arguments: Vec::new(),
            })
            .collect()
    }

    fn prompt(
        &self,
        name: &str,
        _arguments: &[(String, String)],
    ) -> Result<Vec<harnessx_mcp::McpPromptMessage>, String> {
        let skill = self.skills.by_name.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.skills.by_name.keys().map(String::as_str).collect();
            format!("no prompt named {name:?}; the prompts are the skills {}", names.join(", "))
        })?;
        let text = skill.open().map_err(|e| e.to_string())?;
        Ok(vec![harnessx_mcp::McpPromptMessage {
            role: harnessx_mcp::McpRole::User,
            text,
            parts: Vec::new(),
        }])
    }
}

/// The input schema of `Skill`.
fn skill_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed under \"Skills\" in the system prompt."}
        },
        "required": ["name"]
    })
}

/// The arguments of `Skill`.
#[derive(Deserialize)]
struct OpenArgs {
    name: String,
}

/// `Skill(name)`: the body of one skill and its files.
struct OpenSkill {
    skills: Skills,
}

impl BlockingToolHandler for OpenSkill {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        let OpenArgs { name } = decode_args(args, ctx)?;
        let skill = self.skills.resolve(&name).map_err(ToolError::new)?;
        Ok(ToolOutput::text(skill.open()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skills() -> Skills {
        Skills::load(vec![SkillSource::skills([
            Skill::new("pdf-processing", "Fill PDF forms.", "Use pdftk."),
            Skill::new("code-review", "Review a diff.", "Read it."),
        ])])
        .unwrap()
    }

    #[test]
    fn formatting_differences_are_repaired() {
        let s = skills();
        assert_eq!(s.resolve("PDF_Processing").unwrap().name(), "pdf-processing");
        assert_eq!(s.resolve("pdfProcessing").unwrap().name(), "pdf-processing");
    }

    #[test]
    fn typos_are_suggested_not_chosen() {
        let err = skills().resolve("pdf-procesing").unwrap_err();
        assert!(err.starts_with("Unknown skill \"pdf-procesing\". Did you mean: pdf-processing?"), "{err}");
        assert!(err.contains("Available skills: code-review, pdf-processing."), "{err}");
    }

    #[test]
    fn allowed_tools_take_both_forms() {
        let text = AllowedTools::Text("Read, Grep  Bash(git:*)".into()).into_vec();
        assert_eq!(text, ["Read", "Grep", "Bash(git:*)"]);
        let list = AllowedTools::List(vec![" read_file ".into(), String::new()]).into_vec();
        assert_eq!(list, ["read_file"]);
    }
}
