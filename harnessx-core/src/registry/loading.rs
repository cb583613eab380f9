//! The registry's entry points to the built-in catalog and the macro collections:
//! loading a built-in tool or bundle by name, and registering `#[tool(collect)]` tools
//! and `#[toolbox]` instances. The catalog and the macro support own how; these are the
//! registry methods.

use std::sync::Arc;

use crate::__private::{CollectedTool, Toolbox};
use crate::catalog::{self, BuiltinOptions};
use crate::error::RegistryError;
use crate::registry::ToolRegistry;
use crate::tool::definition::ToolDefinition;

impl ToolRegistry {
    /// Loads a built-in tool (`"read_file"`) or bundle (`"filesystem"`, `"all"`) by name,
    /// with the options its registration helper takes, in dynamic form. Returns the names
    /// registered.
    ///
    /// Options: `include` and `exclude` (lists of tool names; bundles only), `permission`
    /// (`"allow"`, `"ask"`, `"deny"`), `replace` (bool), plus the bundle's own
    /// (e.g. `base_path` for the filesystem bundle). For `"all"`, each bundle receives
    /// its own keys. An unknown name, an unknown key or a value of the wrong type fails,
    /// and the message names what is valid. Nothing is registered when loading fails
    /// before registration starts; see the bundle helpers for what they check up front.
    ///
    /// See the [module documentation](crate::catalog) for an example; `harnessx-builtin`'s
    /// bundles load the same way:
    /// `registry.load_builtin("read_file", json!({"base_path": "."}))`.
    pub fn load_builtin(
        &self,
        name_or_bundle: &str,
        options: impl Into<BuiltinOptions>,
    ) -> Result<Vec<String>, RegistryError> {
        catalog::load(self, name_or_bundle, options.into())
    }

    /// Registers every tool submitted with `#[tool(collect)]`, sorted by name, and returns
    /// their names. Stops at the first failure (e.g. a duplicate name).
    ///
    /// Collected tools live in the object code of the crate that defines them: a binary
    /// that never refers to that crate may have them dropped by the linker.
    pub fn register_collected(&self) -> Result<Vec<String>, RegistryError> {
        self.register_all(CollectedTool::all())
    }

    /// Registers the tools of a shared `#[toolbox]` instance and returns their names.
    /// Keep a clone of the `Arc` to reach the same state from elsewhere.
    pub fn register_toolbox<T: Toolbox>(&self, toolbox: Arc<T>) -> Result<Vec<String>, RegistryError> {
        self.register_all(toolbox.tool_definitions())
    }

    fn register_all(&self, defs: Vec<ToolDefinition>) -> Result<Vec<String>, RegistryError> {
        defs.into_iter().map(|def| self.register_tool(def).map(|d| d.name)).collect()
    }
}
