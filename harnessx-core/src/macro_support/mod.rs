//! Runtime support for the code `#[tool]` and `#[toolbox]` generate.
//!
//! Everything here is reached by generated code through `harnessx::__private`; the few
//! items meant for users ([`Toolbox`], [`CollectedTool`]) are
//! re-exported at the crate root. Nothing in this module is a stable API on its own.

mod args;
mod call;
mod collect;
mod output;
pub mod schema;

pub use args::Args;
pub use call::*;
pub use collect::{CollectedTool, Toolbox};
pub use output::{output, result_output, tool_error};
pub use schema::ParamSchema;

pub use crate::error::{ToolError, TransientToolError};
pub use crate::permission::PermissionLevel;
pub use crate::tool::call::ToolOutput;
pub use crate::tool::definition::{IntoToolDefinition, ToolDefinition};
pub use crate::tool::handler::{BoxFuture, HandlerResult, ToolContext, ToolHandler};
pub use crate::tool::policy::{ReplayPolicy, ToolRetry};

pub use inventory;
pub use serde_json::Value;

/// A lazily built value shared by every definition of one tool (its schema).
pub type Lazy<T> = std::sync::LazyLock<T>;

/// A blocking handler from a plain function pointer: one instantiation for all tools, so
/// each `#[tool]` costs no extra monomorphized handler code.
pub fn blocking_handler(f: fn(Value, &ToolContext) -> HandlerResult) -> ToolHandler {
    ToolHandler::from_blocking(f)
}

/// The definition of a `#[tool]`, with the default policy (non-generic, so each tool's
/// `into_tool_definition` is one call).
pub fn definition(
    name: &'static str,
    description: &'static str,
    input_schema: Value,
    handler: ToolHandler,
) -> ToolDefinition {
    ToolDefinition::new(name, description, input_schema, handler)
}

/// An async handler from a plain function pointer returning a boxed future (see
/// [`blocking_handler`]).
pub fn async_handler(f: fn(Value, ToolContext) -> BoxFuture<HandlerResult>) -> ToolHandler {
    ToolHandler::from_async(f)
}

/// Passes a future through unchanged, requiring it to be `Send` (so the error points at
/// the tool, not deep inside the handler).
#[inline]
pub fn require_send<F: std::future::Future + Send>(future: F) -> F {
    future
}

/// Builds a [`ToolRetry`] from the fields given in `#[tool(retry(..))]`; unset ones keep
/// their [`ToolRetry::default`] values.
pub fn retry(
    max_attempts: Option<u32>,
    initial_delay_seconds: Option<f64>,
    backoff_multiplier: Option<f64>,
    max_delay_seconds: Option<f64>,
) -> ToolRetry {
    let d = ToolRetry::default();
    ToolRetry {
        max_attempts: max_attempts.unwrap_or(d.max_attempts),
        initial_delay_seconds: initial_delay_seconds.unwrap_or(d.initial_delay_seconds),
        backoff_multiplier: backoff_multiplier.unwrap_or(d.backoff_multiplier),
        max_delay_seconds: max_delay_seconds.unwrap_or(d.max_delay_seconds),
    }
}
