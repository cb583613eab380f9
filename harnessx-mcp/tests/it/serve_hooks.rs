//! Hooks on a served registry (`ToolRegistry::set_hooks`), driven by rmcp's client over a
//! byte stream: a refusal reaches the client as an error result with the hook's message,
//! a rewrite runs the call with the hook's arguments (and never past a deny rule), a post
//! hook's replacement is the result the client reads, and a hook that fails refuses.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use harnessx_builtin::fs::{FilesystemOptions, register_filesystem_tools};
use harnessx_core::hooks::{
    HookError, PostDecision, PostToolUse, PreDecision, PreToolUse, ToolHook, ToolHooks,
};
use harnessx_core::{PermissionLevel, PermissionManager, ToolOutput, ToolRegistry};
use harnessx_mcp::{McpTransport, serve_mcp};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, HookError>> + Send + 'a>>;

/// Refuses writes, sends reads of `alias.txt` to `notes.txt`, redacts `hello`, and fails
/// on `glob`.
struct Policy;

impl ToolHook for Policy {
    fn name(&self) -> &str {
        "policy"
    }

    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> Answer<'a, PreDecision> {
        let decided = match (call.tool, call.arguments["path"].as_str()) {
            ("write_file", _) => Ok(PreDecision::Deny { message: "no writes through this server".into() }),
            ("read_file", Some("alias.txt")) => {
                Ok(PreDecision::Rewrite { arguments: json!({"path": "notes.txt"}) })
            }
            ("read_file", Some("sneaky.txt")) => {
                Ok(PreDecision::Rewrite { arguments: json!({"path": "private.txt"}) })
            }
            ("glob", _) => Err(HookError("the policy file is missing".into())),
            _ => Ok(PreDecision::Continue),
        };
        Box::pin(std::future::ready(decided))
    }

    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> Answer<'a, PostDecision> {
        let decided = match call.content.contains("hello") {
            true => PostDecision::Replace {
                result: ToolOutput::text(call.content.replace("hello", "[redacted]")),
            },
            false => PostDecision::Keep,
        };
        Box::pin(std::future::ready(Ok(decided)))
    }
}

fn text(result: &CallToolResult) -> (bool, String) {
    let text = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect::<Vec<_>>();
    (result.is_error == Some(true), text.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_registrys_hooks_refuse_rewrite_and_redact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello world\n").unwrap();
    std::fs::write(dir.path().join("private.txt"), "keys\n").unwrap();
    let registry = ToolRegistry::new();
    let fs = FilesystemOptions { base_path: Some(dir.path().to_owned()), ..FilesystemOptions::default() };
    register_filesystem_tools(&registry, fs).unwrap();
    registry.set_hooks(ToolHooks::new().with(Policy));
    let manager = PermissionManager::new(PermissionLevel::Allow);
    manager.add_rule(PermissionLevel::Deny, "read_file(path=private.txt)").unwrap();

    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let server = serve_mcp(registry, manager, McpTransport::io(read, write)).await.unwrap();
    let client = ().serve(ours).await.unwrap();
    let call = |name: &str, args: Value| {
        let params =
            CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone());
        let client = &client;
        async move { text(&client.call_tool(params).await.expect("a result, not a protocol error")) }
    };

    let refused = call("write_file", json!({"path": "x.txt", "content": "x"})).await;
    assert_eq!(refused, (true, "no writes through this server".to_owned()));
    assert!(!dir.path().join("x.txt").exists(), "a refused write wrote");
    let moved = call("read_file", json!({"path": "alias.txt"})).await;
    assert_eq!(moved, (false, "     1\t[redacted] world\n".to_owned()), "rewritten, then redacted");
    let denied = call("read_file", json!({"path": "sneaky.txt"})).await;
    assert_eq!(denied, (true, "Permission denied".to_owned()), "a rewrite is checked against the rules");
    let failed = call("glob", json!({"pattern": "*"})).await;
    assert_eq!(failed, (true, "hook policy failed: the policy file is missing".to_owned()));

    client.cancel().await.unwrap();
    server.stop();
    tokio::time::timeout(Duration::from_secs(10), server.wait()).await.expect("stopped in time").unwrap();
}
