//! What `tools` and `run` share: loading tools from `--tools` specs, and the permission
//! flags.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use harnessx_core::catalog::{self, BuiltinItem, BuiltinOptions};
use harnessx_core::{PermissionLevel, PermissionManager, ToolRegistry};

use crate::UsageError;

/// Where file tools may act.
#[derive(Debug, Clone, Args)]
pub(crate) struct ToolArgs {
    /// Built-in tools or bundles to load, comma-separated (e.g. `read_file,grep` or `filesystem`).
    #[arg(long, value_delimiter = ',', value_name = "SPEC")]
    pub(crate) tools: Vec<String>,
    /// Contain the filesystem tools under this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) base_path: Option<PathBuf>,
}

/// A permission level as a flag value.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Level {
    Allow,
    Ask,
    Deny,
}

impl From<Level> for PermissionLevel {
    fn from(l: Level) -> Self {
        match l {
            Level::Allow => PermissionLevel::Allow,
            Level::Ask => PermissionLevel::Ask,
            Level::Deny => PermissionLevel::Deny,
        }
    }
}

/// Permission flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct PermissionArgs {
    /// The level of tools without their own permission.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub(crate) default_permission: Option<Level>,
    /// Allow this tool (an override; repeatable).
    #[arg(long = "allow", value_name = "NAME")]
    pub(crate) allow: Vec<String>,
    /// Deny this tool (an override; repeatable).
    #[arg(long = "deny", value_name = "NAME")]
    pub(crate) deny: Vec<String>,
}

impl PermissionArgs {
    /// A manager with the flags applied over `default`.
    pub(crate) fn manager(&self, default: PermissionLevel) -> PermissionManager {
        let mut manager = PermissionManager::new(self.default_permission.map(Into::into).unwrap_or(default));
        for name in &self.allow {
            manager = manager.with_override(name.clone(), PermissionLevel::Allow);
        }
        for name in &self.deny {
            manager = manager.with_override(name.clone(), PermissionLevel::Deny);
        }
        manager
    }
}

/// Loads the specs (default `default_specs`) into `registry`, passing `base_path` to the
/// bundles that take it.
pub(crate) fn load_tools(
    registry: &ToolRegistry,
    specs: &[String],
    default_specs: &[&str],
    base_path: Option<&PathBuf>,
) -> Result<(), UsageError> {
    let specs: Vec<String> = if specs.is_empty() {
        default_specs.iter().map(|s| s.to_string()).collect()
    } else {
        specs.iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
    };
    let mut used_base_path = base_path.is_none();
    for spec in &specs {
        if registry.contains(spec) {
            continue; // named twice, or already loaded by its bundle
        }
        let item = catalog::resolve(spec)?;
        let takes_base_path = match item {
            BuiltinItem::Tool { bundle, .. } | BuiltinItem::Bundle(bundle) => {
                bundle.options.contains(&"base_path")
            }
            BuiltinItem::All => true,
        };
        let mut options = BuiltinOptions::new().set("replace", true);
        if let (Some(dir), true) = (base_path, takes_base_path) {
            let dir = dir.to_str().ok_or_else(|| UsageError("--base-path must be valid UTF-8".into()))?;
            options = options.set("base_path", dir);
            used_base_path = true;
        }
        registry.load_builtin(spec, options)?;
    }
    if !used_base_path {
        return Err(UsageError("--base-path was given but none of the --tools uses a base path".into()));
    }
    Ok(())
}
