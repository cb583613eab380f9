//! The filesystem bundle: `read_file`, `write_file`, `edit_file`, `delete`, `glob`, `grep`,
//! `list_directory` and `generate_file`.
//!
//! Register them with [`register_filesystem_tools`] (or `registry.load_builtin("filesystem",
//! ..)`): configured limits and the root stay out of the schemas the model sees, and the
//! writing tools are registered non-concurrent. With `base_path` set, every tool goes
//! through the containment layer; see `docs/builtin-filesystem.md`.
//!
//! ```
//! use harnessx_builtin::fs::{FilesystemOptions, register_filesystem_tools};
//! use harnessx_core::ToolRegistry;
//!
//! let registry = ToolRegistry::new();
//! let registered = register_filesystem_tools(
//!     &registry,
//!     FilesystemOptions {
//!         include: Some(vec!["read_file".into(), "list_directory".into()]),
//!         base_path: Some(std::env::current_dir().unwrap()),
//!         max_read_bytes: 1_000_000,
//!         max_directory_entries: 1_000,
//!         ..Default::default()
//!     },
//! )
//! .unwrap();
//! assert_eq!(registered, ["read_file", "list_directory"]);
//! ```

pub(crate) mod contain;
pub(crate) mod text;
mod tools;
pub(crate) mod walk;

use std::path::PathBuf;
use std::sync::Arc;

use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions, select_tools};
use harnessx_core::{
    PermissionLevel, RegistryError, SandboxFilesystem, ToolDefinition, ToolOptions, ToolRegistry,
};
use serde::Deserialize;

pub use contain::Resolver;
use contain::Scope;
use tools::FsConfig;
use walk::WalkConfig;

/// The bundle's name, for `load_builtin`.
pub const BUNDLE: &str = "filesystem";

/// The tools of the bundle, in registration order.
pub const FILESYSTEM_TOOLS: [&str; 8] =
    ["read_file", "write_file", "edit_file", "delete", "glob", "grep", "list_directory", "generate_file"];

/// Default [`FilesystemOptions::max_read_bytes`]: 256 KiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 256 * 1024;

/// Default [`FilesystemOptions::max_media_bytes`]: 20 MiB.
pub const DEFAULT_MAX_MEDIA_BYTES: u64 = 20 * 1024 * 1024;

/// Default [`FilesystemOptions::max_directory_entries`].
pub const DEFAULT_MAX_DIRECTORY_ENTRIES: usize = 1_000;

/// The environment variable `generate_file` falls back to when `output_dir` is not set.
pub const OUTPUT_DIR_ENV: &str = "AGENT_OUTPUT_DIR";

/// Options of [`register_filesystem_tools`], and of `load_builtin("filesystem", ..)`,
/// which decodes this struct from its map. The model sees none of them.
///
/// Build with struct-update syntax: `FilesystemOptions { base_path: Some(dir), ..Default::default() }`.
///
/// The map keys are the fields serde decodes: `base_path`, `max_read_bytes`,
/// `max_media_bytes`, `max_directory_entries`, `output_dir`, plus the common `include`, `exclude`,
/// `permission` and `replace`, which the catalog decodes as
/// [`CommonOptions`] and hands over through [`BundleOptions::set_common`]. Those four are
/// plain fields here (not one `common` field) so that struct literals can set them
/// directly, as they always could; they are `#[serde(skip)]` so that only
/// `CommonOptions` decodes them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilesystemOptions {
    /// Register only these tools (all when `None`). Unknown names fail.
    #[serde(skip)]
    pub include: Option<Vec<String>>,
    /// Leave these tools out. Unknown names fail.
    #[serde(skip)]
    pub exclude: Vec<String>,
    /// Explicit permission for every tool, or `None` to inherit the manager's default.
    #[serde(skip)]
    pub permission: Option<PermissionLevel>,
    /// Replace tools of the same names instead of failing.
    #[serde(skip)]
    pub replace: bool,
    /// The root every path is confined to. It must exist. `None`: host paths under the
    /// process's permissions.
    pub base_path: Option<PathBuf>,
    /// Most bytes of a text file's content `read_file` returns in one call (a longer file
    /// is read a window at a time), and of `grep` output.
    #[serde(deserialize_with = "harnessx_core::catalog::positive")]
    pub max_read_bytes: u64,
    /// The largest image (PNG, JPEG, GIF, WebP) or PDF `read_file` returns, as a media
    /// part: such a file is returned whole or not at all, and one over this limit is
    /// refused with a line naming it, its size and the limit, never cut short. Default
    /// [`DEFAULT_MAX_MEDIA_BYTES`] (20 MiB). Kept apart from `max_read_bytes`, which
    /// bounds the text a model reads per call and is much smaller by default; providers
    /// take images of a few MB (and count them by pixels, not bytes). A `max_read_bytes`
    /// set to other than its default bounds media too (the smaller of the two applies).
    #[serde(deserialize_with = "harnessx_core::catalog::positive")]
    pub max_media_bytes: u64,
    /// Most entries `list_directory` shows, and most lines `glob` and `grep` return.
    #[serde(deserialize_with = "harnessx_core::catalog::positive")]
    pub max_directory_entries: usize,
    /// Where `generate_file` writes; `None`: `$AGENT_OUTPUT_DIR`, else `./output` (read at
    /// registration, created on first use).
    pub output_dir: Option<PathBuf>,
    /// How paths under `base_path` are resolved (both ways are descriptor-relative and
    /// follow no symlink). Not a `load_builtin` key: the default is right outside tests.
    #[serde(skip)]
    pub resolver: Resolver,
}

