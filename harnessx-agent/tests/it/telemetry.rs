//! The exporters (feature `otel`): a run with the test model calling a tool, exported to
//! a loopback OTLP/HTTP receiver and to a JSON-lines file, gives one `invoke_agent` span
//! with its `chat` and `execute_tool` children and the GenAI attributes; contents only
//! when asked; a failing tool's span has an ERROR status.

use harnessx_agent::model::TestModel;
use harnessx_agent::telemetry::{TraceTarget, init_for_current_thread};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::telemetry::set_capture_content;
use harnessx_core::{ToolDefinition, ToolError, ToolHandler};
use harnessx_test_support::server::{Reply, Server};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use prost::Message;
use serde_json::{Map, Value, json};

/// Content capture is process-wide: the tests that depend on it take turns (each on its
/// own runtime, across awaits: tokio's mutex).
static CAPTURE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A span as both exporters carry it.
#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent: Option<String>,
    name: String,
    kind: String,
    attributes: Map<String, Value>,
    status: String,
    message: String,
    /// Unix nanoseconds (the file only).
    start: u64,
    end: u64,
}

impl Span {
    fn attr(&self, key: &str) -> &Value {
        self.attributes.get(key).unwrap_or(&Value::Null)
    }
}

/// An agent named `locksmith` whose test model calls `open_vault` once (arguments from
/// the schema's default: `{"secret": "hunter2"}`), then answers.
fn agent(tool_fails: bool) -> Agent {
    let schema = json!({
        "type": "object",
        "properties": {"secret": {"type": "string", "default": "hunter2"}},
        "required": ["secret"],
    });
    let handler = if tool_fails {
        ToolHandler::from_async(|_, _| async { Err(ToolError::new("the vault is jammed")) })
    } else {
        ToolHandler::from_async(|args, _| async move {
            Ok(format!("opened with {}", args["secret"].as_str().unwrap_or_default()).into())
        })
    };
    Agent::builder()
        .name("locksmith")
        .model(TestModel::new())
        .tool(ToolDefinition::new("open_vault", "Open the vault.", schema, handler))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .expect("the agent builds")
}

/// Runs the agent with spans going to `target`; returns once every span is exported.
async fn traced_run(target: TraceTarget, tool_fails: bool) {
    let (guard, scope) = init_for_current_thread(target).expect("tracing is set up");
    let result = agent(tool_fails).run("Open the vault.").await.expect("the run finishes");
    assert_eq!(result.turns, 2);
    drop(scope);
    guard.shutdown().expect("every span is exported");
}

fn otlp_receiver() -> Server {
    let ok = Reply {
        status: 200,
        content_type: "application/x-protobuf",
        body: Vec::new(),
        split: None,
        headers: Vec::new(),
    };
    Server::start(vec![ok; 8])
}

/// The spans the receiver got, decoded from the protobuf bodies.
fn received(server: &Server) -> Vec<Span> {
    let mut spans = Vec::new();
    for request in server.requests() {
        assert_eq!(request.path, "/v1/traces");
        assert_eq!(request.header("content-type"), Some("application/x-protobuf"));
        let export = ExportTraceServiceRequest::decode(&request.raw[..]).expect("an OTLP trace export");
        for resource in export.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.as_ref())
                .map(any_value);
            assert_eq!(service, Some(json!("harnessx")));
            for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                let status = span.status.clone().unwrap_or_default();
                spans.push(Span {
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: (!span.parent_span_id.is_empty()).then(|| hex(&span.parent_span_id)),
                    kind: match span.kind {
                        1 => "internal",
                        3 => "client",
                        _ => "other",
                    }
                    .to_owned(),
                    name: span.name,
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), kv.value.as_ref().map(any_value).unwrap_or(Value::Null)))
                        .collect(),
                    status: ["UNSET", "OK", "ERROR"][status.code as usize].to_owned(),
                    message: status.message,
                    start: span.start_time_unix_nano,
                    end: span.end_time_unix_nano,
                });
            }
        }
    }
    spans
}

