//! Durable runs from the command line, end to end on the built binary and the test model:
//! `run --durable`, the pause on an ASK call with no terminal (exit 3), `approve` and
//! `answer` from another process, `resume`, `runs list | show`, and the errors.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use serde_json::Value;

fn binary() -> Binary {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
}

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    binary().run(dir, args)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

fn json(out: &Output) -> Value {
    serde_json::from_str(stdout(out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// `runs show ID --json`.
fn show(dir: &Path, run_id: &str) -> Value {
    let out = harnessx(dir, &["runs", "show", run_id, "--durable", "runs.db", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)
}

/// The kinds of a run's entries, in order.
fn entry_kinds(shown: &Value) -> Vec<String> {
    shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entry"]["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// The entries of `kind` about `tool` (a call start names it as `tool`, a result as `result.name`).
fn entries_for(shown: &Value, kind: &str, tool: &str) -> usize {
    shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["entry"]["kind"] == kind)
        .filter(|e| e["entry"]["tool"] == tool || e["entry"]["result"]["name"] == tool)
        .count()
}

/// Starts a durable run of `write_file` (which asks) in `dir`, with no terminal: it pauses.
/// Returns the call id it waits on.
fn paused_write(dir: &Path, run_id: &str) -> String {
    let out = harnessx(
        dir,
        &["run", "Write it.", "--tools", "write_file", "--durable", "runs.db", "--run-id", run_id],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let shown = show(dir, run_id);
    assert_eq!(shown["report"]["run"]["status"], "needs_input", "{shown}");
    shown["report"]["needs_input"][0]["call_id"].as_str().unwrap().to_owned()
}

#[test]
fn a_durable_run_completes_and_runs_list_and_show_report_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(
        dir.path(),
        &["run", "Look around.", "--tools", "list_directory", "--durable", "runs.db", "--run-id", "first"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Ran "), "{}", stdout(&out));
    assert!(stderr(&out).contains("harnessx: run id first\n"), "{}", stderr(&out));
    assert!(dir.path().join("runs.db").is_file());

    // A second run with a generated id, as JSON.
    let out = harnessx(
        dir.path(),
        &["run", "Again.\nOn two lines.", "--tools", "list_directory", "--durable", "runs.db", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stopped = json(&out);
    let generated = stopped["run_id"].as_str().unwrap().to_owned();
    assert!(generated.starts_with("run-"), "{stopped}");
    assert!(stderr(&out).contains(&format!("harnessx: run id {generated}\n")), "{}", stderr(&out));
    assert_eq!(stopped["status"], "completed");
    assert!(stopped["output"].as_str().unwrap().starts_with("Ran "), "{stopped}");
    assert_eq!(stopped["needs_input"], Value::Array(Vec::new()));
    assert_eq!(stopped.as_object().unwrap().len(), 4, "{stopped}");

    // Newest first, one line each, the prompt on one line.
    let out = harnessx(dir.path(), &["runs", "list", "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let list = stdout(&out);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with(&format!("{generated}  completed")), "{list}");
    assert!(lines[0].ends_with("Again. On two lines."), "{list}");
    assert!(lines[1].starts_with("first  completed"), "{list}");
    let out = harnessx(dir.path(), &["runs", "list", "--durable", "runs.db", "--json"]);
    let runs = json(&out);
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    assert_eq!(runs[1]["run_id"], "first");

    let shown = show(dir.path(), "first");
    assert_eq!(shown["report"]["run"]["run_id"], "first");
    assert_eq!(shown["report"]["run"]["status"], "completed");
    assert!(shown["report"]["run"]["output"].as_str().unwrap().starts_with("Ran "), "{shown}");
    let kinds = entry_kinds(&shown);
    assert_eq!(kinds.first().map(String::as_str), Some("model_response"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("final"), "{kinds:?}");
    assert_eq!(entries_for(&shown, "call_result", "list_directory"), 1, "{shown}");

    let out = harnessx(dir.path(), &["runs", "show", "first", "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("status: completed"), "{text}");
    assert!(text.contains("final"), "{text}");
    assert!(text.lines().any(|l| l.contains("call_result") && l.contains("list_directory ok")), "{text}");
}

#[test]
fn an_asking_call_without_a_terminal_pauses_with_exit_3_and_approve_then_resume_writes_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(
        dir.path(),
        &["run", "Write it.", "--tools", "write_file", "--durable", "runs.db", "--run-id", "w"],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(!dir.path().join("a").exists(), "a write happened without approval");
    let call = show(dir.path(), "w")["report"]["needs_input"][0]["call_id"].as_str().unwrap().to_owned();
    let err = stderr(&out);
    assert!(err.contains(&format!("approval of call {call}: write_file")), "{err}");
    assert!(err.contains(&format!("harnessx approve w {call} --durable runs.db")), "{err}");
    assert!(err.contains("harnessx resume w --durable runs.db --tools write_file\n"), "{err}");

    // Another process approves; that only records the decision.
    let out = harnessx(dir.path(), &["approve", "w", &call, "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!dir.path().join("a").exists(), "approve ran the call");

    let out =
        harnessx(dir.path(), &["resume", "w", "--durable", "runs.db", "--tools", "write_file", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "completed", "{stopped}");
    assert!(stopped["output"].as_str().unwrap().contains("write_file: Created"), "{stopped}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a")).unwrap(), "a");
    let shown = show(dir.path(), "w");
    assert_eq!(entries_for(&shown, "call_start", "write_file"), 1, "{shown}");
    assert_eq!(entries_for(&shown, "call_result", "write_file"), 1, "{shown}");
    assert_eq!(entries_for(&shown, "approval", "write_file"), 1, "{shown}");

    // A completed run is not run again.
    std::fs::remove_file(dir.path().join("a")).unwrap();
    let out = harnessx(dir.path(), &["resume", "w", "--durable", "runs.db", "--tools", "write_file"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains(r#"run "w" is already completed"#), "{}", stderr(&out));
    assert!(!dir.path().join("a").exists(), "a completed run wrote again");
}

#[test]
fn approve_with_decision_deny_answers_permission_denied_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let call = paused_write(dir.path(), "d");
    let out = harnessx(dir.path(), &["approve", "d", &call, "--durable", "runs.db", "--decision", "deny"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = harnessx(dir.path(), &["resume", "d", "--durable", "runs.db", "--tools", "write_file"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("write_file (error): Permission denied"), "{}", stdout(&out));
    assert!(!dir.path().join("a").exists());
}

#[test]
fn approving_a_call_the_run_does_not_wait_on_exits_1_and_says_what_it_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let call = paused_write(dir.path(), "p");
    let out = harnessx(dir.path(), &["approve", "p", "no_such_call", "--durable", "runs.db"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!(r#"it waits for: approval of "{call}""#)), "{}", stderr(&out));
    let out = harnessx(dir.path(), &["answer", "p", &call, "it did", "--durable", "runs.db"]);
    assert_eq!(code(&out), 1, "an approval is not an answer: {}", stderr(&out));
    assert_eq!(show(dir.path(), "p")["report"]["run"]["status"], "needs_input");
}

#[test]
fn resume_with_other_tools_is_refused_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    paused_write(dir.path(), "m");
    let out =
        harnessx(dir.path(), &["resume", "m", "--durable", "runs.db", "--tools", "read_file,write_file"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains(r#"run "m" was started with tools [write_file"#), "{}", stderr(&out));
    assert!(!dir.path().join("a").exists());
    // Still waiting, and the same flags resume it (it pauses again: nobody approved).
    let out =
        harnessx(dir.path(), &["resume", "m", "--durable", "runs.db", "--tools", "write_file", "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "needs_input", "{stopped}");
    assert_eq!(stopped["output"], Value::Null, "{stopped}");
    let needs = stopped["needs_input"].as_array().unwrap();
    assert_eq!(needs.len(), 1, "{stopped}");
    assert_eq!(
        (&needs[0]["kind"], &needs[0]["tool"]),
        (&Value::from("approval"), &Value::from("write_file"))
    );
}

#[test]
fn a_run_out_of_turns_exits_4_with_the_resume_command_and_resumes_with_more_turns() {
    let dir = tempfile::tempdir().unwrap();
    // One model request: the test model calls its tools and has no turn left to answer.
    let args = [
        "run",
        "Look.",
        "--tools",
        "list_directory",
        "--max-turns",
        "1",
        "--durable",
        "runs.db",
        "--run-id",
        "f",
    ];
    let out = harnessx(dir.path(), &args);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("harnessx: run f stopped at its turn limit (--max-turns)"), "{err}");
    assert!(
        err.contains("harnessx resume f --durable runs.db --tools list_directory --max-turns 1\n"),
        "{err}"
    );
    let out = harnessx(dir.path(), &["runs", "list", "--durable", "runs.db"]);
    assert!(stdout(&out).starts_with("f  limit_reached"), "{}", stdout(&out));

    // max_turns is not in the fingerprint: more turns finish it, from the journaled first turn.
    let out = harnessx(
        dir.path(),
        &["resume", "f", "--durable", "runs.db", "--tools", "list_directory", "--max-turns", "2", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "completed");
    let shown = show(dir.path(), "f");
    assert_eq!(entries_for(&shown, "call_result", "list_directory"), 1, "the call ran again: {shown}");
}

#[test]
fn run_id_without_durable_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(dir.path(), &["run", "hi", "--tools", "list_directory", "--run-id", "x"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--durable"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "the run must not start: {}", stdout(&out));
}

#[test]
fn commands_on_a_missing_journal_exit_1_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 5] = [
        &["runs", "list", "--durable", "missing.db"],
        &["runs", "show", "r", "--durable", "missing.db"],
        &["resume", "r", "--durable", "missing.db"],
        &["approve", "r", "c", "--durable", "missing.db"],
        &["answer", "r", "c", "text", "--durable", "missing.db"],
    ];
    for args in commands {
        let out = harnessx(dir.path(), args);
        assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("no journal at missing.db"), "{args:?}: {}", stderr(&out));
        assert!(!dir.path().join("missing.db").exists(), "{args:?} created the journal");
    }
}

#[test]
fn an_unknown_run_id_exits_1_with_the_journals_error() {
    let dir = tempfile::tempdir().unwrap();
    paused_write(dir.path(), "known");
    for args in [
        &["runs", "show", "nope", "--durable", "runs.db"][..],
        &["resume", "nope", "--durable", "runs.db", "--tools", "write_file"],
    ] {
        let out = harnessx(dir.path(), args);
        assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(r#"no run with id "nope""#), "{args:?}: {}", stderr(&out));
    }
    // A run id in use is refused, not overwritten.
    let out = harnessx(
        dir.path(),
        &["run", "Again.", "--tools", "write_file", "--durable", "runs.db", "--run-id", "known"],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains(r#"a run with id "known" already exists"#), "{}", stderr(&out));
}

/// A `manual` call (run_bash) cut off by a kill: resume waits for an answer (exit 3)
/// instead of running the command again; `answer` from another process, then `resume`,
/// completes with the answer as the call's result. The command ran exactly once.
#[cfg(unix)]
#[test]
fn a_manual_call_cut_off_by_a_kill_waits_for_an_answer_and_is_never_run_again() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // The test model calls run_bash with the command `a`: this script, found on PATH.
    let script = bin.join("a");
    std::fs::write(&script, "#!/bin/sh\necho ran >> count\ntouch started\nsleep 5\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = ["run", "Go.", "--tools", "run_bash", "--yes", "--durable", "runs.db", "--run-id", "k"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(run)
        .current_dir(dir.path())
        .env("PATH", &path)
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

    let with_path = binary().env("PATH", &path);
    let resume = ["resume", "k", "--durable", "runs.db", "--tools", "run_bash", "--yes"];
    let out = with_path.run(dir.path(), &resume);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let needs = show(dir.path(), "k")["report"]["needs_input"].clone();
    assert_eq!(needs[0]["kind"], "outcome", "{needs}");
    let call = needs[0]["call_id"].as_str().unwrap().to_owned();
    assert!(
        stderr(&out).contains(&format!("harnessx answer k {call} 'WHAT HAPPENED' --durable runs.db")),
        "{}",
        stderr(&out)
    );

    let out = harnessx(dir.path(), &["answer", "k", &call, "It ran once.", "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = with_path.run(dir.path(), &resume);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("run_bash: It ran once."), "{}", stdout(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("count")).unwrap(), "ran\n", "the command ran again");
}

/// On a terminal a durable run asks like a plain run does (no pause), and the answer is
/// journaled before the call runs.
#[cfg(unix)]
#[test]
fn on_a_terminal_a_durable_run_asks_and_journals_the_answer() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{} run 'Write it.' --tools write_file --durable runs.db --run-id t",
        env!("CARGO_BIN_EXE_harnessx")
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let screen = stdout(&out);
    assert!(screen.contains("Allow write_file"), "{screen}");
    assert!(screen.contains("write_file: Created"), "{screen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a")).unwrap(), "a");
    let shown = show(dir.path(), "t");
    assert_eq!(shown["report"]["run"]["status"], "completed", "{shown}");
    let approval = shown["entries"].as_array().unwrap().iter().find(|e| e["entry"]["kind"] == "approval");
    assert_eq!(approval.map(|e| &e["entry"]["decision"]), Some(&Value::from("approve")), "{shown}");
    assert!(!entry_kinds(&shown).contains(&"paused".to_owned()), "{shown}");
}
