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

/// A rewrite moves the test model's write into another folder: the file lands there,
/// not where the model asked, and the history shows the arguments that ran.
#[test]
fn a_rewrite_moves_a_write_into_another_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sandbox")).unwrap();
    std::fs::write(
        dir.path().join("move.py"),
        "import json, sys\n\
         call = json.load(sys.stdin)\n\
         open('seen.json', 'w').write(json.dumps(call))\n\
         arguments = dict(call['arguments'], path='sandbox/' + call['arguments']['path'])\n\
         print(json.dumps({'arguments': arguments}))\n",
    )
    .unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "Write it.",
            "--tools",
            "write_file",
            "--yes",
            "--json",
            "--hook",
            "pre_tool_use:write_file=python3 move.py",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The hook saw the model's call, with the run's ids.
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("seen.json")).unwrap()).unwrap();
    assert_eq!(
        (&seen["hook"], &seen["tool"], &seen["arguments"]["path"]),
        (&"pre_tool_use".into(), &"write_file".into(), &"a".into()),
        "{seen}"
    );
    assert!(seen["call_id"].as_str().is_some_and(|id| !id.is_empty()), "{seen}");
    // The write went where the hook sent it.
    assert_eq!(std::fs::read_to_string(dir.path().join("sandbox/a")).unwrap(), "a");
    assert!(!dir.path().join("a").exists(), "written where the model asked");
    let ends = ends(&out);
    assert!(ends.iter().any(|(t, e, _)| t == "write_file" && !e), "{ends:?}");
    let decided: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|e: &Value| e["type"] == "hook")
        .map(|e| e["decision"].clone())
        .collect();
    assert_eq!(decided, ["rewrite"]);
}

/// A rewrite that would get past a deny rule is refused: the rules are checked again on
/// the arguments the hook gave, and the file is not written anywhere.
#[test]
fn a_rewrite_cannot_get_past_a_deny_rule() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "Write it.",
            "--tools",
            "write_file",
            "--yes",
            "--json",
            "--deny",
            "write_file(path=secrets/**)",
            "--hook",
            r#"pre_tool_use:write_file=echo '{"arguments": {"path": "secrets/key", "content": "x"}}'"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    let refused = ends.iter().find(|(t, _, _)| t == "write_file").expect("a write_file call");
    assert!(refused.1, "{refused:?}");
    assert!(!dir.path().join("secrets").exists() && !dir.path().join("a").exists());
}

/// A kill -9 between a hook's decision and the call: the resume applies the journaled
/// decision (the rewritten command) and does not ask the hook again. run_bash is
/// `manual`, so the resume asks what happened instead of running it twice; once
/// answered, the run completes. The hook ran once, the rewritten command once, the
/// model's own command never.
#[cfg(unix)]
#[test]
fn after_a_kill_the_resume_applies_the_journaled_hook_decision_without_asking_the_hook() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // The test model calls run_bash with the command `a`; the hook makes it `b`.
    for (name, body) in
        [("a", "echo ran >> model.count\n"), ("b", "echo ran >> count\ntouch started\nsleep 5\n")]
    {
        let script = bin.join(name);
        std::fs::write(&script, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let hook = r#"pre_tool_use:run_bash=echo asked >> hook.count; echo '{"arguments": {"command": "b"}}'"#;
    let run = [
        "run",
        "Go.",
        "--tools",
        "run_bash",
        "--yes",
        "--durable",
        "runs.db",
        "--run-id",
        "k",
        "--hook",
        hook,
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(run)
        .current_dir(dir.path())
        .env("PATH", &path)
        .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.path().join("started").exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let count = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    assert_eq!(count("hook.count"), "asked\n");

    let with = |args: &[&str]| {
        Binary::new(env!("CARGO_BIN_EXE_harnessx"))
            .env("PATH", &path)
            .env("XDG_CONFIG_HOME", dir.path().join("no-config").to_str().unwrap())
            .run(dir.path(), args)
    };
    let resume = ["resume", "k", "--durable", "runs.db", "--tools", "run_bash", "--yes", "--hook", hook];
    let out = with(&resume);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(count("hook.count"), "asked\n", "the hook was asked again");
    // The journal holds the hook's decision with the call.
    let shown = with(&["runs", "show", "k", "--durable", "runs.db", "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let entries = shown["entries"].as_array().unwrap();
    let hooked = entries.iter().find(|e| e["entry"]["kind"] == "hook").expect("a hook entry");
    assert_eq!(hooked["entry"]["outcome"]["rewritten"], serde_json::json!({"command": "b"}), "{hooked}");
    let call = shown["report"]["needs_input"][0]["call_id"].as_str().unwrap().to_owned();

    let out = with(&["answer", "k", &call, "It ran once.", "--durable", "runs.db"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = with(&resume);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(count("hook.count"), "asked\n", "the hook was asked again");
    assert_eq!(count("count"), "ran\n", "the rewritten command ran again");
    assert_eq!(count("model.count"), "", "the model's own command ran");
}
