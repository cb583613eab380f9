//! Registry loading: `registry.load_builtin(name, options)` takes the helper's options in
//! dynamic form (a JSON or TOML-like map), so configuration files can drive it. Unknown
//! keys fail and name the valid ones.
//!
//! `cargo run --example builtin_load`

use harnessx::catalog::{BuiltinOptions, known_names};
use harnessx::{PermissionLevel, ToolRegistry};
use serde_json::json;

fn main() {
    // A program that only loads built-ins by name must link the bundle crate; the facade
    // does, and `link()` makes it explicit.
    harnessx::builtin::link();
    println!("known built-ins: {}", known_names().join(", "));

    let registry = ToolRegistry::new();
    let options = json!({
        "base_path": std::env::current_dir().unwrap(),
        "exclude": ["delete", "generate_file"],
        "permission": "ask",
        "max_directory_entries": 200,
    });
    let loaded = registry.load_builtin("filesystem", options).unwrap();
    println!("loaded: {}", loaded.join(", "));
    assert!(registry.list_tools().iter().all(|d| d.permission == Some(PermissionLevel::Ask)));

    // The same options, built up in code.
    let again = ToolRegistry::new()
        .load_builtin("all", BuiltinOptions::new().set("include", json!(["grep", "glob"])))
        .unwrap();
    assert_eq!(again, ["glob", "grep"]);

    let err = ToolRegistry::new().load_builtin("filesystem", json!({"max_bytes": 10})).unwrap_err();
    println!("{err}");
}
