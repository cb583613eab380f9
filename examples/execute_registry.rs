//! Register a tool with an explicit schema and execute calls through the pipeline,
//! including the mistakes models make: a misspelt name, a repaired one, bad arguments,
//! and a batch whose results come back in call order.
//!
//! `cargo run --example execute_registry`

use harnessx::{
    PermissionLevel, PermissionManager, RunContext, ToolCall, ToolHandler, ToolOptions, ToolRegistry,
};
use serde_json::json;

#[derive(serde::Deserialize)]
struct Calc {
    a: i64,
    b: i64,
}

#[tokio::main]
async fn main() {
    let registry = ToolRegistry::new();
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]
    });
    registry
        .register_with_schema(
            "calculate",
            "Multiply two numbers.",
            schema.clone(),
            ToolHandler::typed_async(|Calc { a, b }| async move { Ok::<_, String>(a * b) }),
            ToolOptions::new(),
        )
        .expect("valid tool");
    registry
        .register_with_schema(
            "delete_everything",
            "Never let a model run this.",
            schema,
            ToolHandler::typed_blocking(|Calc { a, .. }| Ok::<_, String>(a)),
            ToolOptions::new().permission(PermissionLevel::Deny),
        )
        .expect("valid tool");

    let manager = PermissionManager::default();
    for call in [
        ToolCall::new("1", "calculate", r#"{"a": 6, "b": 7}"#),
        ToolCall::new("2", "functions.Calculate", r#"{"a": 2, "b": 2}"#),
        ToolCall::new("3", "calculat", r#"{"a": 1, "b": 1}"#),
        ToolCall::new("4", "calculate", r#"{"a": 6, "b": "x"}"#),
        ToolCall::new("5", "calculate", r#"{"a": 6, "b": 7"#),
        ToolCall::new("6", "delete-everything", r#"{"a": 1, "b": 1}"#),
    ] {
        let r = registry.execute(&call, Some(&manager)).await;
        println!("{:<22} -> {}{}", call.name, if r.is_error { "error: " } else { "" }, r.content);
    }

    let batch: Vec<ToolCall> = (1..=3)
        .map(|i| ToolCall::new(format!("b{i}"), "calculate", format!(r#"{{"a": {i}, "b": 10}}"#)))
        .collect();
    let results = registry.execute_batch(&batch, &RunContext::new().with_permissions(manager)).await;
    for r in results {
        println!("batch {} -> {}", r.call_id, r.content);
    }
}
