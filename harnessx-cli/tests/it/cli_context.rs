//! `harnessx run --max-result-chars N --context-window N` against a loopback
//! OpenAI-compatible server that enforces its window (HTTP 400 `context_length_exceeded`
//! past it): a run that reads a large file over and over completes, with `compaction`
//! events in `--json`, no refused request, and the capped results saved under
//! `.harnessx/results/`; bad values are one-line usage errors; a `harnessx.toml` sets both.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr};
use harnessx_test_support::window::{Dialect, WindowServer};

fn run(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "test-key").run(dir, args)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..3_000).map(|i| format!("line {i}: some words of a long file\n")).collect();
    std::fs::write(dir.path().join("big.txt"), text).unwrap();
    dir
}

fn server() -> WindowServer {
    WindowServer::calling(Dialect::OpenAi, 8_000, 15, "read_file", Some(r#"{"path": "big.txt"}"#))
}

#[test]
fn a_long_run_compacts_and_caps_within_the_window() {
    let dir = workspace();
    let server = server();
    let base = format!("{}/v1", server.server.url);
    let args = ["run", "Read big.txt again and again.", "--model", "openai:local-model", "--base-url", &base];
    let out = run(
        dir.path(),
        &[&args[..], &["--max-result-chars", "3000", "--context-window", "8000", "--json"]].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    let compactions: Vec<_> = events.iter().filter(|e| e["type"] == "compaction").collect();
    assert!(!compactions.is_empty(), "{events:?}");
    for c in &compactions {
        let (before, after) = (c["tokens_before"].as_u64().unwrap(), c["tokens_after"].as_u64().unwrap());
        assert!(after < before, "{c}");
        assert_eq!(c.as_object().unwrap().len(), 3, "{c}");
    }
    assert_eq!(events.last().unwrap()["type"], "run_end");
    assert_eq!(events.last().unwrap()["output"], "done after 15 pages");
    assert!(server.seen().iter().all(|s| !s.refused), "no request over the window reached the server");
    // The results reached the model capped, the whole text saved for the file tools.
    let ends: Vec<_> = events.iter().filter(|e| e["type"] == "tool_call_end").collect();
    let content = ends[0]["content"].as_str().unwrap();
    assert!(
        content.chars().count() <= 3_000 && content.contains(".harnessx/results/read_file-call_1.txt"),
        "{content}"
    );
    assert!(dir.path().join(".harnessx/results/read_file-call_1.txt").is_file());
}

#[test]
fn the_flags_refuse_bad_values_in_one_line() {
    let dir = workspace();
    for (flag, value) in
        [("--context-window", "12"), ("--context-window", "lots"), ("--max-result-chars", "many")]
    {
        let out = run(dir.path(), &["run", "hi", flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = stderr(&out);
        assert!(err.lines().next().unwrap().contains(flag), "{err}");
    }
}

#[test]
fn a_config_file_sets_both() {
    let dir = workspace();
    let server = server();
    let base = format!("{}/v1", server.server.url);
    std::fs::write(dir.path().join("harnessx.toml"), "max_result_chars = 2500\ncontext_window = 8000\n")
        .unwrap();
    let out = run(
        dir.path(),
        &["run", "Read big.txt.", "--model", "openai:local-model", "--base-url", &base, "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    let end = events.iter().find(|e| e["type"] == "tool_call_end").unwrap();
    assert!(end["content"].as_str().unwrap().chars().count() <= 2_500);
    assert!(events.iter().any(|e| e["type"] == "compaction"), "the window from the file is used");
}
