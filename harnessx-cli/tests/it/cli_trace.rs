//! `--trace FILE|otlp`: the spans of a command, as JSON lines or sent to an OTLP/HTTP
//! receiver, with the command's own output unchanged.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as sse;
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}

fn spans(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the trace file is written");
    text.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect()
}

#[test]
fn run_with_trace_file_writes_one_invoke_agent_span_and_its_children() {
    let dir = workspace();
    let out = harnessx(
        dir.path(),
        &["run", "Look around.", "--tools", "list_directory", "--json", "--trace", "trace.jsonl"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The events on stdout are as without --trace.
    let events = json_lines(&out);
    assert_eq!(events.last().unwrap()["type"], "run_end", "{events:?}");

    let spans = spans(&dir.path().join("trace.jsonl"));
    let runs: Vec<&Value> = spans.iter().filter(|s| s["name"] == "invoke_agent").collect();
    let [run] = runs[..] else { panic!("one invoke_agent span: {spans:#?}") };
    assert_eq!(run["parent_span_id"], Value::Null);
    assert_eq!(run["attributes"]["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run["attributes"]["gen_ai.provider.name"], "test");
    assert_eq!(run["attributes"]["gen_ai.request.model"], "test");
    let children = |name: &str| -> Vec<&Value> {
        spans.iter().filter(|s| s["name"] == name && s["parent_span_id"] == run["span_id"]).collect()
    };
    let chats = children("chat test");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert_eq!(chats[0]["kind"], "client");
    assert_eq!(chats[0]["attributes"]["gen_ai.response.finish_reasons"], serde_json::json!(["tool_call"]));
    let tools = children("execute_tool list_directory");
    let [tool] = tools[..] else { panic!("one execute_tool span: {spans:#?}") };
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "list_directory");
    assert_eq!(tool["attributes"]["gen_ai.tool.type"], "function");
    assert_eq!(tool["status"]["code"], "UNSET");
    assert!(spans.iter().all(|s| s["trace_id"] == run["trace_id"]));
    // Contents are off by default: the listing is not in the trace.
    assert!(!std::fs::read_to_string(dir.path().join("trace.jsonl")).unwrap().contains("notes.txt"));
}

#[test]
fn tools_call_with_trace_file_writes_its_execute_tool_span() {
    let dir = workspace();
    let out = harnessx(
        dir.path(),
        &["tools", "call", "read_file", r#"{"path": "nope.txt"}"#, "--trace", "t.jsonl"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let spans = spans(&dir.path().join("t.jsonl"));
    let [tool] = &spans[..] else { panic!("one span: {spans:#?}") };
    assert_eq!(tool["name"], "execute_tool read_file");
    assert_eq!(tool["status"]["code"], "ERROR");
    assert_eq!(tool["attributes"]["error.type"], "tool_error");
}

#[test]
fn bad_trace_values_are_one_line_usage_errors() {
    let dir = workspace();
    let empty = harnessx(dir.path(), &["run", "hi", "--trace", ""]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(stderr(&empty).contains("give `otlp` or the path of a file"), "{}", stderr(&empty));

    let missing = harnessx(dir.path(), &["run", "hi", "--trace", "no/such/folder/t.jsonl"]);
    assert_eq!(missing.status.code(), Some(2));
    let text = stderr(&missing);
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    assert!(
        text.starts_with("harnessx: --trace: could not create the trace file no/such/folder/t.jsonl"),
        "{text}"
    );
    assert_eq!(stdout(&missing), "");
}

#[test]
fn trace_otlp_sends_the_spans_to_the_collector_the_variables_name() {
    let dir = workspace();
    let ok = Reply {
        status: 200,
        content_type: "application/x-protobuf",
        body: Vec::new(),
        split: None,
        headers: Vec::new(),
    };
    let collector = Server::start(vec![ok; 8]);
    let out = Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer t0ken")
        .env("OTEL_SERVICE_NAME", "my-agent")
        .run(dir.path(), &["run", "Look around.", "--tools", "list_directory", "--trace", "otlp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Ran "), "{}", stdout(&out));
    let requests = collector.requests();
    assert!(!requests.is_empty(), "no export reached the collector");
    let bodies: Vec<u8> = requests.iter().flat_map(|r| r.raw.clone()).collect();
    for request in &requests {
        assert_eq!(request.path, "/v1/traces");
        assert_eq!(request.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(request.header("authorization"), Some("Bearer t0ken"));
    }
    // Protobuf keeps strings as they are: the span names and the service are in the body.
    for needle in ["invoke_agent", "chat test", "execute_tool list_directory", "my-agent"] {
        assert!(bodies.windows(needle.len()).any(|w| w == needle.as_bytes()), "{needle} not exported");
    }
}

#[test]
fn an_unreachable_collector_is_said_on_stderr_and_the_run_still_succeeds() {
    let dir = workspace();
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("http://127.0.0.1:{port}"))
        .run(dir.path(), &["run", "Look around.", "--tools", "list_directory", "--trace", "otlp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Ran "), "{}", stdout(&out));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.contains("--trace")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.starts_with("harnessx: --trace: could not export every span: "), "{err}");
}

/// The issue's "done": `run --tool-choice required --trace FILE` against a loopback
/// OpenAI-compatible server gives a tool call, a final answer and a trace with one
/// `invoke_agent` span, its `chat` and `execute_tool` children and the GenAI attributes.
#[test]
fn run_with_tool_choice_required_against_an_openai_compatible_server_is_traced() {
    let dir = workspace();
    let tool_turn = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 9}}),
    ]);
    let final_turn = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "One file."}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 150, "completion_tokens": 4}}),
    ]);
    let server = Server::start(vec![Reply::event_stream(tool_turn), Reply::event_stream(final_turn)]);
    let base = format!("{}/v1", server.url);
    let out = Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "test-key").run(
        dir.path(),
        &[
            "run",
            "Look.",
            "--model",
            "openai:gpt-4o",
            "--base-url",
            &base,
            "--tools",
            "list_directory",
            "--tool-choice",
            "required",
            "--trace",
            "t.jsonl",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "One file.");
    let bodies = server.bodies();
    assert_eq!(bodies[0]["tool_choice"], "required");
    // Reset to auto after the model's calls, spelled out for a server that is not OpenAI.
    assert_eq!(bodies[1]["tool_choice"], "auto");
    let spans = spans(&dir.path().join("t.jsonl"));
    let runs: Vec<&Value> = spans.iter().filter(|s| s["name"] == "invoke_agent").collect();
    let [run] = runs[..] else { panic!("one invoke_agent span: {spans:#?}") };
    assert_eq!(run["attributes"]["gen_ai.provider.name"], "openai");
    assert_eq!(run["attributes"]["gen_ai.request.model"], "gpt-4o");
    let usage = |s: &Value| {
        (
            s["attributes"]["gen_ai.usage.input_tokens"].clone(),
            s["attributes"]["gen_ai.usage.output_tokens"].clone(),
        )
    };
    // The run's totals.
    assert_eq!(usage(run), (json!(270), json!(13)));
    let chats: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat gpt-4o").collect();
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert_eq!(usage(chats[0]), (json!(120), json!(9)));
    assert_eq!(usage(chats[1]), (json!(150), json!(4)));
    assert_eq!(chats[0]["attributes"]["gen_ai.provider.name"], "openai");
    assert_eq!(chats[0]["attributes"]["gen_ai.response.finish_reasons"], json!(["tool_call"]));
    assert_eq!(chats[1]["attributes"]["gen_ai.response.finish_reasons"], json!(["stop"]));
    let tool = spans.iter().find(|s| s["name"] == "execute_tool list_directory").expect("the call's span");
    assert_eq!(tool["parent_span_id"], run["span_id"]);
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call_1");
}