fn any_value(v: &AnyValue) -> Value {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(any_value::Value::IntValue(i)) => json!(i),
        Some(any_value::Value::DoubleValue(f)) => json!(f),
        Some(any_value::Value::ArrayValue(a)) => Value::Array(a.values.iter().map(any_value).collect()),
        other => panic!("unexpected attribute value {other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The spans of a JSON-lines trace file.
fn from_file(text: &str) -> Vec<Span> {
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("each line is a JSON object");
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            assert!(v["end_time_unix_nano"].as_u64() >= v["start_time_unix_nano"].as_u64());
            assert!(v["start_time_unix_nano"].as_u64().is_some_and(|t| t > 0));
            Span {
                trace_id: s("trace_id"),
                span_id: s("span_id"),
                parent: v["parent_span_id"].as_str().map(str::to_owned),
                name: s("name"),
                kind: s("kind"),
                attributes: v["attributes"].as_object().cloned().expect("attributes are an object"),
                status: v["status"]["code"].as_str().unwrap_or_default().to_owned(),
                message: v["status"]["message"].as_str().unwrap_or_default().to_owned(),
                start: v["start_time_unix_nano"].as_u64().unwrap_or_default(),
                end: v["end_time_unix_nano"].as_u64().unwrap_or_default(),
            }
        })
        .collect()
}

