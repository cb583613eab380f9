//! The `memory` bundle: tools that let the model save, search, read, update, delete and
//! list memories in a [`MemoryStore`], under one namespace.
//!
//! Register it with [`register_memory_tools`] or `registry.load_builtin("memory", ..)`.
//! The store is, in order: [`MemoryOptions::store`]; a [`SqliteStore`] at
//! [`MemoryOptions::path`] (created if missing); else a new [`InMemoryStore`], which
//! forgets everything when the process exits — give a `path` to keep memories.
//!
//! The reads (`search_memories`, `read_memory`, `list_memories`) are concurrent,
//! read-only and `safe` to replay; the writes (`save_memory`, `update_memory`,
//! `delete_memory`) are serial and not read-only (so `harnessx run` asks before them),
//! `update_memory` and `delete_memory` destructive. All use the registry's default
//! timeout (25 s). See `docs/builtin-memory.md`.
//!
//! ```
//! use harnessx_builtin::memory::{MemoryOptions, register_memory_tools};
//! use harnessx_core::{ToolCall, ToolRegistry};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! let names = register_memory_tools(&registry, MemoryOptions { namespace: "alice".into(), ..Default::default() }).unwrap();
//! assert_eq!(names, ["save_memory", "search_memories", "read_memory", "update_memory", "delete_memory", "list_memories"]);
//! let saved = registry.execute(&ToolCall::new("1", "save_memory", r#"{"text": "Alice is allergic to peanuts"}"#), None).await;
//! assert_eq!(saved.content, "Saved memory 1.");
//! let found = registry.execute(&ToolCall::new("2", "search_memories", r#"{"query": "can she eat peanut butter?"}"#), None).await;
//! assert!(found.content.contains("- [1] Alice is allergic to peanuts"), "{}", found.content);
//! # });
//! ```

mod in_memory;
mod sqlite;
mod text;
mod tools;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions, select_tools};
use harnessx_core::time::now_unix_ms as now_ms;
use harnessx_core::{
    MemoryStore, RegistryError, ReplayPolicy, ToolAnnotations, ToolDefinition, ToolHandler, ToolRegistry,
};
use serde::Deserialize;

pub use in_memory::InMemoryStore;
pub use sqlite::{BUSY_TIMEOUT, SqliteStore};
use tools::{Kind, MemoryTool};

/// The bundle name.
pub const BUNDLE: &str = "memory";

/// The memory tools, in registration order.
pub const MEMORY_TOOLS: [&str; 6] =
    ["save_memory", "search_memories", "read_memory", "update_memory", "delete_memory", "list_memories"];

/// The namespace when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// About how many characters of a memory a search or list result shows.
const SNIPPET_CHARS: usize = 200;

/// The reads change nothing and reach nothing outside the store.
const READS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);

/// Saving adds (or, under a key, replaces) a memory.
const SAVE: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false);

/// Updating and deleting lose what was there; doing either twice leaves the same state.
const OVERWRITES: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false);

/// Options of [`register_memory_tools`] and of `load_builtin("memory", ..)`, which decodes
/// `path` and `namespace` from its map. The model sees none of them.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryOptions {
    /// `include`, `exclude`, `permission`, `replace` (decoded by the catalog).
    #[serde(skip)]
    pub common: CommonOptions,
    /// The store; `None`: a [`SqliteStore`] at `path`, else a new [`InMemoryStore`]. Not
    /// a map key: pass it in code (one store can serve several registries, each in its
    /// own namespace).
    #[serde(skip)]
    pub store: Option<Arc<dyn MemoryStore>>,
    /// The namespace the tools work in: one per user or agent. Memories of other
    /// namespaces in the same store are invisible to these tools.
    pub namespace: String,
    /// The SQLite file to keep memories in (created if missing; its directory must
    /// exist). Not together with `store`.
    pub path: Option<PathBuf>,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        Self {
            common: CommonOptions::default(),
            store: None,
            namespace: DEFAULT_NAMESPACE.into(),
            path: None,
        }
    }
}

impl fmt::Debug for MemoryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryOptions")
            .field("common", &self.common)
            .field("store", &self.store.as_ref().map(|s| s.name().to_owned()))
            .field("namespace", &self.namespace)
            .field("path", &self.path)
            .finish()
    }
}

impl BundleOptions for MemoryOptions {
    fn set_common(&mut self, common: CommonOptions) {
        self.common = common;
    }

    fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        register_memory_tools(registry, self)
    }
}

inventory::submit! {
    BuiltinBundle::new::<MemoryOptions>(BUNDLE, &MEMORY_TOOLS)
}

