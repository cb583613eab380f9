//! Serving a registry over MCP: the filesystem bundle under a temporary root, served on an
//! in-process pipe (`McpTransport::io`), spoken to in raw JSON-RPC lines as any MCP client
//! would: the handshake, `tools/list`, a call that works, a DENY and a schema error, both
//! as results with `isError: true`. With `McpTransport::stdio()` the same server is what a
//! desktop host starts (`harnessx mcp serve` does exactly that).
//!
//! `cargo run --example mcp_serve --features mcp`

use harnessx::builtin::fs::{FilesystemOptions, register_filesystem_tools};
use harnessx::mcp::{McpTransport, serve_mcp};
use harnessx::{PermissionLevel, PermissionManager, ToolRegistry};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::main]
async fn main() {
    let root = std::env::temp_dir().join(format!("hx-example-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "hello from the server\n").unwrap();

    let registry = ToolRegistry::new();
    let options = FilesystemOptions { base_path: Some(root.clone()), ..FilesystemOptions::default() };
    register_filesystem_tools(&registry, options).unwrap();
    let permissions =
        PermissionManager::new(PermissionLevel::Allow).with_override("delete", PermissionLevel::Deny);

    // The server on one end of a pipe, us on the other.
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_end);
    let server = serve_mcp(registry, permissions, McpTransport::io(read, write)).await.unwrap();
    let (from_server, mut to_server) = tokio::io::split(client);
    let mut lines = BufReader::new(from_server).lines();

    let mut id = 0;
    let mut request = async |method: &str, params: Value| -> Value {
        id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        to_server.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        let line = lines.next_line().await.unwrap().expect("an answer");
        serde_json::from_str::<Value>(&line).unwrap()["result"].clone()
    };

    let init = request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "example", "version": "0"}}),
    )
    .await;
    println!("server: {} {}", init["serverInfo"]["name"], init["protocolVersion"]);
    // (A real client sends `notifications/initialized` here; rmcp does not wait for it.)

    let tools = request("tools/list", json!({})).await;
    for tool in tools["tools"].as_array().unwrap() {
        println!("tool {:<15} {}", tool["name"].as_str().unwrap(), tool["annotations"]);
    }

    for (name, arguments) in [
        ("read_file", json!({"path": "notes.txt"})),
        ("delete", json!({"path": "notes.txt"})),
        ("read_file", json!({"path": 5})),
    ] {
        let result = request("tools/call", json!({"name": name, "arguments": arguments})).await;
        println!("{name}: isError={} {}", result["isError"], result["content"][0]["text"]);
    }

    server.stop();
    server.wait().await.unwrap();
    std::fs::remove_dir_all(&root).unwrap();
}