/// One `invoke_agent locksmith` span, parent of two `chat test` spans and one
/// `execute_tool open_vault` span, all in one trace, with the GenAI attributes.
fn check_tree(spans: &[Span]) -> (Span, Vec<Span>, Span) {
    let named = |name: &str| spans.iter().filter(|s| s.name == name).cloned().collect::<Vec<_>>();
    let [run] = &named("invoke_agent locksmith")[..] else { panic!("one invoke_agent span: {spans:#?}") };
    let chats = named("chat test");
    let [tool] = &named("execute_tool open_vault")[..] else { panic!("one execute_tool span: {spans:#?}") };
    assert_eq!(spans.len(), 4, "{spans:#?}");
    assert_eq!(chats.len(), 2);
    assert!(spans.iter().all(|s| s.trace_id == run.trace_id), "one trace");

    assert_eq!(run.parent, None);
    assert_eq!(run.kind, "internal");
    assert_eq!(run.attr("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(run.attr("gen_ai.agent.name"), "locksmith");
    assert_eq!(run.attr("gen_ai.provider.name"), "test");
    assert_eq!(run.attr("gen_ai.request.model"), "test");
    assert_eq!(run.attr("gen_ai.usage.input_tokens"), 0);
    assert_eq!(run.attr("gen_ai.usage.output_tokens"), 0);
    assert_eq!(run.attr("harnessx.turns"), 2);

    for (turn, chat) in chats.iter().enumerate() {
        assert_eq!(chat.parent.as_ref(), Some(&run.span_id));
        assert_eq!(chat.kind, "client");
        assert_eq!(chat.attr("gen_ai.operation.name"), "chat");
        assert_eq!(chat.attr("gen_ai.provider.name"), "test");
        assert_eq!(chat.attr("gen_ai.request.model"), "test");
        assert_eq!(chat.attr("harnessx.turn"), turn as u64 + 1);
        assert_eq!(chat.attr("gen_ai.usage.input_tokens"), 0);
        let reason = if turn == 0 { "tool_call" } else { "stop" };
        assert_eq!(chat.attr("gen_ai.response.finish_reasons"), &json!([reason]));
    }

    assert_eq!(tool.parent.as_ref(), Some(&run.span_id));
    assert_eq!(tool.kind, "internal");
    assert_eq!(tool.attr("gen_ai.operation.name"), "execute_tool");
    assert_eq!(tool.attr("gen_ai.tool.name"), "open_vault");
    assert_eq!(tool.attr("gen_ai.tool.type"), "function");
    assert!(tool.attr("gen_ai.tool.call.id").as_str().is_some_and(|id| !id.is_empty()));
    (run.clone(), chats, tool.clone())
}

const CONTENT_KEYS: [&str; 5] = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
];

fn assert_no_contents(spans: &[Span]) {
    for span in spans {
        for key in CONTENT_KEYS {
            assert!(!span.attributes.contains_key(key), "{key} recorded on {}", span.name);
        }
        assert!(!serde_json::to_string(&span.attributes).unwrap().contains("hunter2"), "{span:#?}");
    }
}

#[tokio::test]
async fn an_otlp_receiver_gets_the_run_with_its_chat_and_tool_spans() {
    let _turn = CAPTURE.lock().await;
    set_capture_content(false);
    let server = otlp_receiver();
    traced_run(TraceTarget::OtlpEndpoint(format!("{}/v1/traces", server.url)), false).await;
    let spans = received(&server);
    let (_, _, tool) = check_tree(&spans);
    assert_eq!(tool.status, "UNSET");
    assert_no_contents(&spans);
}

#[tokio::test]
async fn the_json_lines_file_has_the_same_tree() {
    let _turn = CAPTURE.lock().await;
    set_capture_content(false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    traced_run(TraceTarget::File(path.clone()), false).await;
    let spans = from_file(&std::fs::read_to_string(&path).unwrap());
    check_tree(&spans);
    assert_no_contents(&spans);
}

#[tokio::test]
async fn contents_are_recorded_only_when_capture_is_on() {
    let _turn = CAPTURE.lock().await;
    set_capture_content(true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    traced_run(TraceTarget::File(path.clone()), false).await;
    set_capture_content(false);
    let spans = from_file(&std::fs::read_to_string(&path).unwrap());
    let (_, chats, tool) = check_tree(&spans);
    assert_eq!(tool.attr("gen_ai.tool.call.arguments"), r#"{"secret":"hunter2"}"#);
    assert_eq!(tool.attr("gen_ai.tool.call.result"), "opened with hunter2");
    let input: Value =
        serde_json::from_str(chats[0].attr("gen_ai.input.messages").as_str().unwrap()).unwrap();
    assert_eq!(input, json!([{"role": "user", "parts": [{"type": "text", "content": "Open the vault."}]}]));
    let output: Value =
        serde_json::from_str(chats[0].attr("gen_ai.output.messages").as_str().unwrap()).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "tool_call");
    assert_eq!(output[0]["parts"][0]["type"], "tool_call");
    assert_eq!(output[0]["parts"][0]["arguments"], json!({"secret": "hunter2"}));
    let second: Value =
        serde_json::from_str(chats[1].attr("gen_ai.input.messages").as_str().unwrap()).unwrap();
    assert_eq!(second[2]["role"], "tool");
    assert_eq!(second[2]["parts"][0]["response"], "opened with hunter2");
}

#[tokio::test]
async fn a_failing_tool_gives_its_span_an_error_status() {
    let _turn = CAPTURE.lock().await;
    set_capture_content(false);
    let server = otlp_receiver();
    traced_run(TraceTarget::OtlpEndpoint(format!("{}/v1/traces", server.url)), true).await;
    let spans = received(&server);
    let (run, _, tool) = check_tree(&spans);
    assert_eq!(tool.status, "ERROR");
    assert_eq!(tool.attr("error.type"), "tool_error");
    // Without capture, the description is the class's sentence, not the tool's text.
    assert_eq!(tool.message, "the tool returned an error");
    // The run itself went on: the model read the error and answered.
    assert_eq!(run.status, "UNSET");
}

/// A call of an MCP server's tool: the client's `execute_tool` span has the request as a
/// child (`tools/call {tool}`, a client span). The server here is a registry served over
/// MCP's streamable HTTP on loopback, in this process.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn an_mcp_call_is_an_execute_tool_span_with_the_request_inside() {
    use harnessx_core::{PermissionManager, ToolOptions, ToolRegistry};
    use harnessx_mcp::{McpServer, McpTransport, serve_mcp};

    let _turn = CAPTURE.lock().await;
    set_capture_content(false);
    let remote = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {}});
    let echo = ToolHandler::from_async(|_, _| async { Ok("echoed".into()) });
    remote.register_with_schema("echo", "Echo.", schema, echo, ToolOptions::new()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let serving =
        serve_mcp(remote, PermissionManager::default(), McpTransport::http(listener)).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let (guard, scope) = init_for_current_thread(TraceTarget::File(path.clone())).unwrap();
    let agent = Agent::builder()
        .model(TestModel::new())
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .mcp(McpServer::http(serving.url().unwrap(), Vec::<(String, String)>::new()))
        .connect()
        .await
        .unwrap();
    let result = agent.run("Echo.").await.unwrap();
    assert!(result.output.contains("echoed"), "{}", result.output);
    agent.close().await;
    serving.stop();
    drop(scope);
    guard.shutdown().unwrap();

    let spans = from_file(&std::fs::read_to_string(&path).unwrap());
    let run = spans.iter().find(|s| s.name == "invoke_agent").expect("the run's span");
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool echo" && s.parent.as_ref() == Some(&run.span_id))
        .expect("the client's execute_tool span");
    let requests: Vec<&Span> = spans.iter().filter(|s| s.name == "tools/call echo").collect();
    let [request] = requests[..] else { panic!("one MCP request span: {spans:#?}") };
    assert_eq!(request.parent.as_ref(), Some(&tool.span_id));
    assert_eq!(request.kind, "client");
    assert_eq!(request.attr("mcp.method.name"), "tools/call");
    assert_eq!(request.attr("gen_ai.tool.name"), "echo");
    assert_eq!(request.status, "UNSET");
}

/// One turn of two concurrent and two serial calls: every call's span is a child of the
/// run's, the concurrent ones overlap, and a serial call's span starts when its turn
/// comes (after the one before it ended), not when the batch started.
#[tokio::test]
async fn calls_of_a_batch_are_children_of_the_run_and_serial_ones_take_turns() {
    use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
    use harnessx_core::ToolCall;

    let _turn = CAPTURE.lock().await;
    set_capture_content(false);
    let nap = |_, _| async {
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        Ok("done".into())
    };
    let schema = json!({"type": "object", "properties": {}});
    let tool = |name: &str, concurrent: bool| {
        ToolDefinition::new(name, "Nap.", schema.clone(), ToolHandler::from_async(nap))
            .with_concurrent(concurrent)
    };
    let model = FunctionModel::new(|request| {
        Ok(match request.messages.last() {
            Some(Message::Tool { .. }) => ModelResponse::text("rested"),
            _ => ModelResponse::tool_calls(vec![
                ToolCall::new("c1", "nap_together", "{}"),
                ToolCall::new("c2", "nap_alone", "{}"),
                ToolCall::new("c3", "nap_together", "{}"),
                ToolCall::new("c4", "nap_alone", "{}"),
            ]),
        })
    });
    let agent = Agent::builder()
        .model(model)
        .tool(tool("nap_together", true))
        .tool(tool("nap_alone", false))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let (guard, scope) = init_for_current_thread(TraceTarget::File(path.clone())).unwrap();
    agent.run("Rest.").await.unwrap();
    drop(scope);
    guard.shutdown().unwrap();

    let spans = from_file(&std::fs::read_to_string(&path).unwrap());
    let run = spans.iter().find(|s| s.name == "invoke_agent").expect("the run's span");
    let call = |id: &str| {
        spans.iter().find(|s| s.attr("gen_ai.tool.call.id") == id).cloned().expect("a span per call")
    };
    let [c1, c2, c3, c4] = [call("c1"), call("c2"), call("c3"), call("c4")];
    for c in [&c1, &c2, &c3, &c4] {
        assert_eq!(c.parent.as_ref(), Some(&run.span_id), "{c:#?}");
    }
    assert!(c1.start < c3.end && c3.start < c1.end, "the concurrent calls overlap");
    assert!(c4.start >= c2.end, "the second serial call starts after the first ended");
}

/// Lets `open_vault` run without a question, then fails on its result; names itself
/// `warden`.
struct Warden;

impl harnessx_core::hooks::ToolHook for Warden {
    fn name(&self) -> &str {
        "warden"
    }
    fn pre_tool_use<'a>(
        &'a self,
        _: harnessx_core::hooks::PreToolUse<'a>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<harnessx_core::hooks::PreDecision, harnessx_core::hooks::HookError>,
    > {
        Box::pin(std::future::ready(Ok(harnessx_core::hooks::PreDecision::Allow)))
    }
    fn post_tool_use<'a>(
        &'a self,
        _: harnessx_core::hooks::PostToolUse<'a>,
    ) -> futures_util::future::BoxFuture<
        'a,
        Result<harnessx_core::hooks::PostDecision, harnessx_core::hooks::HookError>,
    > {
        Box::pin(std::future::ready(Err(harnessx_core::hooks::HookError("no opinion today".into()))))
    }
}

