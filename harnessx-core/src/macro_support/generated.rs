//! A `#[tool]` free function as data: the generated unit struct implements
//! [`GeneratedTool`], whose one associated constant describes the tool, and gets
//! [`IntoToolDefinition`] from the blanket impl here.
//!
//! Why data and not a function per tool: a non-generic `into_tool_definition` in the tool
//! crate is type-checked, borrow-checked, const-evaluated and compiled to machine code
//! there, for every tool, whether or not anything registers it. An associated constant is
//! only evaluated, and the handler it points to only compiled, where the tool is
//! registered (the blanket impl is generic), and the definition is built by one
//! non-generic function, [`from_static`]. See docs/performance.md.

use serde_json::Value;

use super::{BoxFuture, HandlerResult, ToolContext};
use crate::tool::definition::{IntoToolDefinition, ToolDefinition, ToolOptions};
use crate::tool::handler::{BlockingToolHandler, ToolHandler};
use crate::tool::policy::ToolRetry;

/// Implemented by the unit struct `#[tool]` generates for a free function.
pub trait GeneratedTool {
    /// The tool.
    const TOOL: &'static StaticTool;
}

impl<T: GeneratedTool> IntoToolDefinition for T {
    fn into_tool_definition(self) -> ToolDefinition {
        from_static(T::TOOL)
    }
}

/// The definition of a [`GeneratedTool`] (for `#[tool(collect)]`'s entry).
pub fn collected<T: GeneratedTool>() -> ToolDefinition {
    from_static(T::TOOL)
}

/// Everything `#[tool]` knows about a free function, as a constant.
pub struct StaticTool {
    /// The tool's name.
    pub name: &'static str,
    /// The description.
    pub description: &'static str,
    /// The input schema.
    pub schema: StaticSchema,
    /// How the function is called.
    pub handler: StaticHandler,
    /// The options given in the attribute (applied as registration options are).
    pub options: ToolOptions,
}

/// Where the input schema comes from.
pub enum StaticSchema {
    /// Written out at compile time (every parameter type recognised).
    Json(&'static str),
    /// Built when the definition is (a type implementing `schemars::JsonSchema`, or an
    /// `#[arg(one_of)]`/`#[arg(default = expr)]` whose JSON is not known at compile time).
    Build(fn() -> Value),
}

/// How the function is called.
pub enum StaticHandler {
    /// A shared handler (`sync0`..`sync12`), for a sync function in the common shape.
    Shared(&'static dyn BlockingToolHandler),
    /// A sync function, through its own decoding function.
    Blocking(fn(Value, &ToolContext) -> HandlerResult),
    /// An async function, through its own decoding function.
    Async(fn(Value, ToolContext) -> BoxFuture<HandlerResult>),
}

/// Builds the definition of a generated tool (non-generic: one function for all tools).
pub fn from_static(tool: &'static StaticTool) -> ToolDefinition {
    let schema = match tool.schema {
        StaticSchema::Json(text) => super::schema::parse(text),
        StaticSchema::Build(build) => build(),
    };
    let handler = match tool.handler {
        StaticHandler::Shared(handler) => super::shared(handler),
        StaticHandler::Blocking(f) => ToolHandler::from_blocking(f),
        StaticHandler::Async(f) => ToolHandler::from_async(f),
    };
    ToolDefinition::new(tool.name, tool.description, schema, handler).apply(&tool.options)
}

/// Builds a [`ToolRetry`] from the fields given in `#[tool(retry(..))]`; unset ones keep
/// their [`ToolRetry::default`] values.
pub const fn retry(
    max_attempts: Option<u32>,
    initial_delay_seconds: Option<f64>,
    backoff_multiplier: Option<f64>,
    max_delay_seconds: Option<f64>,
) -> ToolRetry {
    const fn or(value: Option<f64>, default: f64) -> f64 {
        match value {
            Some(v) => v,
            None => default,
        }
    }
    let d = ToolRetry::DEFAULT;
    ToolRetry {
        max_attempts: match max_attempts {
            Some(v) => v,
            None => d.max_attempts,
        },
        initial_delay_seconds: or(initial_delay_seconds, d.initial_delay_seconds),
        backoff_multiplier: or(backoff_multiplier, d.backoff_multiplier),
        max_delay_seconds: or(max_delay_seconds, d.max_delay_seconds),
    }
}
