//! Registration style "constructor function": a documented function becomes a tool with
//! `#[tool]`, and its generated unit struct is registered.
//!
//! Spec: `Agent(tools=[fetch_url])`. Run with `cargo run --example tool_fn`.

use harnessx::{ToolCall, ToolRegistry, tool};

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[tool]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The agent builder takes the same value: `Agent::builder().tool(Calculate)`.
    let registry = ToolRegistry::new();
    registry.register_tool(Calculate)?;

    for spec in registry.get_tool_params() {
        println!(
            "{} - {}\n{}",
            spec.name,
            spec.description,
            serde_json::to_string_pretty(&spec.input_schema)?
        );
    }
    let result = registry.execute(&ToolCall::new("call-1", "calculate", r#"{"a": 6, "b": 7}"#), None).await;
    println!("calculate(6, 7) -> {}", result.content);
    assert_eq!(result.content, "42");
    // A direct call is an ordinary function call: no validation, permission or timeout.
    assert_eq!(calculate(6, 7), 42);
    Ok(())
}
