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
use crate::permission::PermissionLevel;
use crate::tool::definition::{IntoToolDefinition, ToolDefinition};
use crate::tool::handler::{BlockingToolHandler, ToolHandler};
use crate::tool::policy::{ReplayPolicy, ToolRetry};

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
    /// The options given in the attribute.
    pub policy: StaticPolicy,
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

/// The options of `#[tool(..)]`; `None` leaves the definition's default.
#[derive(Clone, Copy)]
pub struct StaticPolicy {
    /// `permission = ".."`.
    pub permission: Option<PermissionLevel>,
    /// `replay_policy = ".."`.
    pub replay_policy: Option<ReplayPolicy>,
    /// `concurrent = ..`.
    pub concurrent: Option<bool>,
    /// `timeout_seconds = ..`.
    pub timeout_seconds: Option<f64>,
    /// `retry` / `retry(..)`.
    pub retry: Option<ToolRetry>,
}

impl StaticPolicy {
    /// No option given.
    pub const DEFAULT: StaticPolicy = StaticPolicy {
        permission: None,
        replay_policy: None,
        concurrent: None,
        timeout_seconds: None,
        retry: None,
    };
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
    with_policy(ToolDefinition::new(tool.name, tool.description, schema, handler), tool.policy)
}

/// `def` with the options of `#[tool(..)]` applied.
pub fn with_policy(mut def: ToolDefinition, policy: StaticPolicy) -> ToolDefinition {
    def.permission = policy.permission;
    if let Some(replay) = policy.replay_policy {
        def.replay_policy = replay;
    }
    if let Some(concurrent) = policy.concurrent {
        def.concurrent = concurrent;
    }
    def.timeout_seconds = policy.timeout_seconds;
    def.retry = policy.retry;
    def
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