/// Each hook asked is a `hook {point}` span in the run's trace, with the hook's name, the
/// point and its decision; a hook that failed has an ERROR status and why.
#[tokio::test]
async fn each_hook_asked_is_a_span_with_its_name_and_decision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spans.jsonl");
    let (guard, scope) = init_for_current_thread(TraceTarget::File(path.clone())).expect("tracing is set up");
    let agent = Agent::builder()
        .name("locksmith")
        .model(TestModel::new())
        .tool(ToolDefinition::new(
            "open_vault",
            "Open the vault.",
            json!({"type": "object"}),
            ToolHandler::from_async(|_, _| async { Ok("opened".into()) }),
        ))
        .hook(Warden)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    agent.run("Open the vault.").await.expect("the run finishes");
    drop(scope);
    guard.shutdown().expect("every span is exported");
    let spans = from_file(&std::fs::read_to_string(&path).unwrap());
    let mut hooks: Vec<&Span> = spans.iter().filter(|s| s.name.starts_with("hook ")).collect();
    hooks.sort_by_key(|s| s.start);
    let seen: Vec<(&str, &str, &str)> = hooks
        .iter()
        .map(|s| {
            assert_eq!(s.attr("harnessx.hook.name"), "warden", "{s:#?}");
            assert_eq!(format!("hook {}", s.attr("harnessx.hook.point").as_str().unwrap()), s.name, "{s:#?}");
            (s.name.as_str(), s.attr("harnessx.hook.decision").as_str().unwrap(), s.status.as_str())
        })
        .collect();
    let ok = seen[0].2;
    assert_eq!(
        seen,
        [
            ("hook user_prompt", "continue", ok),
            ("hook model_response", "continue", ok),
            ("hook pre_tool_use", "allow", ok),
            ("hook post_tool_use", "error", seen[3].2),
            ("hook model_response", "continue", ok),
            ("hook run_end", "observed", ok),
        ],
        "{hooks:#?}"
    );
    assert!(seen[3].2.to_lowercase().contains("error") && !ok.to_lowercase().contains("error"), "{hooks:#?}");
    assert!(hooks[3].message.contains("hook warden failed: no opinion today"), "{hooks:#?}");
    // In the run's trace; the post hook inside its call's span.
    let trace = &spans.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap().trace_id;
    assert!(hooks.iter().all(|s| &s.trace_id == trace && s.parent.is_some()), "{hooks:#?}");
    let call = spans.iter().find(|s| s.name == "execute_tool open_vault").unwrap();
    assert_eq!(hooks[3].parent.as_ref(), Some(&call.span_id), "{hooks:#?}");
}
