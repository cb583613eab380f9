//! `harnessx run` against loopback OpenAI-compatible, OpenAI Responses, Anthropic and
//! Gemini servers: two parallel tool calls, results sent back in call order, streaming and
//! not.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::{anthropic as anthropic_sse, gemini as gemini_sse, openai as sse};
use serde_json::{Value, json};

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("OPENAI_API_KEY", "test-key")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("GEMINI_API_KEY", "test-key")
        .run(dir, args)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
    dir
}

fn events(out: &Output) -> Vec<Value> {
    json_lines(out)
}

fn assert_two_calls_ran_in_order(events: &[Value]) {
    let starts: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_start")
        .map(|e| (e["call_id"].as_str().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(starts, [("call_1", "list_directory"), ("call_2", "read_file")]);
    let last = events.last().unwrap();
    assert_eq!((last["type"].as_str(), last["output"].as_str()), (Some("run_end"), Some("All done.")));
}

fn openai_tool_turn() -> String {
    sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "list_directory", "arguments": ""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 1, "id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"no"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": "tes.txt\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ])
}

#[test]
fn openai_compatible_streaming_run_sends_both_results_back_in_call_order() {
    let dir = workspace();
    let final_turn = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "All "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "done."}, "finish_reason": "stop"}]}),
    ]);
    let server =
        Server::start(vec![Reply::event_stream(openai_tool_turn()), Reply::event_stream(final_turn)]);
    let base = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &["run", "Read my notes.", "--model", "openai:gpt-4o", "--base-url", &base, "--json"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_two_calls_ran_in_order(&events(&out));
    let bodies = server.bodies();
    assert_eq!(bodies[0]["model"], "gpt-4o");
    assert_eq!(bodies[0]["stream"], true);
    let tool_messages: Vec<&Value> =
        bodies[1]["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2);
    assert_eq!(tool_messages[0]["tool_call_id"], "call_1");
    assert_eq!(tool_messages[1]["tool_call_id"], "call_2");
    assert!(tool_messages[1]["content"].as_str().unwrap().contains("alpha"));
}

/// A Responses API stream: `event: <type>` before each `data:` line, as OpenAI frames it.
fn responses_sse(events: &[Value]) -> String {
    events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect()
}

#[test]
fn openai_responses_run_sends_both_results_back_as_function_call_outputs() {
    let dir = workspace();
    let call = |index: u64, id: &str, name: &str, arguments: &str| {
        let item = json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name, "arguments": ""});
        let done = json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name, "arguments": arguments});
        vec![
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
            json!({"type": "response.function_call_arguments.delta", "output_index": index, "delta": arguments}),
            json!({"type": "response.output_item.done", "output_index": index, "item": done}),
        ]
    };
    let mut tool_turn = call(0, "call_1", "list_directory", "{}");
    tool_turn.extend(call(1, "call_2", "read_file", "{\"path\": \"notes.txt\"}"));
    tool_turn.push(json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 10, "output_tokens": 5}}}));
    let final_turn = [
        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "All done."}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ];
    let server = Server::start(vec![
        Reply::event_stream(responses_sse(&tool_turn)),
        Reply::event_stream(responses_sse(&final_turn)),
    ]);
    let base = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &["run", "Read my notes.", "--model", "openai-responses:gpt-5-mini", "--base-url", &base, "--json"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_two_calls_ran_in_order(&events(&out));
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].body["model"], "gpt-5-mini");
    assert_eq!(requests[0].body["store"], false);
    let outputs: Vec<&Value> = requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0]["call_id"], "call_1");
    assert_eq!(outputs[1]["call_id"], "call_2");
    assert!(outputs[1]["output"].as_str().unwrap().contains("alpha"));
}

#[test]
fn openai_compatible_non_streaming_run() {
    let dir = workspace();
    let tool_turn = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
    let final_turn = json!({"id": "y", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "All done."}}]});
    let server = Server::start(vec![
        Reply::json(200, tool_turn.to_string()),
        Reply::json(200, final_turn.to_string()),
    ]);
    let base = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &["run", "Read my notes.", "--model", "openai:gpt-4o", "--base-url", &base, "--json", "--no-stream"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_two_calls_ran_in_order(&events(&out));
    let bodies = server.bodies();
    assert_ne!(bodies[0]["stream"], true);
    let ids: Vec<&Value> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| &m["tool_call_id"])
        .collect();
    assert_eq!(ids, ["call_1", "call_2"]);
}