/// The definition of one memory tool over `store` and `namespace`.
fn definition(name: &str, store: &Arc<dyn MemoryStore>, namespace: &Arc<str>) -> Option<ToolDefinition> {
    let (kind, description, annotations) = match name {
        "save_memory" => (Kind::Save, tools::SAVE_DESCRIPTION, SAVE),
        "search_memories" => (Kind::Search, tools::SEARCH_DESCRIPTION, READS),
        "read_memory" => (Kind::Read, tools::READ_DESCRIPTION, READS),
        "update_memory" => (Kind::Update, tools::UPDATE_DESCRIPTION, OVERWRITES),
        "delete_memory" => (Kind::Delete, tools::DELETE_DESCRIPTION, OVERWRITES),
        "list_memories" => (Kind::List, tools::LIST_DESCRIPTION, READS),
        _ => return None,
    };
    let handler = MemoryTool { kind, store: store.clone(), namespace: namespace.clone() };
    let read = annotations.read_only == Some(true);
    let def =
        ToolDefinition::new(name, description, tools::schema(kind), ToolHandler::Blocking(Arc::new(handler)))
            .with_concurrent(read)
            // A read can be repeated freely; a write's effect is unknown after a crash.
            .with_replay_policy(if read { ReplayPolicy::Safe } else { ReplayPolicy::Manual })
            .with_annotations(annotations);
    Some(def)
}

/// Registers the selected memory tools over one store and namespace; returns their
/// names.
///
/// Fails, registering nothing, when `include`/`exclude` name an unknown tool or select
/// nothing, the namespace is empty, both `store` and `path` are given, the SQLite file
/// cannot be opened, or (without `replace`) a tool of the same name is registered.
pub fn register_memory_tools(
    registry: &ToolRegistry,
    options: MemoryOptions,
) -> Result<Vec<String>, RegistryError> {
    let common = &options.common;
    let selected = select_tools("memory tool", &MEMORY_TOOLS, common.include.as_deref(), &common.exclude)?;
    if options.namespace.trim().is_empty() {
        return Err(RegistryError::InvalidOption(
            "namespace must not be empty; leave it out for the default namespace".into(),
        ));
    }
    if !common.replace {
        registry.ensure_free(&selected)?;
    }
    let store: Arc<dyn MemoryStore> = match (options.store.clone(), &options.path) {
        (Some(_), Some(_)) => {
            return Err(RegistryError::InvalidOption(
                "give the memory bundle a store or a path, not both".into(),
            ));
        }
        (Some(store), None) => store,
        (None, Some(path)) => Arc::new(SqliteStore::open(path).map_err(|e| {
            RegistryError::InvalidOption(format!("cannot open the memory store at {}: {e}", path.display()))
        })?),
        (None, None) => Arc::new(InMemoryStore::new()),
    };
    let namespace: Arc<str> = options.namespace.as_str().into();
    let registration = common.tool_options();
    let mut names = Vec::with_capacity(selected.len());
    for name in selected {
        let def = definition(name, &store, &namespace).expect("selected from MEMORY_TOOLS");
        names.push(registry.register_tool_with(def, registration.clone())?.name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use harnessx_core::catalog::option_keys;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_map_keys_are_the_decoded_fields() {
        assert_eq!(option_keys::<MemoryOptions>(), ["namespace", "path"]);
        let decoded: MemoryOptions =
            serde_json::from_value(json!({"namespace": "bob", "path": "/tmp/m.db"})).unwrap();
        assert_eq!(decoded.namespace, "bob");
        assert_eq!(decoded.path.as_deref(), Some(std::path::Path::new("/tmp/m.db")));
        let default: MemoryOptions = serde_json::from_value(json!({})).unwrap();
        assert_eq!(default.namespace, DEFAULT_NAMESPACE);
        assert!(default.path.is_none());
    }

    #[test]
    fn reads_are_concurrent_and_safe_writes_serial_and_asked_about() {
        let registry = ToolRegistry::new();
        register_memory_tools(&registry, MemoryOptions::default()).unwrap();
        for name in MEMORY_TOOLS {
            let def = registry.get_tool(name).unwrap();
            let read = ["search_memories", "read_memory", "list_memories"].contains(&name);
            assert_eq!(def.concurrent, read, "{name}");
            assert_eq!(def.annotations.may_modify(), !read, "{name}");
            assert_eq!(
                def.replay_policy,
                if read { ReplayPolicy::Safe } else { ReplayPolicy::Manual },
                "{name}"
            );
            assert_eq!(def.timeout_seconds, None, "{name}: the registry default (25 s)");
            assert_eq!(
                def.annotations.destructive,
                Some(["update_memory", "delete_memory"].contains(&name)),
                "{name}"
            );
        }
    }

    #[test]
    fn bad_options_fail_and_register_nothing() {
        let registry = ToolRegistry::new();
        let err =
            register_memory_tools(&registry, MemoryOptions { namespace: " ".into(), ..Default::default() })
                .unwrap_err();
        assert!(err.to_string().contains("namespace must not be empty"), "{err}");
        let both = MemoryOptions {
            store: Some(Arc::new(InMemoryStore::new())),
            path: Some("m.db".into()),
            ..Default::default()
        };
        let err = register_memory_tools(&registry, both).unwrap_err();
        assert_eq!(err.to_string(), "give the memory bundle a store or a path, not both");
        let err = registry
            .load_builtin("memory", json!({"path": "/nonexistent-dir/sub/m.db"}))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot open the memory store at /nonexistent-dir/sub/m.db: "), "{err}");
        assert!(registry.is_empty());
    }
}
