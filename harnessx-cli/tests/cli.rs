//! The `harnessx` command end to end: exit statuses, JSON output, permissions, the
//! containment of `--base-path`, and `run` with the test model.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    dir
}

fn call_json(dir: &Path, extra: &[&str]) -> (Value, i32) {
    let mut args = vec!["tools", "call"];
    args.extend_from_slice(extra);
    args.push("--json");
    let out = harnessx(dir, &args);
    let v: Value =
        serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    (v, out.status.code().unwrap())
}

#[test]
fn tools_list_shows_the_filesystem_bundle() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["tools", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> =
        stdout(&out).lines().map(|l| l.split_whitespace().next().unwrap_or("").to_owned()).collect();
    for tool in
        ["read_file", "write_file", "edit_file", "delete", "glob", "grep", "list_directory", "generate_file"]
    {
        assert!(names.contains(&tool.to_owned()), "{tool} missing from {names:?}");
    }
    let only = harnessx(dir.path(), &["tools", "list", "--tools", "read_file,grep"]);
    assert_eq!(stdout(&only).lines().count(), 2);
}

#[test]
fn tools_schema_prints_the_canonical_schema_without_configured_limits() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["tools", "schema", "read_file"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let spec: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(spec["name"], "read_file");
    assert_eq!(spec["input_schema"]["type"], "object");
    assert!(spec["input_schema"]["properties"]["path"].is_object());
    assert!(!stdout(&out).contains("max_read_bytes"));
    let unknown = harnessx(dir.path(), &["tools", "schema", "reed_file"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("Did you mean: read_file"), "{}", stderr(&unknown));
}

#[test]
fn tools_call_returns_the_result_with_exit_0_and_json_has_exactly_three_keys() {
    let dir = workspace();
    let (v, code) = call_json(dir.path(), &["read_file", r#"{"path": "notes.txt"}"#, "--base-path", "."]);
    assert_eq!(code, 0);
    assert_eq!(v["name"], "read_file");
    assert_eq!(v["is_error"], false);
    assert!(v["content"].as_str().unwrap().contains("alpha"));
    assert_eq!(v.as_object().unwrap().len(), 3);

    let plain = harnessx(dir.path(), &["tools", "call", "read_file", r#"{"path": "notes.txt"}"#]);
    assert!(plain.status.success());
    assert!(stdout(&plain).contains("beta"));
}

#[test]
fn tools_call_goes_through_name_repair_validation_and_parsing() {
    let dir = workspace();
    let (v, code) = call_json(dir.path(), &["Read-File", r#"{"path": "notes.txt"}"#, "--base-path", "."]);
    assert_eq!((code, &v["name"], &v["is_error"]), (0, &Value::from("read_file"), &Value::from(false)));

    let (v, code) = call_json(dir.path(), &["reed_file", r#"{"path": "notes.txt"}"#]);
    assert_eq!(code, 1);
    assert!(v["content"].as_str().unwrap().contains("Did you mean: read_file"), "{v}");

    let (v, code) = call_json(dir.path(), &["read_file", r#"{"path": "notes.txt""#]);
    assert_eq!(code, 1);
    assert!(v["content"].as_str().unwrap().contains("not valid JSON (EOF while parsing"), "{v}");

    let (v, code) = call_json(dir.path(), &["read_file", r#"{"path": 7}"#]);
    assert_eq!(code, 1);
    assert_eq!(v["content"], r#"invalid arguments for read_file: path: 7 is not of type "string""#);
}

#[test]
fn base_path_contains_the_call_and_hides_host_paths() {
    let dir = workspace();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    for path in ["../notes.txt", "/etc/passwd", "sub/../../notes.txt"] {
        let args = format!(r#"{{"path": "{path}"}}"#);
        let (v, code) = call_json(dir.path(), &["read_file", &args, "--base-path", "root"]);
        assert_eq!(code, 1, "{path}: {v}");
        let text = v["content"].as_str().unwrap();
        assert!(!text.contains("alpha"), "{path} escaped: {text}");
        assert!(!text.contains(dir.path().to_str().unwrap()), "host path leaked: {text}");
    }
}

#[test]
fn permission_flags_follow_the_precedence_rules() {
    let dir = workspace();
    let read = r#"{"path": "notes.txt"}"#;
    let (v, code) = call_json(dir.path(), &["read_file", read, "--deny", "read_file"]);
    assert_eq!((code, v["content"].as_str().unwrap()), (1, "Permission denied"));
    // ASK with no terminal to answer on is denied.
    let (v, code) = call_json(dir.path(), &["read_file", read, "--default-permission", "ask"]);
    assert_eq!((code, v["content"].as_str().unwrap()), (1, "Permission denied"));
    let (v, code) =
        call_json(dir.path(), &["read_file", read, "--default-permission", "deny", "--allow", "read_file"]);
    assert_eq!((code, v["is_error"].as_bool().unwrap()), (0, false));
    // A repaired name is still the denied tool.
    let (v, code) = call_json(dir.path(), &["READ-FILE", read, "--deny", "read_file"]);
    assert_eq!((code, v["content"].as_str().unwrap()), (1, "Permission denied"));
}

#[test]
fn usage_errors_exit_2() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["tools", "call", "read_file", "{}", "--tools", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("known: read_file"), "{}", stderr(&out));
    let out = harnessx(dir.path(), &["tools", "call", "read_file", "{}", "--base-path", "missing-dir"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let out = harnessx(dir.path(), &["tools", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = harnessx(dir.path(), &["run", "hi", "--model", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}

fn events(out: &Output) -> Vec<Value> {
    stdout(out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn run_json_prints_one_event_per_line_and_denies_writes_without_a_terminal() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["run", "Tidy up.", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events = events(&out);
    assert!(events.iter().all(|e| e["type"].is_string()));
    let starts: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call_start").collect();
    assert!(starts.len() >= 8, "the test model calls every tool: {starts:?}");
    for s in &starts {
        assert!(s["call_id"].is_string() && s["name"].is_string(), "{s}");
    }
    let ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call_end").collect();
    for tool in ["write_file", "edit_file", "delete", "generate_file"] {
        let end = ends.iter().find(|e| e["name"] == tool).unwrap_or_else(|| panic!("{tool} not called"));
        assert_eq!(end["content"], "Permission denied", "{tool}");
    }
    assert_eq!(events.last().unwrap()["type"], "run_end");
    assert!(!dir.path().join("a").exists(), "a write happened without approval");
    assert!(!dir.path().join("output").exists(), "a download was generated without approval");
}

#[test]
fn run_yes_approves_writes_inside_the_base_path() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["run", "Write it.", "--tools", "write_file", "--yes", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let end =
        events(&out).into_iter().find(|e| e["type"] == "tool_call_end" && e["name"] == "write_file").unwrap();
    assert_eq!(end["is_error"], false, "{end}");
    assert!(dir.path().join("a").exists());
}

#[test]
fn run_prints_text_and_progress_lines() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["run", "Look around.", "--tools", "list_directory"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Ran "), "{}", stdout(&out));
    assert!(stdout(&out).contains("list_directory: notes.txt"), "{}", stdout(&out));
    assert!(stderr(&out).contains("→ list_directory"), "{}", stderr(&out));
}

/// Runs `harnessx run` on a pseudo-terminal (util-linux `script`, part of every Debian
/// install) and answers the approval question with `answer`.
fn run_on_terminal(dir: &Path, answer: &str) -> Output {
    use std::io::Write as _;
    let command = format!("{} run 'Write it.' --tools write_file", env!("CARGO_BIN_EXE_harnessx"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    child.stdin.take().unwrap().write_all(format!("{answer}\n").as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn on_a_terminal_run_asks_before_a_write_and_obeys_the_answer() {
    let dir = workspace();
    let out = run_on_terminal(dir.path(), "n");
    let screen = stdout(&out);
    assert!(screen.contains("Allow write_file"), "{screen}");
    assert!(screen.contains("write_file: Permission denied"), "{screen}");
    assert!(!dir.path().join("a").exists());

    let out = run_on_terminal(dir.path(), "y");
    assert!(stdout(&out).contains("✓ write_file: Created"), "{}", stdout(&out));
    assert!(dir.path().join("a").exists());
}
