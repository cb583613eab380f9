//! Constructor built-in name: load one shipped tool by its name, without importing its
//! handler (the spec's `Agent(tools=["read_file"])`; until the agent builder lands, the
//! registry-level call is the same entry point).
//!
//! `cargo run --example builtin_by_name`

use harnessx::{ToolCall, ToolRegistry};
use serde_json::json;

#[tokio::main]
async fn main() {
    let workspace = std::env::temp_dir().join(format!("hx-example-by-name-{}", std::process::id()));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "first line\nsecond line\n").unwrap();

    let registry = ToolRegistry::new();
    // "read_file" resolves through the built-in catalog; `base_path` confines it.
    let loaded = registry.load_builtin("read_file", json!({"base_path": workspace})).unwrap();
    assert_eq!(loaded, ["read_file"]);

    let call = ToolCall::new("1", "read_file", r#"{"path": "notes.txt", "limit": 1}"#);
    let result = registry.execute(&call, None).await;
    println!("{}", result.content);
    assert!(result.content.starts_with("     1\tfirst line"));

    // An unknown name lists the known ones.
    let err = registry.load_builtin("read_files", json!({})).unwrap_err();
    println!("{err}");

    std::fs::remove_dir_all(&workspace).unwrap();
}
