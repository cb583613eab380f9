//! Built-in helper: configure and select tools of a bundle in Rust
//! (`register_filesystem_tools(registry, FilesystemOptions { .. })`). The configured limits
//! and the root never appear in what the model sees.
//!
//! `cargo run --example builtin_helper`

use harnessx::ToolRegistry;
use harnessx::builtin::fs::{FilesystemOptions, register_filesystem_tools};

fn main() {
    let registry = ToolRegistry::new();
    let registered = register_filesystem_tools(
        &registry,
        FilesystemOptions {
            include: Some(vec!["read_file".into(), "list_directory".into()]),
            base_path: Some(std::env::current_dir().unwrap()),
            max_read_bytes: 1_000_000,
            max_directory_entries: 1_000,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(registered, ["read_file", "list_directory"]);

    for spec in registry.get_tool_params() {
        let schema = spec.input_schema.to_string();
        assert!(!schema.contains("1000000") && !schema.contains("max_"));
        println!("{}: {schema}", spec.name);
    }

    // Filters fail on names the bundle does not have.
    let err = register_filesystem_tools(
        &ToolRegistry::new(),
        FilesystemOptions { include: Some(vec!["cat".into()]), ..Default::default() },
    )
    .unwrap_err();
    println!("{err}");
}
