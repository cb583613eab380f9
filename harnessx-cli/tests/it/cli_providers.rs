//! `harnessx run` against loopback OpenAI-compatible, OpenAI Responses and Anthropic
//! servers: two parallel tool calls, results sent back in call order, streaming and not.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::{anthropic as anthropic_sse, openai as sse};
use serde_json::{Value, json};

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("OPENAI_API_KEY", "test-key")
        .env("ANTHROPIC_API_KEY", "test-key")
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
