//! `harnessx run --output-schema FILE`: the answer as one line of JSON on stdout; with
//! `--json`, `run_end`'s `output` a JSON value; `--output-mode` and `--output-retries`;
//! exhausted retries exit 1 naming the field; schema files that cannot be used exit 2
//! with one line; a durable run prints its value too.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as sse;
use serde_json::{Value, json};

const SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0}},"required":["city","population"]}"#;

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "test-key").run(dir, args)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("schema.json"), SCHEMA).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\n").unwrap();
    dir
}

/// A streamed OpenAI-compatible turn: `text`, or a `final_result` call with `arguments`.
fn turn(text: Option<&str>, arguments: Option<&str>) -> Reply {
    let mut events = Vec::new();
    if let Some(text) = text {
        events.push(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}));
    }
    if let Some(arguments) = arguments {
        events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "final_result", "arguments": arguments}}]}}]}));
    }
    let finish = if arguments.is_some() { "tool_calls" } else { "stop" };
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    Reply::event_stream(sse(&events))
}

#[test]
fn the_test_model_prints_one_line_of_json_in_every_mode() {
    let dir = workspace();
    for mode in ["tool", "native", "prompted"] {
        let out =
            run(dir.path(), &["run", "What city?", "--output-schema", "schema.json", "--output-mode", mode]);
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", stderr(&out));
        assert_eq!(stdout(&out), "{\"city\":\"a\",\"population\":0}\n", "{mode}");
    }
}

#[test]
fn json_run_end_carries_the_answer_as_a_value() {
    let dir = workspace();
    let out = run(dir.path(), &["run", "What city?", "--output-schema", "schema.json", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = json_lines(&out);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_end");
    assert_eq!(last["output"], json!({"city": "a", "population": 0}));
    assert!(last.get("value").is_none() && last["usage"].is_object() && last["turns"].is_u64(), "{last}");
    // Without a schema, `output` stays the text.
    let out = run(dir.path(), &["run", "What city?", "--json"]);
    assert!(json_lines(&out).last().unwrap()["output"].is_string());
}

#[test]
fn a_refused_answer_is_retried_then_printed() {
    let dir = workspace();
    let server = Server::start(vec![
        turn(Some("Thinking..."), Some(r#"{"city": "Paris", "population": -5}"#)),
        turn(None, Some(r#"{"city": "Paris", "population": 2100000}"#)),
    ]);
    let url = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &[
            "run",
            "What city?",
            "--model",
            "openai:m",
            "--base-url",
            &url,
            "--tools",
            "",
            "--output-schema",
            "schema.json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The streamed text is not the answer: stdout is the one line.
    assert_eq!(stdout(&out), "{\"city\":\"Paris\",\"population\":2100000}\n");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    let last = bodies[1]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["content"],
        "invalid arguments for final_result: population: -5 is less than the minimum of 0"
    );
}

#[test]
fn exhausted_retries_exit_1_naming_the_field() {
    let dir = workspace();
    let server = Server::respond(|_| turn(Some(r#"{"city": "Paris"}"#), None));
    let url = format!("{}/v1", server.url);
    let out = run(
        dir.path(),
        &[
            "run",
            "What city?",
            "--model",
            "openai:m",
            "--base-url",
            &url,
            "--tools",
            "",
            "--output-schema",
            "schema.json",
            "--output-mode",
            "native",
            "--output-retries",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains(r#"after 2 attempts: invalid output: "population" is a required property"#),
        "{err}"
    );
    assert_eq!(server.bodies().len(), 2, "1 + 1 retry");
    let format = &server.bodies()[0]["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["strict"], true);
}

#[test]
fn schema_files_that_cannot_be_used_exit_2_with_one_line() {
    let dir = workspace();
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("text.json", b"not json".to_vec(), "not JSON"),
        ("array.json", b"[1, 2]".to_vec(), "a schema must be a JSON object, got an array"),
        ("bool.json", b"true".to_vec(), "got a boolean"),
        ("bad.json", br#"{"type": 12}"#.to_vec(), "the output schema is not usable"),
        ("deep.json", deep.into_bytes(), "not JSON"),
        ("binary.json", vec![0xff, 0xfe, 0x00], "not UTF-8"),
    ];
    for (name, bytes, wanted) in cases {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        let out = run(dir.path(), &["run", "x", "--output-schema", name]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains("--output-schema") && err.contains(wanted), "{name}: {err}");
        assert_eq!(stdout(&out), "");
    }
    let out = run(dir.path(), &["run", "x", "--output-schema", "missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    // The mode and retries need a schema; an unknown mode is refused.
    assert_eq!(run(dir.path(), &["run", "x", "--output-mode", "native"]).status.code(), Some(2));
    let out = run(dir.path(), &["run", "x", "--output-schema", "schema.json", "--output-mode", "json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_durable_typed_run_prints_its_value_and_journals_the_output() {
    let dir = workspace();
    let out = run(
        dir.path(),
        &[
            "run",
            "What city?",
            "--tools",
            "read_file",
            "--output-schema",
            "schema.json",
            "--durable",
            "runs.db",
            "--run-id",
            "t1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"city\":\"a\",\"population\":0}\n");
    let out = run(
        dir.path(),
        &[
            "run",
            "What city?",
            "--tools",
            "read_file",
            "--output-schema",
            "schema.json",
            "--durable",
            "runs.db",
            "--run-id",
            "t2",
            "--json",
        ],
    );
    let object: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(object["output"], json!({"city": "a", "population": 0}));
    let out = run(dir.path(), &["runs", "show", "t1", "--durable", "runs.db"]);
    assert!(
        stdout(&out).contains("output") && stdout(&out).contains("tool mode, 2 retries"),
        "{}",
        stdout(&out)
    );
}