#[test]
fn anthropic_streaming_run_merges_both_results_into_one_user_turn_in_call_order() {
    let dir = workspace();
    let tool_turn = anthropic_sse(&[
        json!({"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant", "content": [], "model": "claude", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "call_1", "name": "list_directory", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "call_2", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"notes"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ".txt\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
        json!({"type": "message_stop"}),
    ]);
    let final_turn = anthropic_sse(&[
        json!({"type": "message_start", "message": {"id": "m2", "type": "message", "role": "assistant", "content": [], "model": "claude", "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "All done."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ]);
    let server = Server::start(vec![Reply::event_stream(tool_turn), Reply::event_stream(final_turn)]);
    let out = run(
        dir.path(),
        &[
            "run",
            "Read my notes.",
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            &server.url,
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_two_calls_ran_in_order(&events(&out));
    let bodies = server.bodies();
    let messages = bodies[1]["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    let ids: Vec<&Value> = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| &b["tool_use_id"])
        .collect();
    assert_eq!(ids, ["call_1", "call_2"]);
}

#[test]
fn gemini_run_names_the_calls_and_sends_both_results_back_by_name_in_call_order() {
    let dir = workspace();
    let tool_turn = gemini_sse(&[json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "list_directory", "args": {}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "read_file", "args": {"path": "notes.txt"}}}
        ]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 10}})]);
    let final_turn = gemini_sse(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "All "}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "done."}]}, "finishReason": "STOP"}]}),
    ]);
    let server = Server::start(vec![Reply::event_stream(tool_turn), Reply::event_stream(final_turn)]);
    let out = run(
        dir.path(),
        &["run", "Read my notes.", "--model", "gemini:gemini-2.5-flash", "--base-url", &server.url, "--json"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = events(&out);
    let starts: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_start")
        .map(|e| (e["call_id"].as_str().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(starts, [("call_1_0", "list_directory"), ("call_1_1", "read_file")]);
    assert_eq!(events.last().unwrap()["output"], "All done.");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    assert_eq!(requests[0].header("x-goog-api-key"), Some("test-key"));
    let contents = requests[1].body["contents"].as_array().unwrap();
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "c2ln");
    let names: Vec<&Value> =
        contents[2]["parts"].as_array().unwrap().iter().map(|p| &p["functionResponse"]["name"]).collect();
    assert_eq!(names, ["list_directory", "read_file"]);
}

#[test]
fn a_rejected_key_fails_the_run_with_a_clear_message() {
    let dir = workspace();
    let body = r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#;
    let server = Server::start(vec![Reply::json(401, body); 3]);
    let url = format!("{}/v1", server.url);
    let out = run(dir.path(), &["run", "hi", "--model", "openai:gpt-4o", "--base-url", &url]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("authentication failed"), "{err}");
}

/// `--fallback-model`: the OpenAI-compatible server is down (HTTP 500 on every attempt),
/// so the run goes on with the Anthropic model given with its base URL; `--json` says so
/// with a `model_fallback` event, the text mode with a line on stderr.
#[test]
fn a_fallback_model_answers_when_the_first_is_down() {
    let dir = workspace();
    let answer = r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"Backup here."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":3}}"#;
    for json in [true, false] {
        let down = Server::start(vec![]);
        let backup = Server::start(vec![Reply::json(200, answer)]);
        let base = format!("{}/v1", down.url);
        let fallback = format!("anthropic:claude-sonnet-4-5@{}", backup.url);
        let mut args = vec![
            "run",
            "hi",
            "--tools",
            "",
            "--model",
            "openai:gpt-4o",
            "--base-url",
            &base,
            "--fallback-model",
            &fallback,
        ];
        if json {
            args.push("--json");
        }
        let out = run(dir.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(down.requests().len(), 3, "the first model's own three attempts");
        assert_eq!(backup.requests().len(), 1);
        if json {
            let events = events(&out);
            let switch: Vec<&Value> = events.iter().filter(|e| e["type"] == "model_fallback").collect();
            assert_eq!(switch.len(), 1, "{events:?}");
            assert_eq!(switch[0]["from"], "openai:gpt-4o");
            assert_eq!(switch[0]["to"], "anthropic:claude-sonnet-4-5");
            assert!(
                switch[0]["reason"].as_str().unwrap().starts_with("the model provider answered HTTP 500")
            );
            assert_eq!(events.last().unwrap()["output"], "Backup here.");
        } else {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Backup here.");
            assert!(
                stderr.contains("openai:gpt-4o is down (the model provider answered HTTP 500"),
                "{stderr}"
            );
            assert!(stderr.contains("asking anthropic:claude-sonnet-4-5"), "{stderr}");
        }
    }
}

/// A `--fallback-model` that names no provider's model is a usage error (exit 2) that
/// names it, before anything is asked.
#[test]
fn a_bad_fallback_model_is_a_usage_error() {
    let dir = workspace();
    for (value, says) in [
        ("test", "--fallback-model test: give a provider's model"),
        ("cohere:command", "unknown model \"cohere:command\""),
        ("@http://127.0.0.1:9/v1", "--fallback-model @http://127.0.0.1:9/v1: give a provider's model"),
    ] {
        let out = run(dir.path(), &["run", "hi", "--fallback-model", value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(stderr.contains(says), "{value}: {stderr}");
    }
}
