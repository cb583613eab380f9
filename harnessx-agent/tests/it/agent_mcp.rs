//! An agent with an MCP server (`AgentBuilder::mcp` and `connect`): the server's tools are
//! offered to the model, a `tools/list_changed` announced during a call is in the next
//! request, and `close()` stops the server's process.

use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, AgentError};
use harnessx_core::ToolCall;
use harnessx_mcp::{McpOptions, McpServer};
use harnessx_test_support::npm::ensure_npm_package;

/// A server whose `swap` tool replaces `old` with `new` (harnessx-mcp's test fixture, on
/// the official TypeScript SDK). `None` when npm is missing.
fn changing() -> Option<McpServer> {
    let prefix = ensure_npm_package("@modelcontextprotocol/server-everything", "2026.8.31")?;
    let sdk = prefix.join("node_modules/@modelcontextprotocol/sdk");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../harnessx-mcp/tests/fixtures/changing_server.mjs");
    Some(McpServer::stdio("node", [script], [("HX_MCP_SDK", sdk.display().to_string())]))
}

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_uses_an_mcp_server_s_tools_and_sees_its_changes_from_the_next_turn() {
    let Some(server) = tokio::task::spawn_blocking(changing).await.unwrap() else { return };
    let offered: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let seen = offered.clone();
    let model = FunctionModel::new(move |request| {
        let names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let mut offered = seen.lock().unwrap();
        offered.push(names);
        Ok(match offered.len() {
            1 => ModelResponse::tool_calls(vec![ToolCall::new("c1", "mcp_swap", "{}")]),
            2 => ModelResponse::tool_calls(vec![ToolCall::new("c2", "mcp_new", "{}")]),
            _ => match request.messages.last() {
                Some(Message::Tool { content, .. }) => ModelResponse::text(format!("done: {content}")),
                other => panic!("expected a tool result, got {other:?}"),
            },
        })
    });
    let options = McpOptions { prefix: Some("mcp_".into()), ..McpOptions::default() };
    let config = AgentConfig { planning: false, ..AgentConfig::default() };
    let builder = Agent::builder().model(model).config(config).mcp_with(server, options);
    let agent = builder.connect().await.unwrap();
    assert_eq!(agent.tools().tool_names(), ["mcp_old", "mcp_swap"]);
    assert_eq!(agent.mcp_servers().len(), 1);

    let result = agent.run("Swap, then use the new tool.").await.unwrap();
    assert_eq!(result.output, "done: called new");
    let offered = offered.lock().unwrap().clone();
    assert_eq!(offered[0], ["mcp_old", "mcp_swap"]);
    // The change announced during turn 1's call is in turn 2's request.
    assert!(
        offered[1].contains(&"mcp_new".to_owned()) && !offered[1].contains(&"mcp_old".to_owned()),
        "{offered:?}"
    );

    // close() stops the server: no node process runs the fixture any more.
    let running = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("changing_server.mjs"))
                    && std::fs::read_to_string(format!("/proc/{pid}/status"))
                        .is_ok_and(|s| s.contains(&format!("PPid:\t{}\n", std::process::id())))
            })
            .collect()
    };
    let before = running();
    assert_eq!(before.len(), 1, "one server process: {before:?}");
    agent.close().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(&before[0]) {
        assert!(std::time::Instant::now() < deadline, "the server outlived close()");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(agent.mcp_servers().is_empty());
    assert_eq!(agent.run("again").await.unwrap_err(), AgentError::Closed);
}

#[tokio::test]
async fn build_with_an_mcp_server_says_to_connect_and_a_bad_server_fails_connect() {
    let server =
        McpServer::stdio("/nonexistent/server", Vec::<String>::new(), Vec::<(String, String)>::new());
    let err = Agent::builder().mcp(server.clone()).build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP servers connect asynchronously: build the agent with `.connect().await` instead of `.build()`"
    );
    let err = Agent::builder().mcp(server).connect().await.unwrap_err();
    assert!(matches!(err, AgentError::Mcp(_)), "{err:?}");
    assert!(err.to_string().starts_with("could not start the MCP server `/nonexistent/server`: "), "{err}");
}

