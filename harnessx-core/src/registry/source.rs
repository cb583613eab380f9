//! [`ToolSource`]: anything a registry can add — a tool or definition, or a built-in
//! tool or bundle by name — so builders can take a mixed list (the spec's
//! `Agent(tools=[fetch_url, "web", definition])`).

use std::fmt;

use crate::catalog::BuiltinOptions;
use crate::error::RegistryError;
use crate::registry::ToolRegistry;
use crate::tool::definition::{IntoToolDefinition, ToolDefinition};

/// A tool to add to a registry: a `#[tool]` struct or [`ToolDefinition`], or a built-in
/// tool or bundle name (`"read_file"`, `"filesystem"`) with its options.
///
/// ```
/// use harnessx_core::{ToolRegistry, ToolSource};
///
/// let registry = ToolRegistry::new();
/// // A name that no linked crate submitted is an error that lists the known ones.
/// let err = registry.add("no_such_tool").unwrap_err();
/// assert!(err.to_string().contains("no_such_tool"), "{err}");
/// let _: ToolSource = "read_file".into();
/// ```
pub enum ToolSource {
    /// A definition to register with its own metadata.
    Definition(ToolDefinition),
    /// A built-in name or bundle, with options (as [`ToolRegistry::load_builtin`] takes).
    Builtin(String, BuiltinOptions),
}

impl fmt::Debug for ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Definition(d) => f.debug_tuple("Definition").field(&d.name).finish(),
            Self::Builtin(n, _) => f.debug_tuple("Builtin").field(n).finish(),
        }
    }
}

impl<T: IntoToolDefinition> From<T> for ToolSource {
    fn from(tool: T) -> Self {
        Self::Definition(tool.into_tool_definition())
    }
}

impl From<&str> for ToolSource {
    fn from(name: &str) -> Self {
        Self::Builtin(name.to_owned(), BuiltinOptions::new())
    }
}

impl From<String> for ToolSource {
    fn from(name: String) -> Self {
        Self::Builtin(name, BuiltinOptions::new())
    }
}

impl ToolRegistry {
    /// Adds a tool or a built-in: [`register_tool`](Self::register_tool) for a definition,
    /// [`load_builtin`](Self::load_builtin) for a name. Returns the names registered.
    pub fn add(&self, source: impl Into<ToolSource>) -> Result<Vec<String>, RegistryError> {
        match source.into() {
            ToolSource::Definition(def) => Ok(vec![self.register_tool(def)?.name]),
            ToolSource::Builtin(name, options) => self.load_builtin(&name, options),
        }
    }
}
