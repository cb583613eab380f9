//! `run_bash` through the `harnessx` command: `tools call` on both sandboxes, the
//! environment a command gets, and `run` asking before it.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use harnessx_test_support::system::ensure_debian_package;
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).env("OPENAI_API_KEY", "sk-host-secret").run(dir, args)
}

fn call(dir: &Path, command: &str, extra: &[&str]) -> (Value, Output) {
    let args = json!({ "command": command }).to_string();
    let mut argv = vec!["tools", "call", "run_bash", args.as_str(), "--json"];
    argv.extend_from_slice(extra);
    let out = harnessx(dir, &argv);
    let v = serde_json::from_str(stdout(&out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    (v, out)
}

#[test]
fn tools_call_runs_bash_locally_by_default_with_the_exit_code_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = call(dir.path(), "echo out; sleep 0.1; echo err >&2; exit 4", &[]);
    assert_eq!(out.status.code(), Some(0), "a command's own failure is a result: {}", stderr(&out));
    assert_eq!(
        v,
        json!({"name": "run_bash", "is_error": false, "content": "[stdout]\nout\n[stderr]\nerr\n[exit code 4]"})
    );
}

#[test]
fn the_host_environment_and_its_keys_stay_out_of_commands() {
    let dir = tempfile::tempdir().unwrap();
    let (v, _) = call(dir.path(), "env", &["--sandbox", "local"]);
    let content = v["content"].as_str().unwrap();
    assert!(!content.contains("sk-host-secret") && !content.contains("_API_KEY"), "{content}");
    assert!(content.contains("TERM=dumb"), "{content}");
}

#[test]
fn local_runs_in_the_base_path() {
    let dir = tempfile::tempdir().unwrap();
    let (v, _) =
        call(dir.path(), "pwd", &["--sandbox", "local", "--base-path", dir.path().to_str().unwrap()]);
    let canonical = dir.path().canonicalize().unwrap();
    assert!(v["content"].as_str().unwrap().contains(canonical.to_str().unwrap()), "{v}");
}

#[test]
fn bubblewrap_writes_only_its_workspace_which_is_the_base_path() {
    if ensure_debian_package("bubblewrap", "bwrap").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "pwd; echo made > made.txt; (echo x > /etc/hx-cli-probe) 2>/dev/null || echo etc-refused";
    let (v, out) =
        call(dir.path(), script, &["--sandbox", "bubblewrap", "--base-path", dir.path().to_str().unwrap()]);
    assert_eq!(v["is_error"], false, "{v} {}", stderr(&out));
    assert_eq!(v["content"], "[stdout]\n/workspace\netc-refused\n[exit code 0]");
    assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).unwrap(), "made\n");
    // The file tools act on the same workspace, under its name inside the sandbox too.
    let args = json!({"path": "/workspace/made.txt"}).to_string();
    let base = dir.path().to_str().unwrap();
    let out = harnessx(
        dir.path(),
        &["tools", "call", "read_file", &args, "--sandbox", "bubblewrap", "--base-path", base],
    );
    assert!(out.status.success() && stdout(&out).contains("made"), "{}", stdout(&out));
}

#[test]
fn sandbox_flags_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(dir.path(), &["tools", "call", "run_bash", "{}", "--sandbox", "docker"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("local") && stderr(&out).contains("bubblewrap"), "{}", stderr(&out));
    let out = harnessx(dir.path(), &["tools", "call", "run_bash", "{}", "--sandbox-network"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sandbox-network needs --sandbox bubblewrap"), "{}", stderr(&out));
}

#[test]
fn run_asks_before_run_bash_and_yes_lets_it_run() {
    let dir = tempfile::tempdir().unwrap();
    let end = |out: &Output| {
        json_lines(out).into_iter().find(|e| e["type"] == "tool_call_end" && e["name"] == "run_bash").unwrap()
    };
    let out = harnessx(dir.path(), &["run", "Run something.", "--tools", "bash", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(end(&out)["content"], "Permission denied", "no terminal to ask on: denied");
    let out = harnessx(dir.path(), &["run", "Run something.", "--tools", "bash", "--yes", "--json"]);
    let content = end(&out)["content"].as_str().unwrap().to_owned();
    assert!(content.contains("[exit code"), "{content}");
}

#[test]
fn a_reader_that_goes_away_is_not_a_crash() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(["tools", "call", "run_bash", r#"{"command": "yes | head -c 5000000000"}"#])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 9];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap(); // then the pipe closes
    let out = child.wait_with_output().unwrap();
    assert_eq!(&first, b"[stdout]\n");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
