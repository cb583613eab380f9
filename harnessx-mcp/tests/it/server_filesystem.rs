//! `@modelcontextprotocol/server-filesystem` (from the npm registry, installed by the test)
//! over a temporary folder: its tools read and write there through our pipeline, and the
//! permission manager decides first, so a DENY holds whatever the server would allow.

use harnessx_core::{PermissionLevel, PermissionManager, ReplayPolicy, ToolCall, ToolRegistry};
use harnessx_mcp::{McpOptions, McpServer, register_mcp};
use harnessx_test_support::npm::{ensure_npm_package, installed_file};
use serde_json::json;

/// `node dist/index.js DIR`. `None` when npm is missing.
fn filesystem(dir: &std::path::Path) -> Option<McpServer> {
    let prefix = ensure_npm_package("@modelcontextprotocol/server-filesystem", "2026.8.31")?;
    let script = installed_file(&prefix, "@modelcontextprotocol/server-filesystem/dist/index.js")
        .expect("the package has dist/index.js");
    Some(McpServer::stdio(
        "node",
        [script.display().to_string(), dir.display().to_string()],
        Vec::<(String, String)>::new(),
    ))
}

fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new("c1", name, args.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_reads_and_writes_under_its_folder_and_a_deny_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "first line\n").unwrap();
    let Some(server) = ({
        let root = root.clone();
        tokio::task::spawn_blocking(move || filesystem(&root)).await.unwrap()
    }) else {
        return;
    };
    let registry = ToolRegistry::new();
    // The reference server at a pinned version: trusted to describe its tools.
    let options = McpOptions { prefix: Some("fs_".into()), trust_hints: true, ..McpOptions::default() };
    let connection = register_mcp(&registry, server, options).await.unwrap();

    // Annotations mapped: reads are concurrent, writes destructive, write_file idempotent.
    let read = registry.get_tool("fs_read_text_file").unwrap();
    assert!(read.concurrent && read.annotations.read_only == Some(true));
    let write = registry.get_tool("fs_write_file").unwrap();
    assert_eq!(write.annotations.destructive, Some(true));
    assert!(write.annotations.may_modify());
    assert_eq!(write.replay_policy, ReplayPolicy::Idempotent);
    assert_eq!(registry.get_tool("fs_move_file").unwrap().replay_policy, ReplayPolicy::Manual);

    let allow = PermissionManager::new(PermissionLevel::Allow);
    let path = |name: &str| root.join(name).display().to_string();
    let r =
        registry.execute(&call("fs_read_text_file", json!({"path": path("notes.txt")})), Some(&allow)).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.content, "first line\n");
    assert_eq!(r.structured_content, Some(json!({"content": "first line\n"})));

    let r = registry
        .execute(&call("fs_write_file", json!({"path": path("new.txt"), "content": "written"})), Some(&allow))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(std::fs::read_to_string(root.join("new.txt")).unwrap(), "written");

    // The server's own containment: an error result with its text.
    let r =
        registry.execute(&call("fs_read_text_file", json!({"path": "/etc/hostname"})), Some(&allow)).await;
    assert!(r.is_error && r.content.contains("outside allowed directories"), "{r:?}");

    // Our schema validation, before the server sees the call.
    let r = registry.execute(&call("fs_write_file", json!({"path": path("x.txt")})), Some(&allow)).await;
    assert!(r.is_error && r.content.contains("content"), "names the missing field: {r:?}");
    assert!(!root.join("x.txt").exists());

    // A DENY holds: the server is never asked, nothing is written.
    let deny =
        PermissionManager::new(PermissionLevel::Allow).with_override("fs_write_file", PermissionLevel::Deny);
    let r = registry
        .execute(&call("fs_write_file", json!({"path": path("denied.txt"), "content": "no"})), Some(&deny))
        .await;
    assert!(r.is_error && r.content == "Permission denied", "{r:?}");
    assert!(!root.join("denied.txt").exists());
    // So does a default of DENY for tools without their own level.
    let closed = PermissionManager::new(PermissionLevel::Deny);
    let r =
        registry.execute(&call("fs_read_text_file", json!({"path": path("notes.txt")})), Some(&closed)).await;
    assert!(r.is_error && r.content == "Permission denied", "{r:?}");

    connection.close().await;
}
