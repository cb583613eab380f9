//! The `memory` bundle: the model saves memories and finds them again by their words, in
//! a SQLite file that outlives the process, one namespace per user.
//!
//! `cargo run --example builtin_memory`

use std::sync::Arc;

use harnessx::builtin::memory::{MemoryOptions, SqliteStore, register_memory_tools};
use harnessx::{MemoryStore, ToolCall, ToolRegistry};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memories.db");

    // By name, as a configuration file would say it: a SQLite file and a namespace.
    let registry = ToolRegistry::new();
    let names = registry.load_builtin("memory", json!({"path": path, "namespace": "alice"})).unwrap();
    println!("loaded: {}", names.join(", "));

    // What the model would call.
    let calls = [
        (
            "save_memory",
            json!({"text": "Alice's daughter Emma has a severe peanut allergy.", "tags": ["family", "health"]}),
        ),
        ("save_memory", json!({"text": "Alice prefers flights with aisle seats.", "key": "seat preference"})),
        (
            "save_memory",
            json!({"text": "Alice books aisle seats, never window seats.", "key": "seat preference"}),
        ),
        ("search_memories", json!({"query": "which seat should I book on her flight?"})),
        ("search_memories", json!({"query": "\"AND OR (peanut*"})),
        ("list_memories", json!({"limit": 5})),
        ("read_memory", json!({"id": 1})),
        ("delete_memory", json!({"id": "99"})),
    ];
    for (n, (tool, args)) in calls.into_iter().enumerate() {
        let result = registry.execute(&ToolCall::new(format!("c{n}"), tool, args.to_string()), None).await;
        let mark = if result.is_error { "error" } else { "ok" };
        println!("\n{tool} {args} [{mark}]\n{}", result.content);
    }

    // Another process, or this one after a restart: the same file, and each user only
    // sees their own namespace.
    let store: Arc<dyn MemoryStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let bob = ToolRegistry::new();
    register_memory_tools(
        &bob,
        MemoryOptions { store: Some(store.clone()), namespace: "bob".into(), ..Default::default() },
    )
    .unwrap();
    let result = bob.execute(&ToolCall::new("b1", "search_memories", r#"{"query": "peanut"}"#), None).await;
    println!("\nbob searches for peanut: {}", result.content);
    println!("alice has {} memories in the file", store.list("alice", 100).unwrap().len());
}
