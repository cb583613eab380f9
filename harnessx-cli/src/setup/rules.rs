//! Permission rules from the flags and the files: `--allow`, `--ask`, `--deny RULE`,
//! `--permissions FILE`, the project's `.harnessx/permissions.toml` (found from the
//! current directory upward) and the user's `permissions.toml` (in
//! `$XDG_CONFIG_HOME/harnessx/`, else `~/.config/harnessx/`).
//!
//! Rules given on the command line or in `--permissions FILE` must name registered tools
//! (a usage error otherwise: a typo would silently allow or deny nothing). The project
//! and user files describe more than one invocation, so their rules on tools this one did
//! not load are left out; a malformed rule, or an argument a loaded tool does not have, is
//! still an error naming the file.

use std::path::{Path, PathBuf};

use harnessx::{PermissionLevel, PermissionManager, PermissionRules, RuleLists, ToolRegistry};

use super::flags::PermissionArgs;
use crate::error::CliError;

/// The project's rules file, relative to the project folder.
pub(crate) const PROJECT_FILE: &str = ".harnessx/permissions.toml";

/// Rules read and parsed, not yet checked against the tools.
#[derive(Debug, Default)]
pub(crate) struct LoadedRules {
    /// Flags and `--permissions FILE`: every rule must apply.
    strict: Vec<(String, PermissionRules)>,
    /// The project and user files: rules on tools not loaded are left out.
    lenient: Vec<(String, PermissionRules)>,
    base: Option<PathBuf>,
}

impl LoadedRules {
    /// Checks the rules against `registry` and adds them to `manager`.
    pub(crate) fn install(
        &self,
        manager: &PermissionManager,
        registry: &ToolRegistry,
    ) -> Result<(), CliError> {
        let mut all = PermissionRules::new();
        for (source, rules) in &self.strict {
            rules.check(registry).map_err(|e| CliError::Usage(format!("{source}: {e}")))?;
            all.extend(rules);
        }
        for (source, rules) in &self.lenient {
            let mut loaded = PermissionRules::new();
            for (level, rule) in rules.iter().filter(|(_, r)| registry.contains(r.tool())) {
                loaded.add(level, rule.as_str()).map_err(|e| CliError::Usage(format!("{source}: {e}")))?;
            }
            loaded.check(registry).map_err(|e| CliError::Usage(format!("{source}: {e}")))?;
            all.extend(&loaded);
        }
        if let Some(base) = &self.base {
            all = all.base_path(base.clone());
        }
        // Even with no rules: the base path is kept for rules added later ("always").
        manager.add_rules(&all);
        Ok(())
    }

    /// Whether a flag or file names `tool` alone in some list (`--allow run_bash`).
    pub(crate) fn names(&self, tool: &str) -> bool {
        self.strict.iter().chain(&self.lenient).any(|(_, r)| {
            [PermissionLevel::Allow, PermissionLevel::Ask, PermissionLevel::Deny]
                .into_iter()
                .any(|l| r.names(l, tool))
        })
    }
}

/// Reads the rules of the flags and files. `base`: the folder path rules are relative to
/// (the file tools' base path, or the current directory).
pub(crate) fn load(args: &PermissionArgs, base: Option<&Path>) -> Result<LoadedRules, CliError> {
    let mut loaded = LoadedRules { base: base.map(absolute), ..LoadedRules::default() };
    if let Ok(here) = std::env::current_dir()
        && let Some(file) = project_file(&here)
    {
        loaded.lenient.push((file.display().to_string(), read(&file)?));
    }
    if let Some(file) = user_file().filter(|f| f.is_file()) {
        loaded.lenient.push((file.display().to_string(), read(&file)?));
    }
    for (place, level, list) in &args.configured {
        let mut rules = PermissionRules::new();
        for rule in list {
            rules.add(*level, rule).map_err(|e| CliError::Usage(format!("{place}: {rule:?}: {e}")))?;
        }
        loaded.lenient.push((place.clone(), rules));
    }
    if let Some(file) = &args.permissions_file {
        if !file.is_file() {
            return Err(CliError::Usage(format!("--permissions {}: no such file", file.display())));
        }
        loaded.strict.push((format!("--permissions {}", file.display()), read(file)?));
    }
    let mut flags = PermissionRules::new();
    for (flag, level, list) in [
        ("--deny", PermissionLevel::Deny, &args.deny),
        ("--ask", PermissionLevel::Ask, &args.ask),
        ("--allow", PermissionLevel::Allow, &args.allow),
    ] {
        for rule in list {
            flags.add(level, rule).map_err(|e| CliError::Usage(format!("{flag} {rule:?}: {e}")))?;
        }
    }
    loaded.strict.push(("the permission flags".to_owned(), flags));
    Ok(loaded)
}

fn absolute(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

/// A rules file: TOML with `allow`, `ask` and `deny` lists.
fn read(file: &Path) -> Result<PermissionRules, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| CliError::Usage(format!("permission rules file {}: {e}", file.display())))?;
    let lists: RuleLists = toml::from_str(&text).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_owned();
        CliError::Usage(format!(
            "permission rules file {}: {first} (expected `allow`, `ask` and `deny` lists of rules)",
            file.display()
        ))
    })?;
    PermissionRules::from_lists(&lists).map_err(|e| CliError::Usage(format!("{}: {e}", file.display())))
}

/// The nearest `.harnessx/permissions.toml` from `start` upward.
pub(crate) fn project_file(start: &Path) -> Option<PathBuf> {
    start.ancestors().map(|dir| dir.join(PROJECT_FILE)).find(|f| f.is_file())
}

/// The file "always, and save" writes to: the project file found from the current
/// directory, else a new one in it.
pub(crate) fn project_file_to_write() -> Option<PathBuf> {
    let here = std::env::current_dir().ok()?;
    Some(project_file(&here).unwrap_or_else(|| here.join(PROJECT_FILE)))
}

/// The user's rules file: `$XDG_CONFIG_HOME/harnessx/permissions.toml`, else
/// `$HOME/.config/harnessx/permissions.toml`.
pub(crate) fn user_file() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("harnessx").join("permissions.toml"))
}

/// Adds `rule` to the `allow` list of `file` (created with its folder if missing),
/// keeping the rules already there.
pub(crate) fn save_allow_rule(file: &Path, rule: &str) -> Result<(), String> {
    let mut lists: RuleLists = match std::fs::read_to_string(file) {
        Ok(text) => toml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => RuleLists::default(),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    if !lists.allow.iter().any(|r| r == rule) {
        lists.allow.push(rule.to_owned());
    }
    let text = toml::to_string(&lists).map_err(|e| e.to_string())?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(file, text).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saving_keeps_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(PROJECT_FILE);
        save_allow_rule(&file, "run_bash(git status*)").unwrap();
        save_allow_rule(&file, "run_bash(git status*)").unwrap();
        std::fs::write(&file, format!("deny = [\"delete\"]\n{}", std::fs::read_to_string(&file).unwrap()))
            .unwrap();
        save_allow_rule(&file, "read_file(path=src/**)").unwrap();
        let rules = read(&file).unwrap();
        assert_eq!(
            rules.lists().allow,
            ["read_file(path=src/**)", "run_bash(git status*)"].map(String::from)
        );
        assert_eq!(rules.lists().deny, ["delete"]);
        assert_eq!(project_file(&dir.path().join("a/b")).as_ref(), Some(&file), "found from below");
        assert_eq!(project_file(dir.path()), Some(file));
    }
}
