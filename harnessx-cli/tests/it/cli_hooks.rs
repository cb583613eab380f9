//! Command hooks through the `harnessx` command (`--hook EVENT:MATCHER=COMMAND`), judged by
//! marker files: a refusal, a redaction, and a hook that misbehaves.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr};
use serde_json::Value;

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    let config = dir.join("no-config");
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("XDG_CONFIG_HOME", config.to_str().unwrap())
        .run(dir, args)
}

/// The `tool_call_end` events of a `run --json`, by tool name.
fn ends(out: &Output) -> Vec<(String, bool, String)> {
    json_lines(out)
        .into_iter()
        .filter(|e: &Value| e["type"] == "tool_call_end")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["is_error"] == true,
                e["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_pre_hook_refuses_writes_and_a_post_hook_redacts_reads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "the code is 1234").unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "What do my notes say?",
            "--yes",
            "--json",
            // The refusal leaves a marker: the hook ran, and the write did not.
            "--hook",
            "pre_tool_use:write_file=touch refused.marker; echo no writes here >&2; exit 2",
            "--hook",
            r#"post_tool_use:read_file(path=notes.md)=echo '{"content": "[redacted]"}'"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    assert!(ends.contains(&("write_file".into(), true, "no writes here".into())), "{ends:?}");
    assert!(ends.iter().any(|(t, e, c)| t == "read_file" && !e && c == "[redacted]"), "{ends:?}");
    assert!(ends.iter().all(|(_, _, c)| !c.contains("1234")), "{ends:?}");
    assert!(dir.path().join("refused.marker").exists());
    // Each decision is an event: `{"type": "hook", "hook", "call_id", "decision"}`.
    let hooks: Vec<Value> = json_lines(&out).into_iter().filter(|e: &Value| e["type"] == "hook").collect();
    let decided: Vec<&str> = hooks.iter().map(|e| e["decision"].as_str().unwrap()).collect();
    assert_eq!(decided, ["deny", "replace"], "{hooks:?}");
    assert_eq!(
        hooks[0]["hook"], "touch refused.marker; echo no writes here >&2; exit 2",
        "named by its command"
    );
    assert!(hooks.iter().all(|e| e["call_id"].as_str().is_some_and(|id| !id.is_empty())), "{hooks:?}");
    // The test model writes only its own scratch file: refused, it is not there.
    assert!(!dir.path().join("a").exists());
}

#[test]
fn a_hook_that_misbehaves_refuses_the_call_with_a_line_naming_it_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "What do my notes say?",
            "--yes",
            "--json",
            "--hook",
            "pre_tool_use:write_file=echo garbage",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    let refused = ends.iter().find(|(t, _, _)| t == "write_file").expect("a write_file call");
    assert!(refused.1, "{refused:?}");
    assert_eq!(refused.2, "hook echo garbage failed: printed something that is not a JSON object");
}

#[test]
fn a_malformed_hook_flag_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(dir.path(), &["run", "hi", "--hook", "before:*=true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown hook event \"before\""), "{}", stderr(&out));
}
