//! `harnessx run --tool-choice` against a loopback OpenAI-compatible server: `required`
//! on the first request, nothing (the API's `auto`) after the tool call, and a final
//! answer; bad values and unknown tools are one-line usage errors; `--help` shows the
//! flags.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as sse;
use serde_json::{Value, json};

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "test-key").run(dir, args)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
    dir
}

#[test]
fn required_goes_on_the_first_request_and_auto_after_the_tool_call() {
    let dir = workspace();
    let tool_turn = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let final_turn = sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "It says alpha."}, "finish_reason": "stop"}]}),
    ]);
    let server = Server::start(vec![Reply::event_stream(tool_turn), Reply::event_stream(final_turn)]);
    let base = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &[
            "run",
            "Read my notes.",
            "--model",
            "openai:qwen3",
            "--base-url",
            &base,
            "--tool-choice",
            "required",
            "--parallel-tool-calls",
            "false",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    let last = events.last().unwrap();
    assert_eq!((last["type"].as_str(), last["output"].as_str()), (Some("run_end"), Some("It says alpha.")));
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tool_choice"], "required");
    assert_eq!(bodies[0]["parallel_tool_calls"], false);
    assert_eq!(bodies[1].get("tool_choice"), None, "auto is the API's default: {}", bodies[1]);
    assert_eq!(bodies[1]["parallel_tool_calls"], false, "not a choice, so not reset");
    let tool: Vec<&Value> =
        bodies[1]["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert!(tool[0]["content"].as_str().unwrap().contains("alpha"), "{tool:?}");
}

#[test]
fn a_bad_tool_choice_is_a_one_line_usage_error() {
    let dir = workspace();
    let out = run(dir.path(), &["run", "hi", "--tool-choice", "two words"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let first = err.lines().next().unwrap();
    assert!(
        first.contains(
            "invalid tool choice \"two words\": use auto, required, none or a tool name (letters, digits, _ and -, at most 64)"
        ),
        "{err}"
    );
    // Below it, only clap's pointer to --help.
    let rest: Vec<&str> = err.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(rest, ["For more information, try '--help'."], "{err}");

    let out = run(dir.path(), &["run", "hi", "--parallel-tool-calls", "maybe"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("[possible values: true, false]"), "{}", stderr(&out));
}

#[test]
fn forcing_a_tool_the_flags_did_not_load_is_a_one_line_usage_error_before_any_request() {
    let dir = workspace();
    // Nothing listens there: the run must fail before any request.
    let out = run(
        dir.path(),
        &[
            "run",
            "hi",
            "--tools",
            "read_file,list_directory",
            "--model",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--tool-choice",
            "read_fiel",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "harnessx: tool_choice forces the tool \"read_fiel\", which is not registered (did you mean \"read_file\"?); registered tools: read_file, list_directory, write_todos, read_todos. Name one of them, or use auto, required or none\n"
    );
}

#[test]
fn run_help_shows_the_flags() {
    let dir = workspace();
    let help = stdout(&run(dir.path(), &["run", "--help"]));
    assert!(help.contains("--tool-choice <auto|required|none|NAME>"), "{help}");
    assert!(help.contains("[default: auto]"), "{help}");
    assert!(help.contains("--parallel-tool-calls <true|false>"), "{help}");
}
