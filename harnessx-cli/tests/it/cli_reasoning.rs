//! `--reasoning-effort` and `--reasoning-budget` (and the configuration keys
//! `reasoning_effort`, `reasoning_budget`) through the binary, against loopback Anthropic
//! and OpenAI-compatible servers: what each request asks for, and the model's thinking
//! printed as `reasoning_delta` lines under `--json`.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr};
use harnessx_test_support::server::{Reply, Server};
use harnessx_test_support::sse::openai as openai_sse;
use serde_json::{Value, json};

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("OPENAI_API_KEY", "test-key")
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("XDG_CONFIG_HOME", dir.join("no-user-config").to_str().unwrap())
        .run(dir, args)
}

/// vercel/ai's recorded thinking stream (`test-support/fixtures/transcripts/README.md`).
fn thinking_stream() -> String {
    harnessx_test_support::fixture("transcripts/vercel_ai/anthropic_stream_thinking.derived.sse")
}

#[test]
fn anthropic_thinking_is_asked_for_and_printed_as_reasoning_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::event_stream(thinking_stream())]);
    let out = run(
        dir.path(),
        &[
            "run",
            "What is 925 / 5?",
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            &server.url,
            "--reasoning-effort",
            "medium",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    let thinking: String = events
        .iter()
        .filter(|e| e["type"] == "reasoning_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185");
    let first = events.iter().position(|e| e["type"] == "reasoning_delta").unwrap();
    let text = events.iter().position(|e| e["type"] == "text_delta").unwrap();
    assert!(first < text, "the thinking comes before the answer");
    let last = events.last().unwrap();
    assert_eq!((last["type"].as_str(), last["output"].as_str()), (Some("run_end"), Some("925 ÷ 5 = 185")));
    let body = &server.bodies()[0];
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 8192}));
    assert!(body["max_tokens"].as_u64().unwrap() > 8192, "{body}");
}

/// Without `--json` the thinking is one progress line on stderr, before the answer; the
/// answer alone is on stdout.
#[test]
fn the_text_mode_says_the_thinking_in_one_line_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::event_stream(thinking_stream())]);
    let out = run(
        dir.path(),
        &[
            "run",
            "What is 925 / 5?",
            "--model",
            "anthropic:claude-sonnet-4-5",
            "--base-url",
            &server.url,
            "--reasoning-effort",
            "medium",
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "925 ÷ 5 = 185\n");
    let line = "∴ thinking: The previous result was 925. Now I need to divide that by 5. 925 ÷ 5 = 185\n";
    assert_eq!(err.matches(line).count(), 1, "{err}");
}

#[test]
fn config_file_keys_set_the_reasoning_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("harnessx.toml"), "reasoning_effort = \"low\"\nreasoning_budget = 3000\n")
        .unwrap();
    let answer = || {
        Reply::event_stream(openai_sse(&[
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
        ]))
    };
    let server = Server::start(vec![answer(), answer()]);
    let base = format!("{}/v1", server.url);
    let common = ["run", "hi", "--model", "openai:o4-mini", "--base-url", &base, "--json"];
    let out = run(dir.path(), &common);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(dir.path(), &[&common[..], &["--reasoning-effort", "high"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let efforts: Vec<Value> = server.bodies().iter().map(|b| b["reasoning_effort"].clone()).collect();
    assert_eq!(efforts, [json!("low"), json!("high")]);

    // A value the key does not take is an error naming the file and line.
    std::fs::write(dir.path().join("harnessx.toml"), "reasoning_effort = \"extreme\"\n").unwrap();
    let out = run(dir.path(), &common);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("harnessx.toml") && err.contains("extreme") && err.contains("minimal"), "{err}");
}

#[test]
fn without_the_flags_nothing_about_reasoning_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(vec![Reply::event_stream(openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
    ]))]);
    let base = format!("{}/v1", server.url);
    let out = run(dir.path(), &["run", "hi", "--model", "openai:gpt-4o", "--base-url", &base]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &server.bodies()[0];
    assert!(body.get("reasoning_effort").is_none() && body.get("prompt_cache_key").is_none(), "{body}");
    let out = run(dir.path(), &["run", "hi", "--reasoning-budget", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
