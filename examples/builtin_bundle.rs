//! Constructor bundle: load the whole filesystem bundle by name (the spec's
//! `Agent(tools=["filesystem"])`) on the agent builder, confined to a root, and run a
//! model's turns through the agent's registry.
//!
//! `cargo run --example builtin_bundle`

use harnessx::agent::{Agent, AgentConfig};
use harnessx::{RunContext, ToolCall};
use serde_json::json;

#[tokio::main]
async fn main() {
    let workspace = std::env::temp_dir().join(format!("hx-example-bundle-{}", std::process::id()));
    std::fs::create_dir_all(&workspace).unwrap();

    // The spec's Agent(tools=["filesystem"]), with the bundle's base_path option.
    let agent = Agent::builder()
        .builtin("filesystem", json!({"base_path": workspace}))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let registry = agent.tools();
    println!("loaded: {}", registry.tool_names().join(", "));

    // First turn: two writes, run one at a time in call order (writes are serial).
    let turn = [
        ToolCall::new(
            "1",
            "write_file",
            r#"{"path": "src/lib.rs", "content": "// TODO: tests\npub fn f() {}\n"}"#,
        ),
        ToolCall::new(
            "2",
            "edit_file",
            r#"{"path": "src/lib.rs", "old_string": "f()", "new_string": "answer()"}"#,
        ),
    ];
    for r in registry.execute_batch(&turn, &RunContext::new()).await {
        println!("{}: {}", r.name, r.content.trim_end());
    }
    // Second turn: reads run together; results come back in call order.
    let turn = [
        ToolCall::new("3", "list_directory", r#"{"path": "src"}"#),
        ToolCall::new("4", "grep", r#"{"pattern": "TODO|answer"}"#),
    ];
    let results = registry.execute_batch(&turn, &RunContext::new()).await;
    for r in &results {
        println!("{}: {}", r.name, r.content.trim_end());
    }
    assert_eq!(results[1].content, "src/lib.rs:1:// TODO: tests\nsrc/lib.rs:2:pub fn answer() {}\n");

    // Escapes are refused with a reason, and without revealing host paths.
    let escape = ToolCall::new("4", "read_file", r#"{"path": "../../etc/passwd"}"#);
    let r = registry.execute(&escape, None).await;
    println!("escape attempt: {}", r.content);
    assert!(r.is_error);

    std::fs::remove_dir_all(&workspace).unwrap();
}
