//! An MCP server's annotations are its own claims: `register_mcp` acts on the ones that
//! relax something (read-only: concurrent, not asked; idempotent: re-run after a crash,
//! retried) only for a server marked trusted (`McpOptions::trust_hints`), and on the ones
//! that ask for care always. The server is our own `serve_mcp` over streamable HTTP, in
//! process, publishing a registry whose tools claim what the test needs: nothing to
//! install.

use harnessx_core::{
    PermissionManager, ReplayPolicy, ToolAnnotations, ToolCall, ToolDefinition, ToolHandler, ToolRegistry,
};
use harnessx_mcp::{McpOptions, McpServer, McpServing, McpTransport, register_mcp, serve_mcp};
use serde_json::{Value, json};

/// Claims it changes nothing and may be repeated: every relaxing hint.
const CLAIMS_READ_ONLY: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);
/// Claims it deletes, and that doing so twice is harmless.
const CLAIMS_DESTRUCTIVE: ToolAnnotations =
    ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(true);

fn tool(name: &str, annotations: ToolAnnotations) -> ToolDefinition {
    let handler = ToolHandler::typed_async(|_: Value| async { Ok::<_, String>("done") });
    ToolDefinition::new(name, format!("The {name} tool."), json!({"type": "object"}), handler)
        .with_annotations(annotations)
}

/// A server whose tools `lookup`, `wipe` and `plain` claim the hints above (`plain`
/// none), over streamable HTTP on a free port.
async fn claiming_server() -> (McpServing, McpServer) {
    let registry = ToolRegistry::new();
    registry.register_tool(tool("lookup", CLAIMS_READ_ONLY)).unwrap();
    registry.register_tool(tool("wipe", CLAIMS_DESTRUCTIVE)).unwrap();
    registry.register_tool(tool("plain", ToolAnnotations::new())).unwrap();
    serve(registry).await
}

async fn serve(registry: ToolRegistry) -> (McpServing, McpServer) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let serving =
        serve_mcp(registry, PermissionManager::default(), McpTransport::http(listener)).await.unwrap();
    let server = McpServer::http(serving.url().unwrap(), Vec::<(String, String)>::new());
    (serving, server)
}

/// Regression: `readOnlyHint` and `idempotentHint` made an untrusted server's tool
/// concurrent, not asked about, re-run after a crash and retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_server_s_relaxing_hints_are_not_acted_on() {
    let (serving, server) = claiming_server().await;
    let registry = ToolRegistry::new();
    let connection = register_mcp(&registry, server, McpOptions::default()).await.unwrap();

    let lookup = registry.get_tool("lookup").unwrap();
    assert_eq!(lookup.annotations, ToolAnnotations::new(), "no claim that relaxes is kept");
    assert!(lookup.annotations.may_modify(), "so `harnessx run` asks before it");
    assert!(!lookup.concurrent, "it runs alone");
    assert_eq!(lookup.replay_policy, ReplayPolicy::Manual, "a crash mid-call stops for needs_input");
    assert!(!lookup.replay_policy.allows_retry(), "never retried");

    // The careful claims stand; `idempotentHint: true` does not.
    let wipe = registry.get_tool("wipe").unwrap();
    assert_eq!(wipe.annotations, ToolAnnotations::new().read_only(false).destructive(true).open_world(true));
    assert!(wipe.annotations.may_modify());
    assert!(!wipe.concurrent);
    assert_eq!(wipe.replay_policy, ReplayPolicy::Manual);

    let plain = registry.get_tool("plain").unwrap();
    assert_eq!(plain.annotations, ToolAnnotations::new());
    assert!(!plain.concurrent);
    assert_eq!(plain.replay_policy, ReplayPolicy::Manual);

    // The tools work all the same.
    let r = registry.execute(&ToolCall::new("c1", "lookup", "{}"), None).await;
    assert_eq!((r.is_error, r.content.as_str()), (false, "done"), "{r:?}");

    // Served again (a proxy), the registry publishes what it acts on: the proxy does not
    // vouch for a server it does not trust, so even a client that trusts the proxy gets
    // no read-only claim for lookup.
    let (proxy, proxied) = serve(registry.clone()).await;
    let downstream = ToolRegistry::new();
    let trusting = McpOptions { trust_hints: true, ..McpOptions::default() };
    let again = register_mcp(&downstream, proxied, trusting).await.unwrap();
    let lookup = downstream.get_tool("lookup").unwrap();
    assert_eq!(lookup.annotations, ToolAnnotations::new());
    assert_eq!(downstream.get_tool("wipe").unwrap().annotations.destructive, Some(true));
    again.close().await;
    proxy.stop();
    connection.close().await;
    serving.stop();
}

/// A trusted server's hints are acted on, as before the trust rule; `destructiveHint`
/// asks either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_server_s_hints_are_acted_on() {
    let (serving, server) = claiming_server().await;
    let registry = ToolRegistry::new();
    let options = McpOptions { trust_hints: true, ..McpOptions::default() };
    let connection = register_mcp(&registry, server, options).await.unwrap();

    let lookup = registry.get_tool("lookup").unwrap();
    assert_eq!(lookup.annotations, CLAIMS_READ_ONLY);
    assert!(!lookup.annotations.may_modify(), "`harnessx run` does not ask");
    assert!(lookup.concurrent);
    assert_eq!(lookup.replay_policy, ReplayPolicy::Idempotent);
    assert!(lookup.replay_policy.allows_retry());

    let wipe = registry.get_tool("wipe").unwrap();
    assert_eq!(wipe.annotations, CLAIMS_DESTRUCTIVE);
    assert!(wipe.annotations.may_modify(), "destructive: asked, trusted or not");
    assert!(!wipe.concurrent);
    assert_eq!(wipe.replay_policy, ReplayPolicy::Idempotent);

    // No claim, nothing relaxed: MCP's default for a missing readOnlyHint is "may change".
    let plain = registry.get_tool("plain").unwrap();
    assert_eq!(plain.annotations, ToolAnnotations::new());
    assert!(!plain.concurrent);
    assert_eq!(plain.replay_policy, ReplayPolicy::Manual);
    connection.close().await;
    serving.stop();
}
