//! `serve_mcp` driven by rmcp's client, in process, over byte streams (`McpTransport::io`
//! on a duplex pipe) and over streamable HTTP: the same cases the CLI tests run with the
//! official Python client, with nothing to install, plus what only a library test can
//! see (a cancelled call's handler dropped, the application's approval callback first).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harnessx_builtin::fs::{FilesystemOptions, register_filesystem_tools};
use harnessx_core::{
    ApprovalDecision, Part, PermissionLevel, PermissionManager, ToolError, ToolHandler, ToolOptions,
    ToolOutput, ToolRegistry,
};
use harnessx_mcp::{McpServing, McpTransport, serve_mcp};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A client that answers elicitations from a script (and records their messages), or,
/// with `None`, declares no elicitation support.
#[derive(Clone, Default)]
struct Client {
    answers: Option<Arc<Mutex<VecDeque<&'static str>>>>,
    asked: Arc<Mutex<Vec<String>>>,
    forms: Arc<Mutex<Vec<Value>>>,
}

impl Client {
    fn answering(answers: &[&'static str]) -> Self {
        Self { answers: Some(Arc::new(Mutex::new(answers.iter().copied().collect()))), ..Self::default() }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }

    /// The requested schemas, as JSON.
    fn forms(&self) -> Vec<Value> {
        self.forms.lock().unwrap().clone()
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.answers {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("test", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().unwrap().push(message);
        let schema = serde_json::to_value(&requested_schema).unwrap();
        self.forms.lock().unwrap().push(schema.clone());
        let answer = self.answers.as_ref().and_then(|a| a.lock().unwrap().pop_front()).unwrap_or("decline");
        let accept = |content: Value| ElicitResult::new(ElicitationAction::Accept).with_content(content);
        Ok(match answer {
            "accept" => accept(json!({})),
            "accept empty" => ElicitResult::new(ElicitationAction::Accept),
            "fill" => accept(filled(&schema)),
            "session" => accept(json!({"decision": "approve_for_session"})),
            "cancel" => ElicitResult::new(ElicitationAction::Cancel),
            "edit" => accept(json!({"arguments": r#"{"path": "edited.txt", "content": "e"}"#})),
            "edit badly" => accept(json!({"arguments": "{"})),
            "edit and refuse" => accept(json!({
                "decision": "refuse",
                "reason": "no",
                "arguments": r#"{"path": "edited.txt", "content": "e"}"#,
            })),
            "refuse" => accept(json!({"decision": "refuse", "reason": "write to notes.txt instead"})),
            "refuse plainly" => accept(json!({"decision": "refuse"})),
            "approve with a reason" => accept(json!({"decision": "approve", "reason": "looks fine"})),
            "unknown" => accept(json!({"decision": "maybe"})),
            "not a string" => accept(json!({"decision": true})),
            "not an object" => accept(json!("yes")),
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

/// What a client that ticks and fills in everything sends: each boolean `true`, each
/// choice its default (else its first option), each text its default (else some text).
fn filled(schema: &Value) -> Value {
    let properties = schema["properties"].as_object().expect("a form with properties");
    let fill = |field: &Value| match field["type"].as_str() {
        Some("boolean") => json!(true),
        Some("string") if !field["default"].is_null() => field["default"].clone(),
        Some("string") if field["oneOf"].is_array() => field["oneOf"][0]["const"].clone(),
        Some("string") if field["enum"].is_array() => field["enum"][0].clone(),
        Some("string") => json!("filled in by the client"),
        other => panic!("a field of type {other:?}: {field}"),
    };
    properties
        .iter()
        .map(|(name, field)| (name.clone(), fill(field)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

type Connected = RunningService<RoleClient, Client>;

/// Counts handlers of `hang` dropped before they finished.
#[derive(Default)]
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The filesystem bundle under `base`, and test tools: `echo` (read-only, structured),
/// `fail` (an error), `slow` (times out), `hang` (counts its drops).
fn registry(base: &Path, hung: Arc<AtomicUsize>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let fs = FilesystemOptions { base_path: Some(base.to_owned()), ..FilesystemOptions::default() };
    register_filesystem_tools(&registry, fs).unwrap();
    let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let echo =
        ToolHandler::from_async(|args: Value, _| async move { Ok(json!({"echo": args["text"]}).into()) });
    let reads = ToolOptions::new().read_only(true).idempotent(true).open_world(false);
    registry.register_with_schema("echo", "Echo text back.", text.clone(), echo, reads).unwrap();
    let fail = ToolHandler::from_async(|_, _| async { Err(ToolError::new("the disk is full")) });
    registry
        .register_with_schema("fail", "Always fails.", json!({"type": "object"}), fail, ToolOptions::new())
        .unwrap();
    let slow = ToolHandler::from_async(|_, _| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok("late".into())
    });
    let quick = ToolOptions::new().timeout_seconds(0.2);
    registry.register_with_schema("slow", "Too slow.", json!({"type": "object"}), slow, quick).unwrap();
    let hang = ToolHandler::from_async(move |_, _| {
        let guard = Dropped(hung.clone());
        async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(guard);
            Ok("woke".into())
        }
    });
    registry
        .register_with_schema("hang", "Hangs.", json!({"type": "object"}), hang, ToolOptions::new())
        .unwrap();
    let shot = ToolHandler::from_async(|_, _| async {
        Ok(ToolOutput::text("a screenshot and its report")
            .with_part(Part::image("image/png", &b"\x89PNG\r\n\x1a\n"[..]))
            .with_part(Part::file("application/pdf", Some("report.pdf".into()), &b"%PDF-1.7"[..])))
    });
    registry
        .register_with_schema("shot", "Media.", json!({"type": "object"}), shot, ToolOptions::new())
        .unwrap();
    registry
}

enum Via {
    Io,
    Http,
}

/// Serves `registry` and connects `client` to it.
async fn connect(
    registry: ToolRegistry,
    manager: PermissionManager,
    via: Via,
    client: Client,
) -> (McpServing, Connected) {
    match via {
        Via::Io => {
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            let (read, write) = tokio::io::split(theirs);
            let server = serve_mcp(registry, manager, McpTransport::io(read, write)).await.unwrap();
            let client = client.serve(ours).await.unwrap();
            (server, client)
        }
        Via::Http => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let server = serve_mcp(registry, manager, McpTransport::http(listener)).await.unwrap();
            let url = server.url().unwrap();
            // reqwest is built without a crypto provider (plain http needs none, but the
            // client is built with TLS support all the same).
            harnessx_infra::tls::install_default_provider();
            let client = client.serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
            (server, client)
        }
    }
}

async fn call(client: &Connected, name: &str, args: Value) -> CallToolResult {
    let params =
        CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone());
    client.call_tool(params).await.unwrap_or_else(|e| panic!("{name}: a protocol error: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect::<Vec<_>>().join("\n")
}

fn ok(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(false), "expected success: {result:?}");
    text(result)
}

fn err(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "expected an error result: {result:?}");
    text(result)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("base")).unwrap();
    std::fs::write(dir.path().join("base/notes.txt"), "hello\n").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside\n").unwrap();
    dir
}

async fn lists_and_calls(via: Via) {
    let dir = workspace();
    let registry = registry(&dir.path().join("base"), Arc::default());
    let manager =
        PermissionManager::new(PermissionLevel::Allow).with_override("write_file", PermissionLevel::Deny);
    let (server, client) = connect(registry, manager, via, Client::default()).await;

    let tools = client.list_all_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    let hints = echo.annotations.as_ref().unwrap();
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
        (Some(true), None, Some(true), Some(false))
    );
    assert_eq!(echo.input_schema["required"], json!(["text"]));
    let write = tools.iter().find(|t| t.name == "write_file").unwrap();
    assert_eq!(write.annotations.as_ref().unwrap().destructive_hint, Some(true));

    let echoed = call(&client, "echo", json!({"text": "hi"})).await;
    assert_eq!(ok(&echoed), r#"{"echo":"hi"}"#);
    assert_eq!(echoed.structured_content, Some(json!({"echo": "hi"})));
    assert_eq!(ok(&call(&client, "read_file", json!({"path": "notes.txt"})).await), "     1\thello\n");
    assert_eq!(
        err(&call(&client, "write_file", json!({"path": "x.txt", "content": "x"})).await),
        "Permission denied"
    );
    assert_eq!(
        err(&call(&client, "echo", json!({})).await),
        r#"invalid arguments for echo: "text" is a required property"#
    );
    assert_eq!(
        err(&call(&client, "echo", json!({"text": 1})).await),
        r#"invalid arguments for echo: text: 1 is not of type "string""#
    );
    assert!(
        err(&call(&client, "read_file", json!({"path": "../secret.txt"})).await)
            .starts_with("refused: `../secret.txt` leads outside the root")
    );
    assert!(
        err(&call(&client, "ecko", json!({})).await)
            .starts_with(r#"Unknown tool "ecko". Did you mean: echo"#)
    );
    assert_eq!(err(&call(&client, "fail", json!({})).await), "the disk is full");
    // Media parts go out as MCP image and embedded-resource content, after the text.
    let shot = call(&client, "shot", json!({})).await;
    assert_eq!(ok(&shot), "a screenshot and its report");
    assert_eq!(
        serde_json::to_value(&shot.content[1..]).unwrap(),
        json!([
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "harnessx:part/1/report.pdf", "mimeType": "application/pdf", "blob": "JVBERi0xLjc="
            }},
        ])
    );
    assert_eq!(
        err(&call(&client, "slow", json!({})).await),
        "tool slow timed out after 0.2s and may have partly run; check its effects before calling it again"
    );
    client.cancel().await.unwrap();
    server.stop();
    tokio::time::timeout(Duration::from_secs(10), server.wait()).await.expect("stopped in time").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_lists_and_calls_over_io() {
    lists_and_calls(Via::Io).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_lists_and_calls_over_http() {
    lists_and_calls(Via::Http).await;
}

const CANNOT_ASK: &str = "Permission denied: write_file needs approval and this MCP client cannot ask its user (no elicitation support); allow it on the server (--allow write_file or --default-permission allow)";

async fn asks(via: Via) {
    let dir = workspace();
    let base = dir.path().join("base");
    let registry = registry(&base, Arc::default());
    let manager =
        PermissionManager::new(PermissionLevel::Ask).with_override("read_file", PermissionLevel::Allow);
    let client = Client::answering(&["decline", "cancel", "accept", "session"]);
    let (server, connected) = connect(registry.clone(), manager.clone(), via, client.clone()).await;
    let write = |path: &str| json!({"path": path, "content": path});
    assert_eq!(
        err(&call(&connected, "write_file", write("a.txt")).await),
        "Permission denied: the user declined to run write_file"
    );
    assert_eq!(
        err(&call(&connected, "write_file", write("a.txt")).await),
        "Permission denied: the user dismissed the request to run write_file"
    );
    ok(&call(&connected, "write_file", write("a.txt")).await);
    ok(&call(&connected, "write_file", write("b.txt")).await);
    ok(&call(&connected, "write_file", write("c.txt")).await);
    ok(&call(&connected, "read_file", json!({"path": "c.txt"})).await);
    let asked = client.asked();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked[0].starts_with("Allow the tool write_file to run with these arguments?"), "{}", asked[0]);
    assert!(asked[0].contains(r#""path": "a.txt""#), "{}", asked[0]);
    assert_eq!(std::fs::read_to_string(base.join("c.txt")).unwrap(), "c.txt");
    connected.cancel().await.unwrap();
    server.stop();

    // A client that cannot ask its user: refused, saying why and how to allow.
    let (server, connected) = connect(registry, manager, Via::Io, Client::default()).await;
    assert_eq!(err(&call(&connected, "write_file", write("d.txt")).await), CANNOT_ASK);
    assert!(!base.join("d.txt").exists());
    connected.cancel().await.unwrap();
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_goes_through_elicitation_over_io() {
    asks(Via::Io).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_goes_through_elicitation_over_http() {
    asks(Via::Http).await;
}

/// An approval callback the application gave the manager decides before the client's user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_own_approval_callback_comes_first() {
    let dir = workspace();
    let registry = registry(&dir.path().join("base"), Arc::default());
    let manager = PermissionManager::new(PermissionLevel::Ask)
        .with_approval_fn(|_| async { ApprovalDecision::Approve });
    let client = Client::answering(&["decline"]);
    let (server, connected) = connect(registry, manager, Via::Io, client.clone()).await;
    ok(&call(&connected, "write_file", json!({"path": "a.txt", "content": "x"})).await);
    assert!(client.asked().is_empty());
    connected.cancel().await.unwrap();
    server.stop();
}

/// The form edits the arguments (validated again, run with them, the result says so)
/// and refuses with a reason the model reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_form_edits_arguments_and_refuses_with_a_reason() {
    let dir = workspace();
    let base = dir.path().join("base");
    let registry = registry(&base, Arc::default());
    let manager = PermissionManager::new(PermissionLevel::Ask);
    let client = Client::answering(&["edit", "refuse", "edit badly", "edit and refuse"]);
    let (server, connected) = connect(registry, manager, Via::Io, client.clone()).await;
    let write = json!({"path": "a.txt", "content": "a"});
    let edited = call(&connected, "write_file", write.clone()).await;
    ok(&edited);
    let text = format!("{edited:?}");
    assert!(text.contains("The user changed this call's arguments"), "{text}");
    assert_eq!(std::fs::read_to_string(base.join("edited.txt")).unwrap(), "e");
    assert!(!base.join("a.txt").exists());
    assert_eq!(err(&call(&connected, "write_file", write.clone()).await), "write to notes.txt instead");
    let bad = err(&call(&connected, "write_file", write.clone()).await);
    assert!(bad.contains("not valid JSON"), "{bad}");
    // A refusal wins over edited arguments.
    std::fs::remove_file(base.join("edited.txt")).unwrap();
    assert_eq!(err(&call(&connected, "write_file", write).await), "no");
    assert!(!base.join("a.txt").exists() && !base.join("edited.txt").exists());
    connected.cancel().await.unwrap();
    server.stop();
}

// Regression: the form's `refuse` checkbox, ticked by a client that ticks every box,
// refused a call the client had accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepting_with_every_field_filled_in_approves() {
    let dir = workspace();
    let base = dir.path().join("base");
    let registry = registry(&base, Arc::default());
    let client = Client::answering(&["fill"]);
    let (server, connected) =
        connect(registry, PermissionManager::new(PermissionLevel::Ask), Via::Io, client.clone()).await;
    ok(&call(&connected, "write_file", json!({"path": "a.txt", "content": "a"})).await);
    assert_eq!(std::fs::read_to_string(base.join("a.txt")).unwrap(), "a");
    assert_eq!(client.asked().len(), 1);
    connected.cancel().await.unwrap();
    server.stop();
}

/// The choice is one titled single-select field (`oneOf` of `const`/`title`, as the
/// 2025-11-25 schema has it) whose default approves; no checkbox can refuse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_form_offers_one_choice_that_defaults_to_approve() {
    let dir = workspace();
    let registry = registry(&dir.path().join("base"), Arc::default());
    let client = Client::answering(&["accept"]);
    let (server, connected) =
        connect(registry, PermissionManager::new(PermissionLevel::Ask), Via::Io, client.clone()).await;
    ok(&call(&connected, "write_file", json!({"path": "a.txt", "content": "a"})).await);
    let form = &client.forms()[0];
    let decision = &form["properties"]["decision"];
    assert_eq!(decision["type"], "string", "{form}");
    assert_eq!(decision["default"], "approve", "{form}");
    let choices: Vec<&Value> = decision["oneOf"].as_array().unwrap().iter().map(|c| &c["const"]).collect();
    assert_eq!(choices, [&json!("approve"), &json!("approve_for_session"), &json!("refuse")], "{form}");
    assert!(decision["oneOf"].as_array().unwrap().iter().all(|c| c["title"].is_string()), "{form}");
    let properties = form["properties"].as_object().unwrap();
    assert!(properties.values().all(|p| p["type"] != "boolean"), "{form}");
    assert_eq!(properties["arguments"]["default"], r#"{"path":"a.txt","content":"a"}"#, "{form}");
    connected.cancel().await.unwrap();
    server.stop();
}

/// The decision, every way it can come back: no content approves, a reason outside a
/// refusal is ignored, a refusal without one says `Permission denied`, and a decision
/// that is not one of the three refuses, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_forms_decision_approves_refuses_or_fails_closed() {
    let dir = workspace();
    let base = dir.path().join("base");
    let registry = registry(&base, Arc::default());
    let answers = [
        "accept empty",
        "approve with a reason",
        "refuse plainly",
        "unknown",
        "not a string",
        "not an object",
    ];
    let client = Client::answering(&answers);
    let (server, connected) =
        connect(registry, PermissionManager::new(PermissionLevel::Ask), Via::Io, client.clone()).await;
    let write = |path: &str| json!({"path": path, "content": path});
    ok(&call(&connected, "write_file", write("a.txt")).await);
    ok(&call(&connected, "write_file", write("b.txt")).await);
    assert_eq!(err(&call(&connected, "write_file", write("c.txt")).await), "Permission denied");
    assert_eq!(
        err(&call(&connected, "write_file", write("c.txt")).await),
        r#"Permission denied: the approval form for write_file came back with the decision "maybe", not one of approve, approve_for_session or refuse; the call did not run"#
    );
    assert_eq!(
        err(&call(&connected, "write_file", write("c.txt")).await),
        "Permission denied: the approval form for write_file came back with the decision true, not one of approve, approve_for_session or refuse; the call did not run"
    );
    assert_eq!(
        err(&call(&connected, "write_file", write("c.txt")).await),
        r#"Permission denied: the approval form for write_file came back as "yes", not as the form's fields; the call did not run"#
    );
    assert!(!base.join("c.txt").exists());
    assert_eq!(client.asked().len(), answers.len());
    connected.cancel().await.unwrap();
    server.stop();
}

/// A client's `notifications/cancelled` drops the call (its handler with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_stops_its_handler() {
    let dir = workspace();
    let hung = Arc::new(AtomicUsize::new(0));
    let registry = registry(&dir.path().join("base"), hung.clone());
    let (server, connected) =
        connect(registry, PermissionManager::default(), Via::Io, Client::default()).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("hang")));
    let handle = connected
        .send_request_with_option(request, PeerRequestOptions::with_timeout(Duration::from_millis(300)))
        .await
        .unwrap();
    let answer = handle.await_response().await;
    assert!(matches!(answer, Err(ServiceError::Timeout { .. })), "{answer:?}");
    let start = Instant::now();
    while hung.load(Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < Duration::from_secs(5), "the handler still runs after the cancellation");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The session goes on.
    ok(&call(&connected, "echo", json!({"text": "still here"})).await);
    connected.cancel().await.unwrap();
    server.stop();
}

/// The stdio-style transport ends when the client goes away, without an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_ends_when_its_client_closes() {
    let dir = workspace();
    let registry = registry(&dir.path().join("base"), Arc::default());
    let (server, connected) =
        connect(registry, PermissionManager::default(), Via::Io, Client::default()).await;
    ok(&call(&connected, "echo", json!({"text": "x"})).await);
    connected.cancel().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), server.wait()).await.expect("ended in time").unwrap();
}

/// `arguments` that is not an object (which rmcp cannot parse as a `tools/call`) gets
/// the pipeline's error result like any bad argument; only a call without a tool name is
/// a JSON-RPC error. The session goes on after each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_arguments_are_error_results_too() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = workspace();
    let registry = registry(&dir.path().join("base"), Arc::default());
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(theirs);
    let server =
        serve_mcp(registry, PermissionManager::default(), McpTransport::io(read, write)).await.unwrap();
    let (from_server, mut to_server) = tokio::io::split(ours);
    let mut lines = BufReader::new(from_server).lines();
    let mut send = async |message: Value| -> Value {
        to_server.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        serde_json::from_str(&lines.next_line().await.unwrap().expect("an answer")).unwrap()
    };
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})).await;
    let bad = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": "oops"}});
    let answer = send(bad).await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "invalid arguments for echo: expected a JSON object, got a string; the tool did not run. Send the call again with the arguments as a JSON object."
    );
    let nameless = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}});
    let answer = send(nameless).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let wrong = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": []}}});
    let answer = send(wrong).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        r#"invalid arguments for echo: text: [] is not of type "string""#
    );
    server.stop();
}
