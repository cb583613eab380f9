//! Logins from the client's side, without a browser: a server over HTTP that refuses a
//! call with 401 (its grant expired, and no refresh is possible) fails that call with one
//! line saying which command logs in again; the registry and the other calls go on. The
//! login flow itself is tested through the binary against the TypeScript SDK's OAuth
//! example server (`harnessx-cli/tests/it/cli_mcp_auth.rs`).

use harnessx_core::{ToolCall, ToolRegistry};
use harnessx_mcp::auth::TokenStore;
use harnessx_mcp::{McpOptions, McpServer, register_mcp};
use harnessx_test_support::server::{Reply, Server};
use serde_json::json;

/// A streamable-HTTP MCP server answering in plain JSON: one tool, `echo`; a call of
/// `locked` is answered 401 with a bearer challenge.
fn server() -> Server {
    Server::respond(|request| {
        let body = &request.body;
        let id = body["id"].clone();
        let result = match body["method"].as_str().unwrap_or_default() {
            "initialize" => {
                json!({"protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "locked", "version": "1"}})
            }
            "tools/list" => json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": "locked", "inputSchema": {"type": "object"}}]}),
            "tools/call" if body["params"]["name"] == "locked" => {
                return Reply::json(401, r#"{"error": "invalid_token"}"#).header(
                    "www-authenticate",
                    r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource""#,
                );
            }
            "tools/call" => json!({"content": [{"type": "text", "text": "echoed"}]}),
            _ => return Reply::json(202, ""),
        };
        Reply::json(200, json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_with_401_says_to_log_in_again() {
    let http = server();
    let url = format!("{}/mcp", http.url);
    let store = TokenStore::at(tempfile::tempdir().unwrap().path().join("tokens"));
    let registry = ToolRegistry::new();
    let server = McpServer::http(url.clone(), Vec::<(String, String)>::new()).logged_in(store);
    let _connection = register_mcp(&registry, server, McpOptions::default()).await.unwrap();
    let refused = registry.execute(&ToolCall::new("c1", "locked", "{}"), None).await;
    assert!(refused.is_error);
    assert_eq!(
        refused.content,
        format!(
            "the MCP server `{url}` needs a login again (it refused the token, and it could not be refreshed): run `harnessx mcp login {url}`"
        )
    );
    let echoed = registry.execute(&ToolCall::new("c2", "echo", "{}"), None).await;
    assert_eq!((echoed.is_error, echoed.content.as_str()), (false, "echoed"));
}
