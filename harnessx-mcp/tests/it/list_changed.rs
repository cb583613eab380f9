//! A server's `notifications/tools/list_changed` brings the registry in step: tools gone
//! are removed, new ones registered, changed ones replaced. The server is a small script
//! on the official TypeScript SDK (from server-everything's npm install).

use harnessx_core::{ToolCall, ToolRegistry};
use harnessx_mcp::{McpOptions, McpServer, register_mcp};
use harnessx_test_support::npm::ensure_npm_package;

/// `node tests/fixtures/changing_server.mjs`, with the SDK's folder. `None` when npm is missing.
fn changing() -> Option<McpServer> {
    let prefix = ensure_npm_package("@modelcontextprotocol/server-everything", "2026.8.31")?;
    let sdk = prefix.join("node_modules/@modelcontextprotocol/sdk");
    assert!(sdk.join("dist/esm/server/index.js").is_file(), "the SDK is at {}", sdk.display());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/changing_server.mjs");
    Some(McpServer::stdio("node", [script], [("HX_MCP_SDK", sdk.display().to_string())]))
}

fn call(name: &str) -> ToolCall {
    ToolCall::new("c1", name, "{}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_applied_to_the_registry() {
    let Some(server) = tokio::task::spawn_blocking(changing).await.unwrap() else { return };
    let registry = ToolRegistry::new();
    let options = McpOptions { prefix: Some("ch_".into()), ..McpOptions::default() };
    let connection = register_mcp(&registry, server, options).await.unwrap();
    assert_eq!(connection.tool_names(), ["ch_old", "ch_swap"]);
    let revision = registry.revision();

    let r = registry.execute(&call("ch_swap"), None).await;
    assert_eq!(r.content, "swapped", "{r:?}");

    // Applied before the call's result came back: the next turn sees the new set.
    assert!(!registry.contains("ch_old") && registry.contains("ch_new"), "{:?}", registry.tool_names());
    let swap = registry.get_tool("ch_swap").unwrap();
    assert_eq!(swap.description, "Changed the tool list.");
    assert_ne!(registry.revision(), revision, "an agent sees the change between turns");
    let mut names = connection.tool_names();
    names.sort();
    assert_eq!(names, ["ch_new", "ch_swap"]);

    let r = registry.execute(&call("ch_new"), None).await;
    assert_eq!(r.content, "called new", "{r:?}");
    let r = registry.execute(&call("ch_old"), None).await;
    assert!(r.is_error, "gone: {r:?}");
    connection.close().await;
}
