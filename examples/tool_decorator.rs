//! Registration style "decorator": the handler and its registration options sit together
//! in the attribute, and `#[toolbox]` does the same for methods that share state.
//!
//! Spec: `@agent.tools.register(permission=PermissionLevel.ALLOW, replay_policy="safe")`.
//! Run with `cargo run --example tool_decorator`.

use std::sync::{Arc, Mutex};

use harnessx::{PermissionLevel, PermissionManager, ToolCall, ToolContext, ToolRegistry, tool, toolbox};

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[tool(permission = "allow", replay_policy = "safe")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

/// Delete a file (always asks first).
#[tool(permission = "ask", concurrent = false, timeout_seconds = 10)]
async fn delete_file(path: String) -> String {
    format!("would delete {path}")
}

/// A to-do list its tools share.
#[derive(Default)]
struct Todos {
    items: Mutex<Vec<String>>,
}

#[toolbox]
impl Todos {
    /// Add an item to the list.
    ///
    /// Args:
    ///     item: What to do.
    #[tool(replay_policy = "idempotent")]
    fn add_todo(&self, item: String) -> usize {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        if !items.contains(&item) {
            items.push(item);
        }
        items.len()
    }

    /// List the items.
    #[tool(permission = "allow", replay_policy = "safe")]
    fn list_todos(&self, ctx: &ToolContext) -> Vec<String> {
        println!("  ({} called as {})", ctx.tool_name(), ctx.call_id());
        self.items.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new();
    registry.register_tool(Calculate)?;
    registry.register_tool(DeleteFile)?;
    registry.register_toolbox(Arc::new(Todos::default()))?;

    let def = registry.get_tool("calculate").expect("registered");
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    println!("calculate: permission={:?} replay_policy={}", def.permission, def.replay_policy);

    // A manager defaulting to DENY still runs the explicit ALLOW tool; the explicit ASK
    // tool is denied because nothing can approve it here.
    let manager = PermissionManager::new(PermissionLevel::Deny);
    let r = registry.execute(&ToolCall::new("1", "calculate", r#"{"a": 3, "b": 4}"#), Some(&manager)).await;
    println!("calculate -> {}", r.content);
    let r = registry.execute(&ToolCall::new("2", "delete_file", r#"{"path": "x"}"#), Some(&manager)).await;
    println!("delete_file -> {}", r.content);

    registry.execute(&ToolCall::new("3", "add_todo", r#"{"item": "write docs"}"#), None).await;
    let r = registry.execute(&ToolCall::new("4", "list_todos", "{}"), None).await;
    println!("list_todos -> {}", r.content);
    assert_eq!(r.content, r#"["write docs"]"#);
    Ok(())
}