impl Default for FilesystemOptions {
    fn default() -> Self {
        Self {
            include: None,
            exclude: Vec::new(),
            permission: None,
            replace: false,
            base_path: None,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            max_media_bytes: DEFAULT_MAX_MEDIA_BYTES,
            max_directory_entries: DEFAULT_MAX_DIRECTORY_ENTRIES,
            output_dir: None,
            resolver: Resolver::Auto,
        }
    }
}

/// The timeout of the file tools when they act on a sandbox's filesystem: the first call
/// may have to start the sandbox.
pub const SANDBOX_FILE_TOOL_TIMEOUT_SECONDS: f64 = 300.0;

fn config(
    options: &FilesystemOptions,
    sandbox: Option<&SandboxFilesystem>,
) -> Result<Arc<FsConfig>, RegistryError> {
    if options.max_read_bytes == 0 {
        return Err(RegistryError::InvalidOption("max_read_bytes must be at least 1".into()));
    }
    if options.max_media_bytes == 0 {
        return Err(RegistryError::InvalidOption("max_media_bytes must be at least 1".into()));
    }
    if options.max_directory_entries == 0 {
        return Err(RegistryError::InvalidOption("max_directory_entries must be at least 1".into()));
    }
    let scope = match (sandbox, &options.base_path) {
        (Some(fs), _) => Scope::contained_as(&fs.root, Some(fs.mount.clone()), options.resolver)
            .map_err(|e| RegistryError::InvalidOption(format!("the sandbox's workspace: {e}")))?,
        (None, Some(base)) => {
            Scope::contained(base, options.resolver).map_err(RegistryError::InvalidOption)?
        }
        (None, None) => Scope::host(),
    };
    let output_dir = options
        .output_dir
        .clone()
        .or_else(|| std::env::var_os(OUTPUT_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("./output"));
    Ok(Arc::new(FsConfig {
        scope,
        max_read_bytes: options.max_read_bytes,
        // A `max_read_bytes` set (not the default) bounds media too: the issue's limit for
        // an image read is `max_read_bytes`; its default (256 KiB) would refuse most
        // screenshots, so without one the media limit alone applies.
        max_media_bytes: match options.max_read_bytes {
            DEFAULT_MAX_READ_BYTES => options.max_media_bytes,
            set => options.max_media_bytes.min(set),
        },
        max_directory_entries: options.max_directory_entries,
        output_dir,
        resolver: options.resolver,
        walk: WalkConfig::default(),
    }))
}

/// Registers the selected filesystem tools on `registry`; returns their names in bundle
/// order.
///
/// When the registry's bound sandbox owns a filesystem
/// ([`ToolRegistry::bind_sandbox`]), the tools act on the sandbox's workspace instead,
/// contained the same way (its path inside the sandbox, such as `/workspace/notes.md`, is
/// accepted as well as relative paths); `base_path` does not apply, and their timeout is
/// [`SANDBOX_FILE_TOOL_TIMEOUT_SECONDS`].
///
/// Fails, registering nothing, when a name in `include`/`exclude` is unknown, the filters
/// select nothing, a limit is zero, `base_path` does not exist or is not a directory, or
/// (without `replace`) a selected name is already registered. `write_file`, `edit_file`,
/// `delete` and `generate_file` are registered non-concurrent, whatever the permission.
pub fn register_filesystem_tools(
    registry: &ToolRegistry,
    options: FilesystemOptions,
) -> Result<Vec<String>, RegistryError> {
    let selected =
        select_tools("filesystem tool", &FILESYSTEM_TOOLS, options.include.as_deref(), &options.exclude)?;
    // A bound sandbox that owns a filesystem takes the file tools: they act on its
    // workspace, and `base_path` does not apply.
    let sandbox_fs = registry.sandbox().and_then(|s| s.filesystem());
    let cfg = config(&options, sandbox_fs.as_ref())?;
    if !options.replace {
        registry.ensure_free(&selected)?;
    }
    let mut registered = Vec::with_capacity(selected.len());
    for name in selected {
        let def = tools::definition(name, cfg.clone(), true).expect("selected names are bundle tools");
        let mut opts = ToolOptions::new().replace(options.replace);
        opts.permission = options.permission;
        if sandbox_fs.is_some() {
            opts.timeout_seconds = Some(SANDBOX_FILE_TOOL_TIMEOUT_SECONDS);
        }
        registered.push(registry.register_tool_with(def, opts)?.name);
    }
    Ok(registered)
}

/// One filesystem tool as a plain definition, for the direct-registration style: host
/// paths (no `base_path`), default limits, and ordinary registration metadata, so it is
/// concurrent unless you say otherwise (`ToolOptions::new().concurrent(false)` for the
/// writing tools). `None` for a name outside [`FILESYSTEM_TOOLS`].
///
/// ```
/// use harnessx_core::{ToolOptions, ToolRegistry};
///
/// let registry = ToolRegistry::new();
/// registry.register_tool(harnessx_builtin::fs::tool("read_file").unwrap()).unwrap();
/// registry
///     .register_tool_with(harnessx_builtin::fs::tool("write_file").unwrap(), ToolOptions::new().concurrent(false))
///     .unwrap();
/// ```
pub fn tool(name: &str) -> Option<ToolDefinition> {
    let cfg = config(&FilesystemOptions::default(), None).expect("the default options are valid");
    tools::definition(name, cfg, false)
}

/// How the catalog reaches [`register_filesystem_tools`]: `load_builtin` decodes a
/// `FilesystemOptions` and calls the same helper.
impl BundleOptions for FilesystemOptions {
    fn set_common(&mut self, common: CommonOptions) {
        let CommonOptions { include, exclude, permission, replace } = common;
        self.include = include;
        self.exclude = exclude;
        self.permission = permission;
        self.replace = replace;
    }

    fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        register_filesystem_tools(registry, self)
    }
}

inventory::submit! {
    BuiltinBundle::new::<FilesystemOptions>(BUNDLE, &FILESYSTEM_TOOLS)
}

#[cfg(test)]
mod tests {
    use harnessx_core::catalog::option_keys;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_map_keys_are_the_decoded_fields() {
        assert_eq!(
            option_keys::<FilesystemOptions>(),
            ["base_path", "max_read_bytes", "max_media_bytes", "max_directory_entries", "output_dir"]
        );
    }

    #[test]
    fn a_map_decodes_to_the_struct_the_helper_takes() {
        let map = json!({"base_path": "/srv", "max_read_bytes": 10, "output_dir": null});
        let decoded: FilesystemOptions = serde_json::from_value(map).unwrap();
        let typed =
            FilesystemOptions { base_path: Some("/srv".into()), max_read_bytes: 10, ..Default::default() };
        assert_eq!(decoded, typed);
        let err = serde_json::from_value::<FilesystemOptions>(json!({"include": ["read_file"]})).unwrap_err();
        assert!(err.to_string().contains("unknown field `include`"), "{err}");
    }
}
