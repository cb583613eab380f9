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

/// The `hook` events of a `run --json`.
fn hook_events(out: &Output) -> Vec<Value> {
    json_lines(out).into_iter().filter(|e: &Value| e["type"] == "hook").collect()
}

#[test]
fn a_prompt_hook_blocks_the_run_before_any_model_request_with_exit_status_5() {
    let dir = tempfile::tempdir().unwrap();
    // Exit 2: blocked, stderr the message; the hook reads the prompt on stdin.
    let gate = "cat > prompt.json; echo no deploys on fridays >&2; exit 2";
    let out =
        harnessx(dir.path(), &["run", "Deploy it.", "--json", "--hook", &format!("user_prompt={gate}")]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("prompt.json")).unwrap()).unwrap();
    assert_eq!(
        (&seen["hook"], &seen["prompt"], &seen["run_id"]),
        (&"user_prompt".into(), &"Deploy it.".into(), &Value::Null)
    );
    let events = json_lines(&out);
    assert!(events.iter().all(|e| e["type"] != "model_request"), "no request: {events:?}");
    assert_eq!(
        hook_events(&out),
        [serde_json::json!({"type": "hook", "hook": gate, "call_id": null, "decision": "block"})]
    );
    let end = events.last().unwrap();
    assert_eq!((&end["type"], &end["status"]), (&"run_end".into(), &"blocked".into()), "{end}");
    assert_eq!(end["blocked"], serde_json::json!({"hook": gate, "message": "no deploys on fridays"}));

    // The JSON form, on the terminal: one line naming the hook and its message.
    let script = r#"touch asked.marker; echo '{"decision": "block", "message": "not today"}'"#;
    std::fs::write(dir.path().join("gate.sh"), script).unwrap();
    let gate = "sh gate.sh";
    let out = harnessx(dir.path(), &["run", "Deploy it.", "--hook", &format!("user_prompt={gate}")]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(dir.path().join("asked.marker").exists());
    let said = stderr(&out);
    assert!(said.contains(&format!("harnessx: run blocked by hook {gate}: not today")), "{said}");
    assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty(), "no answer");
}

#[test]
fn a_prompt_hook_that_misbehaves_blocks_with_a_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for (gate, says) in [
        ("echo garbage", "hook echo garbage failed: printed something that is not a JSON object"),
        ("echo broken >&2; exit 1", "hook echo broken >&2; exit 1 failed: exited with status 1: broken"),
        (r#"echo '{"decision": "maybe"}'"#, r#"failed: answered an unknown decision "maybe""#),
    ] {
        let out = harnessx(dir.path(), &["run", "Hi.", "--json", "--hook", &format!("user_prompt={gate}")]);
        assert_eq!(out.status.code(), Some(5), "{gate}: {}", stderr(&out));
        let end = json_lines(&out).pop().unwrap();
        assert_eq!(end["status"], "blocked", "{gate}: {end}");
        let message = end["blocked"]["message"].as_str().unwrap();
        assert!(message.ends_with(says) && !message.contains('\n'), "{gate}: {message}");
    }
}

#[test]
fn a_response_hook_stops_the_run_and_a_run_end_hook_hears_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "What do my notes say?",
            "--yes",
            "--json",
            "--hook",
            "model_response=cat > response.json; echo it may not do that >&2; exit 2",
            "--hook",
            "run_end=cat > end.json",
            "--hook",
            "pre_tool_use:*=touch ran.marker",
        ],
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    assert_eq!(read("response.json")["turn"], 1);
    assert!(!dir.path().join("ran.marker").exists(), "the response's calls did not run");
    let end = read("end.json");
    assert_eq!(
        (&end["hook"], &end["status"], &end["turns"]),
        (&"run_end".into(), &"blocked".into(), &1.into())
    );
    assert_eq!(end["blocked"]["message"], "it may not do that");
    let decided: Vec<Value> = hook_events(&out).into_iter().map(|e| e["decision"].clone()).collect();
    assert_eq!(decided, ["stop"]);
}