/// Answers its first request with `first`, every later one with `then` (a real adapter
/// against a loopback server): the model calls the MCP tool without a canned reply in
/// each provider's shape, and the request that carries the result is the adapter's.
struct FirstThen {
    first: FunctionModel,
    then: Box<dyn harnessx_agent::model::Model>,
    asked: std::sync::atomic::AtomicBool,
}

impl harnessx_agent::model::Model for FirstThen {
    fn name(&self) -> String {
        self.then.name()
    }
    fn stream<'a>(
        &'a self,
        request: &'a harnessx_agent::model::ModelRequest,
    ) -> futures_util::stream::BoxStream<
        'a,
        Result<harnessx_agent::model::ModelEvent, harnessx_agent::model::ModelError>,
    > {
        match self.asked.swap(true, std::sync::atomic::Ordering::SeqCst) {
            false => self.first.stream(request),
            true => self.then.stream(request),
        }
    }
}

// An MCP server's image (server-everything's `get-tiny-image`, from the official
// reference servers) reaches each provider in that provider's shape, streamed and not:
// the bytes in the body are the bytes the server sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_image_reaches_every_provider_in_its_shape() {
    use crate::models_content::{APIS, model, reply, result_image};
    use harnessx_test_support::npm::installed_file;

    let Some(prefix) = tokio::task::spawn_blocking(|| {
        ensure_npm_package("@modelcontextprotocol/server-everything", "2026.8.31")
    })
    .await
    .unwrap() else {
        return;
    };
    let script = installed_file(&prefix, "@modelcontextprotocol/server-everything/dist/index.js").unwrap();
    for api in APIS {
        for stream in [false, true] {
            // (Two of the replies `reply` gives are tool calls: an answer in their place here.)
            let answer = match (api, stream) {
                (crate::models_content::Api::Responses, true) => crate::common::Reply::sse(
                    crate::common::fixture("openai_responses/reasoning_calculator_turn3.derived.sse"),
                    Some(64),
                ),
                (crate::models_content::Api::Anthropic, false) => crate::common::Reply::json(
                    200,
                    serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "text", "text": "A tiny image."}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": 10, "output_tokens": 3}})
                    .to_string(),
                ),
                _ => reply(api, stream),
            };
            let server = crate::common::Server::start(vec![answer]);
            let first = FunctionModel::new(|_| {
                Ok(ModelResponse::tool_calls(vec![ToolCall::new("call_1", "mcp_get-tiny-image", "{}")]))
            });
            let model = FirstThen { first, then: model(api, &server), asked: Default::default() };
            let everything = McpServer::stdio(
                "node",
                [script.display().to_string(), "stdio".into()],
                Vec::<(String, String)>::new(),
            );
            let options = McpOptions { prefix: Some("mcp_".into()), ..McpOptions::default() };
            let config = AgentConfig { planning: false, stream, ..AgentConfig::default() };
            let agent = Agent::builder()
                .model(model)
                .config(config)
                .mcp_with(everything, options)
                .connect()
                .await
                .unwrap();
            let result = agent
                .run("Show me the tiny image.")
                .await
                .unwrap_or_else(|e| panic!("{api:?} stream={stream}: {e}"));
            let sent: Vec<u8> = result
                .messages
                .iter()
                .find_map(|m| match m {
                    Message::Tool { parts, .. } => {
                        parts.first().and_then(|p| p.blob()).and_then(|b| b.as_bytes()).map(|b| b.to_vec())
                    }
                    _ => None,
                })
                .expect("the MCP result's image");
            assert!(sent.starts_with(b"\x89PNG"), "{api:?}: not a PNG from the server");
            let body = &server.requests()[0].body;
            assert_eq!(result_image(api, body, "call_1"), sent, "{api:?} stream={stream}");
            agent.close().await;
        }
    }
}
