//! Runtime support for the code `#[tool]` and `#[toolbox]` generate.
//!
//! Everything here is reached by generated code through `harnessx::__private`; the few
//! items meant for users ([`Toolbox`], [`CollectedTool`]) are
//! re-exported at the crate root. Nothing in this module is a stable API on its own.

mod call;
mod collect;
mod generated;
pub mod schema;

pub use call::*;
pub use collect::{CollectedTool, Toolbox};
pub use generated::*;
pub use schema::ParamSchema;

pub use crate::tool::decode::Args;
pub use crate::tool::encode::{output, result_output, tool_error};

pub use crate::error::{ToolError, TransientToolError};
pub use crate::permission::PermissionLevel;
pub use crate::tool::call::ToolOutput;
pub use crate::tool::definition::{IntoToolDefinition, ToolDefinition, ToolOptions};
pub use crate::tool::handler::{BoxFuture, HandlerResult, ToolContext, ToolHandler};
pub use crate::tool::policy::{ReplayPolicy, ToolRetry};

pub use inventory;
pub use serde_json::Value;

/// The definition of a `#[toolbox]` tool, with the default policy (non-generic, so each
/// tool is one call).
pub fn definition(
    name: &'static str,
    description: &'static str,
    input_schema: Value,
    handler: ToolHandler,
) -> ToolDefinition {
    ToolDefinition::new(name, description, input_schema, handler)
}

/// Passes a future through unchanged, requiring it to be `Send` (so the error points at
/// the tool, not deep inside the handler).
#[inline]
pub fn require_send<F: std::future::Future + Send>(future: F) -> F {
    future
}