#[test]
fn a_durable_run_blocked_by_a_hook_is_journaled_and_runs_show_lists_the_decision() {
    let dir = tempfile::tempdir().unwrap();
    let gate = "touch asked.marker; echo not today >&2; exit 2";
    let hook = format!("user_prompt={gate}");
    let out = harnessx(
        dir.path(),
        &["run", "Hi.", "--durable", "runs.db", "--run-id", "b1", "--json", "--hook", &hook],
    );
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&report["status"], &report["output"]), (&"blocked".into(), &"not today".into()), "{report}");
    assert_eq!(report["blocked"]["hook"], gate);
    let out = harnessx(dir.path(), &["runs", "list", "--durable", "runs.db"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("b1  blocked"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = harnessx(dir.path(), &["runs", "show", "b1", "--durable", "runs.db"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("status: blocked"), "{text}");
    assert!(text.contains(&format!("run blocked by hook {gate}: not today")), "{text}");
    assert!(
        text.lines().any(|l| l.contains("hook") && l.contains(&format!("prompt {gate}: block"))),
        "{text}"
    );
    // A resume applies the journaled block: the hook is not asked again.
    std::fs::remove_file(dir.path().join("asked.marker")).unwrap();
    let out = harnessx(dir.path(), &["resume", "b1", "--durable", "runs.db", "--hook", &hook]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(!dir.path().join("asked.marker").exists(), "not asked again");
}

/// Hooks that misbehave in every way at once, one per tool, from a project file: one
/// sleeps past its `timeout_seconds` (and is killed), one prints 5 MB, one exits 1, one
/// prints garbage. Each call is refused with one line naming its hook, and the run ends
/// normally with the model's answer.
#[cfg(unix)]
#[test]
fn hooks_that_hang_flood_fail_or_babble_refuse_their_calls_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "notes").unwrap();
    let hooks = [
        ("write_file", "echo $$ > sleeper.pid; exec sleep 30"),
        ("grep", "head -c 5000000 /dev/zero | tr '\\\\0' x"),
        ("list_directory", "echo broken >&2; exit 1"),
        ("glob", "echo '{not json'"),
    ];
    let toml: String = hooks
        .iter()
        .map(|(tool, command)| {
            format!("[[hooks.pre_tool_use]]\nmatcher = \"{tool}\"\ncommand = \"{command}\"\ntimeout_seconds = 1\n\n")
        })
        .collect();
    std::fs::write(dir.path().join("harnessx.toml"), toml).unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "What do my notes say?",
            "--tools",
            "write_file,grep,list_directory,glob",
            "--yes",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    let refusal = |tool: &str| ends.iter().find(|(t, _, _)| t == tool).map(|(_, e, c)| (*e, c.clone()));
    let expected = [
        ("write_file", "hook echo $$ > sleeper.pid; exec sleep 30 failed: did not finish within 1s"),
        ("grep", "failed: printed more than 1048576 bytes"),
        ("list_directory", "hook echo broken >&2; exit 1 failed: exited with status 1: broken"),
        ("glob", "hook echo '{not json' failed: printed something that is not a JSON object"),
    ];
    for (tool, message) in expected {
        let (is_error, content) = refusal(tool).unwrap_or_else(|| panic!("no {tool} call: {ends:?}"));
        assert!(is_error && content.contains(message) && !content.contains('\n'), "{tool}: {content}");
    }
    // The run answered, and the sleeping hook did not outlive it.
    let last = json_lines(&out).into_iter().last().unwrap();
    assert_eq!(last["type"], "run_end", "{last}");
    // (Killed, it may linger a moment, and then as a zombie until whoever inherited it
    // reaps it: neither runs.)
    let pid = std::fs::read_to_string(dir.path().join("sleeper.pid")).unwrap();
    let running = || {
        std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
            .ok()
            .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])))
            .is_some_and(|dead| !dead)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!running(), "the hook that passed its timeout still runs");
}

/// A post hook that fails keeps the result and says so on stderr, in one line; so does a
/// run-end hook, which changes nothing.
#[test]
fn a_failing_post_hook_keeps_the_result_and_says_so_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "the code is 1234").unwrap();
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "What do my notes say?",
            "--tools",
            "list_directory,read_file",
            "--json",
            "--hook",
            "post_tool_use:read_file=echo oops >&2; exit 1",
            "--hook",
            "run_end=exit 7",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    assert!(ends.iter().any(|(t, e, c)| t == "read_file" && !e && c.contains("1234")), "{ends:?}");
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l == "harnessx: hook echo oops >&2; exit 1 failed: exited with status 1: oops; the result was kept"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l
                == "harnessx: hook exit 7 failed: exited with status 7 (nothing on stderr); it was ignored"),
        "{err}"
    );
}

/// `{"decision": "allow", "arguments": ..}` rewrites the call and runs it without asking
/// (no `--yes`, and nobody on a terminal to ask): the write lands where the hook sent it.
/// The same answer onto a path a deny rule covers is refused.
#[test]
fn allow_with_arguments_rewrites_and_skips_the_question_but_not_a_deny_rule() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sandbox")).unwrap();
    let allow = |path: &str| {
        format!(
            r#"pre_tool_use:write_file=echo '{{"decision": "allow", "arguments": {{"path": "{path}", "content": "x"}}}}'"#
        )
    };
    let out = harnessx(
        dir.path(),
        &["run", "Write it.", "--tools", "write_file", "--json", "--hook", &allow("sandbox/a")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("sandbox/a")).unwrap(), "x");
    assert!(!dir.path().join("a").exists());
    let decided: Vec<Value> = json_lines(&out)
        .into_iter()
        .filter(|e: &Value| e["type"] == "hook")
        .map(|e| e["decision"].clone())
        .collect();
    assert_eq!(decided, ["allow"]);

    let out = harnessx(
        dir.path(),
        &[
            "run",
            "Write it.",
            "--tools",
            "write_file",
            "--json",
            "--deny",
            "write_file(path=secrets/**)",
            "--hook",
            &allow("secrets/key"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    assert!(ends.iter().any(|(t, e, _)| t == "write_file" && *e), "{ends:?}");
    assert!(!dir.path().join("secrets").exists());
}
