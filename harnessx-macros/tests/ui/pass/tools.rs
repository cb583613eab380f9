//! Valid uses: every attribute option, sync and async, context injection, toolboxes,
//! collection, and public tools in a crate that denies missing docs.
#![deny(missing_docs)]

use std::sync::Arc;

use harnessx::{ToolAnnotations, ToolContext, ToolRegistry, TransientToolError, tool, toolbox};

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[tool(
    name = "multiply",
    description = "Multiply a by b.",
    permission = "ask",
    concurrent = false,
    replay_policy = "idempotent",
    timeout_seconds = 2.5,
    retry(max_attempts = 4, initial_delay_seconds = 1, backoff_multiplier = 3.0, max_delay_seconds = 9),
    read_only = false,
    destructive = false,
    idempotent,
    open_world = false,
    crate = ::harnessx,
    collect
)]
pub fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

/// Fetch, retrying when busy.
#[tool(retry, replay_policy = "safe")]
pub async fn fetch(
    /// The address.
    url: String,
    #[arg(default)] max_length: Option<u64>,
    ctx: ToolContext,
) -> Result<String, TransientToolError> {
    Ok(format!("{url} {max_length:?} {}", ctx.call_id()))
}

/// A raw identifier as a tool name.
#[tool]
fn r#type(r#in: String) -> String {
    r#in
}

/// A counter shared by its tools.
pub struct Counter {
    start: i64,
}

#[toolbox]
impl Counter {
    /// Add to the counter.
    #[tool]
    pub fn add(&self, by: i64) -> i64 {
        self.start + by
    }

    /// Read it later.
    #[tool(name = "read_later", read_only, open_world = true)]
    async fn read(&self, ctx: &ToolContext) -> String {
        format!("{} {}", self.start, ctx.tool_name())
    }

    /// Not a tool.
    pub fn plain(&self) -> i64 {
        self.start
    }
}

fn main() {
    let registry = ToolRegistry::new();
    registry.register_tool(Calculate).unwrap();
    registry.register_tool(Fetch).unwrap();
    registry.register_tool(Type).unwrap();
    registry.register_toolbox(Arc::new(Counter { start: 1 })).unwrap();
    assert_eq!(Calculate::NAME, "multiply");
    assert_eq!(Counter { start: 2 }.plain(), 2);
    assert_eq!(calculate(2, 3), 6);
    assert_eq!(r#type("x".into()), "x");
    assert_eq!(registry.len(), 5);
    let hints = ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false);
    assert_eq!(registry.get_tool("multiply").unwrap().annotations, hints);
    let hints = ToolAnnotations::new().read_only(true).open_world(true);
    assert_eq!(registry.get_tool("read_later").unwrap().annotations, hints);
}
