//! Registration style "tool definition": an explicit schema and execution policy, reused
//! by any registry. Also shows the collection (`#[tool(collect)]` + `register_collected`).
//!
//! Spec: `Agent(tools=[definition])` and `register_with_schema`.
//! Run with `cargo run --example registration_definition`.

use harnessx::{
    IntoToolDefinition, PermissionLevel, ReplayPolicy, ToolCall, ToolDefinition, ToolHandler, ToolOptions,
    ToolRegistry, tool,
};
use serde_json::json;

/// Say hello.
///
/// Args:
///     name: Who to greet.
#[tool(collect)]
fn greet(name: String) -> String {
    format!("hello, {name}")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An explicit schema where inference cannot express the contract (maxLength).
    let setup = ToolRegistry::new();
    let label = setup.register_with_schema(
        "label",
        "Uppercase a short label.",
        json!({
            "type": "object",
            "properties": {"value": {"type": "string", "maxLength": 40}},
            "required": ["value"],
            "additionalProperties": false
        }),
        ToolHandler::from_async(|args, _ctx| async move {
            Ok(args["value"].as_str().unwrap_or_default().to_uppercase().into())
        }),
        ToolOptions::new().permission(PermissionLevel::Allow).replay_policy(ReplayPolicy::Safe),
    )?;

    // A `#[tool]` function's definition is an ordinary value too.
    let greet_def: ToolDefinition = Greet.into_tool_definition();

    // Registering a definition elsewhere keeps its explicit permission and replay policy.
    let registry = ToolRegistry::new();
    let copied = registry.register_tool(&label)?;
    assert_eq!(copied.permission, Some(PermissionLevel::Allow));
    assert_eq!(copied.replay_policy, ReplayPolicy::Safe);
    registry.register_tool(greet_def.with_timeout_seconds(5.0))?;

    let r = registry.execute(&ToolCall::new("1", "label", r#"{"value": "draft"}"#), None).await;
    println!("label -> {}", r.content);
    let r = registry
        .execute(&ToolCall::new("2", "label", format!(r#"{{"value": "{}"}}"#, "x".repeat(50))), None)
        .await;
    println!("label(50 chars) -> error={} {}", r.is_error, r.content);

    // Every `#[tool(collect)]` function linked into this binary, in one call.
    let collected = ToolRegistry::new();
    println!("collected: {:?}", collected.register_collected()?);
    let r = collected.execute(&ToolCall::new("3", "greet", r#"{"name": "Ada"}"#), None).await;
    println!("greet -> {}", r.content);
    Ok(())
}
