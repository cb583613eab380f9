//! `harnessx run --tool-choice` against a loopback OpenAI-compatible server: `required`
//! on the first request, `auto` after the tool call, and a final answer; bad values and
//! unknown tools are one-line usage errors; `--help` shows the flags. Against an
//! imitation of llama-cpp-python (which refuses `required` and cannot stream with
//! tools): the one tool the flags loaded is named instead, the empty stream is asked
//! again unstreamed, its call ids show that its template drops `tool` messages so the
//! results go as user messages, each said once on stderr, and the run answers with what
//! the tool read; with two tools, a one-line error that says what to do.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::local::{Local, llama_cpp_python_call_id};
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
    assert_eq!(bodies[1]["tool_choice"], "auto", "{}", bodies[1]);
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

/// Regression (issue 32): the README's advice for small local models, on
/// llama-cpp-python. `required` is refused (HTTP 500), so `read_file`, the one tool the
/// flags loaded (the planning tools come beside it), is named instead; a stream with
/// tools comes back empty, so it is asked again unstreamed; its call's id
/// (`call__0_read_file_cmpl-UUID`) shows that its template drops `tool` messages, so the
/// result goes back as a user message; after the call, `auto` answers nothing, so it is
/// asked again with `none`. Each is said once on stderr, and the run reads the note and
/// answers with the secret in it, streamed and not.
#[test]
fn required_on_llama_cpp_python_names_the_one_tool_and_the_run_answers() {
    for stream in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("note.txt"), "The secret word is plum.\n").unwrap();
        let server = Local::LlamaCppPython.start();
        let base = format!("{}/v1", server.url);
        let mut args = vec![
            "run",
            "Read note.txt and tell me the secret word.",
            "--model",
            "openai:gemma",
            "--base-url",
            &base,
            "--tools",
            "read_file",
            "--tool-choice",
            "required",
        ];
        if !stream {
            args.push("--no-stream");
        }
        let out = run(dir.path(), &args);
        assert!(out.status.success(), "stream={stream}: {}", stderr(&out));
        let id = llama_cpp_python_call_id("read_file");
        let result = format!("[read_file result, call {id}]\n     1\tThe secret word is plum.\n");
        assert_eq!(stdout(&out), format!("The note says: {result}\n"), "stream={stream}");
        let err = stderr(&out);
        let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("harnessx: warning: ")).collect();
        let empty = format!(
            "harnessx: warning: the server at {base} answered a streamed request with tools with an empty stream (HTTP 200, no events)"
        );
        let refused = format!(
            "harnessx: warning: the server at {base} does not support tool_choice \"required\" (the model provider answered HTTP 500: {{\"error\":{{\"message\":\"\",\"type\":\"internal_server_error\",\"param\":null,\"code\":null}}}}); naming the tool read_file in its place from now on"
        );
        let left_out = format!(
            "harnessx: warning: the server at {base} names its tool calls as llama-cpp-python's function-calling chat formats do (call__N_NAME_cmpl-UUID), whose prompt template leaves tool results out; sending each turn's tool results as one user message from now on (llama.cpp's llama-server --jinja takes tool messages as they are)"
        );
        let nothing = format!(
            "harnessx: warning: the server at {base} answered a request with tool_choice \"auto\" with neither text nor tool calls; asking again with tool_choice \"none\" for the text, each time it does"
        );
        let said = [refused.as_str(), left_out.as_str(), nothing.as_str()];
        if stream {
            assert_eq!(warnings.len(), 4, "{err}");
            assert!(warnings[0].starts_with(&empty), "{err}");
            assert_eq!(warnings[1..], said, "{err}");
        } else {
            assert_eq!(warnings, said, "{err}");
        }
        let bodies = server.bodies();
        let tools: Vec<&str> = bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["read_file", "write_todos", "read_todos"]);
        let choices: Vec<&Value> = bodies.iter().map(|b| &b["tool_choice"]).collect();
        let named = json!({"type": "function", "function": {"name": "read_file"}});
        let (auto, none) = (json!("auto"), json!("none"));
        if stream {
            assert_eq!(choices, [&json!("required"), &json!("required"), &named, &auto, &none]);
        } else {
            assert_eq!(choices, [&json!("required"), &named, &auto, &none]);
        }
        let last = bodies.last().unwrap();
        assert_eq!(
            last["messages"].as_array().unwrap().iter().filter(|m| m["content"] == "").count(),
            1,
            "{last}"
        );
        // The conversation: system, the task, the call, its result as the user's words.
        let messages = last["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"], "{last}");
        assert_eq!(messages[2]["tool_calls"][0]["id"], id.as_str());
        assert_eq!(messages[3]["content"], result.as_str());
    }
}

/// With two tools loaded there is no one to name in place of `required`: one line on
/// stderr says the server does not support it and how to force a tool; exit status 1.
#[test]
fn required_on_llama_cpp_python_with_two_tools_is_a_one_line_error() {
    let dir = workspace();
    let server = Local::LlamaCppPython.start();
    let base = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &[
            "run",
            "Read my notes.",
            "--model",
            "openai:gemma",
            "--base-url",
            &base,
            "--tools",
            "read_file,list_directory",
            "--tool-choice",
            "required",
            "--no-stream",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("does not support tool_choice \"required\" (it answered HTTP 500: "), "{err}");
    assert!(
        lines[0].contains("with 4 tools offered (read_file, list_directory, write_todos, read_todos)"),
        "{err}"
    );
    assert!(
        lines[0].ends_with(
            "force one with --tool-choice NAME (ToolChoice::Tool), or let the model choose (auto)"
        ),
        "{err}"
    );
    assert_eq!(server.bodies().len(), 1, "not retried");
}
