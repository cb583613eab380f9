//! The global collection `#[tool(collect)]` submits to, and the `#[toolbox]` trait.

use std::sync::Arc;

use crate::tool::definition::ToolDefinition;

/// A tool submitted to the global collection by `#[tool(collect)]`.
///
/// [`ToolRegistry::register_collected`](crate::ToolRegistry::register_collected) registers every submitted tool. Submission
/// happens at link time (the `inventory` crate): a tool defined in a library crate is only
/// collected if that crate is linked into the final binary, i.e. something from it is
/// used; a library nothing refers to is dropped by the linker and its tools go missing.
#[derive(Debug)]
pub struct CollectedTool {
    make: fn() -> ToolDefinition,
}

impl CollectedTool {
    /// An entry that builds its definition with `make` (used by the macro).
    pub const fn new(make: fn() -> ToolDefinition) -> Self {
        Self { make }
    }

    /// Builds the definition.
    pub fn definition(&self) -> ToolDefinition {
        (self.make)()
    }

    /// Every collected tool's definition, sorted by name (link order is unspecified).
    pub fn all() -> Vec<ToolDefinition> {
        let mut defs: Vec<ToolDefinition> =
            inventory::iter::<CollectedTool>.into_iter().map(CollectedTool::definition).collect();
        defs.sort_by(|a, b| a.name.cmp(&b.name));
        defs
    }
}

inventory::collect!(CollectedTool);

/// A type whose methods are tools bound to one shared instance, implemented by
/// `#[toolbox]` on an `impl` block.
pub trait Toolbox: Send + Sync + 'static {
    /// The definitions of the toolbox's tools, each calling into `self`, in declaration order.
    fn tool_definitions(self: Arc<Self>) -> Vec<ToolDefinition>;
}
