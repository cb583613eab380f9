//! Command hooks from the configuration files (`[[hooks.EVENT]]` tables) through the
//! `harnessx` command, judged by marker files: a project's hook refusing `write_file` on
//! `tools call`, `run` and `mcp serve` (driven over stdio by a hand-written MCP client), a
//! user's post hook redacting `read_file`, the files' hooks and the flags' adding up,
//! `config show` listing them with their sources, and bad tables refused with their line.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_harnessx");

/// The project's hook: it leaves a marker beside the project file and refuses.
const DENY_WRITES: &str = "[[hooks.pre_tool_use]]\nmatcher = \"write_file\"\ncommand = \"touch refused.marker; echo no writes here >&2; exit 2\"\ntimeout_seconds = 10\n";

/// The user's hook: every `read_file` result is replaced.
const REDACT_READS: &str = "[[hooks.post_tool_use]]\nmatcher = \"read_file\"\ncommand = \"echo '{\\\"content\\\": \\\"[redacted]\\\"}'\"\n";

/// A project folder (its `harnessx.toml` written by the test, `notes.md` holding a
/// secret) and a user config folder `xdg/harnessx/`.
struct Place {
    root: tempfile::TempDir,
}

impl Place {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("project")).unwrap();
        std::fs::create_dir_all(root.path().join("xdg/harnessx")).unwrap();
        std::fs::write(root.path().join("project/notes.md"), "the code is 1234\n").unwrap();
        Self { root }
    }

    fn project(&self, text: &str) -> &Self {
        std::fs::write(self.project_file(), text).unwrap();
        self
    }

    fn user(&self, text: &str) -> &Self {
        std::fs::write(self.user_file(), text).unwrap();
        self
    }

    fn project_file(&self) -> PathBuf {
        self.work().join("harnessx.toml")
    }

    fn user_file(&self) -> PathBuf {
        self.root.path().join("xdg/harnessx/config.toml")
    }

    fn work(&self) -> PathBuf {
        self.root.path().join("project")
    }

    fn xdg(&self) -> String {
        self.root.path().join("xdg").to_str().unwrap().to_owned()
    }

    fn harnessx(&self, args: &[&str]) -> Output {
        Binary::new(BIN).env("XDG_CONFIG_HOME", &self.xdg()).run(&self.work(), args)
    }

    /// `mcp serve ARGS` here, driven over stdio by hand: the handshake, then each call in
    /// turn; each call's `result`.
    fn mcp_calls(&self, args: &[&str], calls: &[(&str, Value)]) -> Vec<Value> {
        let mut child = Command::new(BIN)
            .args(["mcp", "serve"])
            .args(args)
            .current_dir(self.work())
            .env("XDG_CONFIG_HOME", self.xdg())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting harnessx mcp serve");
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut answer = |stdin: &mut std::process::ChildStdin, id: u64, request: Value| -> Value {
            writeln!(stdin, "{request}").unwrap();
            loop {
                let line = lines.next().expect("an answer before stdout closed").unwrap();
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
                if message["id"] == id {
                    return message;
                }
            }
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}});
        let hello = answer(&mut stdin, 1, initialize);
        assert_eq!(hello["result"]["serverInfo"]["name"], "harnessx", "{hello}");
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        let mut results = Vec::new();
        for (id, (name, arguments)) in (2..).zip(calls) {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}});
            let message = answer(&mut stdin, id, call);
            results.push(message["result"].clone());
        }
        // The client goes: the server ends.
        drop(stdin);
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < Duration::from_secs(10), "mcp serve did not end with its client");
            std::thread::sleep(Duration::from_millis(20));
        }
        results
    }
}

/// `(is_error, text)` of an MCP tool result.
fn mcp_text(result: &Value) -> (bool, String) {
    let text: Vec<&str> =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    (result["isError"] == true, text.join("\n"))
}

/// The `tool_call_end` events of a `run --json`: `(tool, is_error, content)`.
fn ends(out: &Output) -> Vec<(String, bool, String)> {
    json_lines(out)
        .into_iter()
        .filter(|e: &Value| e["type"] == "tool_call_end")
        .map(|e| {
            let text = |key: &str| e[key].as_str().unwrap_or_default().to_owned();
            (text("name"), e["is_error"] == true, text("content"))
        })
        .collect()
}

#[test]
fn a_projects_hook_refuses_write_file_on_tools_call_and_run() {
    let place = Place::new();
    place.project(DENY_WRITES);
    let out =
        place.harnessx(&["tools", "call", "write_file", r#"{"path": "x.txt", "content": "x"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(1), "an error result: {}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result, json!({"name": "write_file", "is_error": true, "content": "no writes here"}));
    assert!(place.work().join("refused.marker").exists(), "the hook ran");
    assert!(!place.work().join("x.txt").exists(), "the refused write wrote");
    // Other tools are not its business.
    let out = place.harnessx(&["tools", "call", "read_file", r#"{"path": "notes.md"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("the code is 1234"));

    std::fs::remove_file(place.work().join("refused.marker")).unwrap();
    let out = place.harnessx(&["run", "What do my notes say?", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    assert!(ends.contains(&("write_file".into(), true, "no writes here".into())), "{ends:?}");
    assert!(place.work().join("refused.marker").exists(), "the hook ran");
    // The test model writes only its own scratch file: refused, it is not there.
    assert!(!place.work().join("a").exists());
}

#[test]
fn a_users_post_hook_redacts_read_file_and_a_flag_adds_to_the_files_hooks() {
    let place = Place::new();
    place.user(REDACT_READS).project(DENY_WRITES);
    let out = place.harnessx(&["tools", "call", "read_file", r#"{"path": "notes.md"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[redacted]\n");
    // The run's reads are redacted too, and the project's hook still refuses writes.
    let out = place.harnessx(&["run", "What do my notes say?", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ends = ends(&out);
    assert!(ends.iter().any(|(t, e, c)| t == "read_file" && !e && c == "[redacted]"), "{ends:?}");
    assert!(ends.iter().all(|(_, _, c)| !c.contains("1234")), "{ends:?}");
    assert!(ends.contains(&("write_file".into(), true, "no writes here".into())), "{ends:?}");
    // A flag's hook runs after the files', which it does not replace: the project's hook
    // refuses first, so the flag's is never asked.
    let out = place.harnessx(&[
        "tools",
        "call",
        "write_file",
        r#"{"path": "y.txt", "content": "y"}"#,
        "--hook",
        "pre_tool_use:*=touch flag.marker",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no writes here\n");
    assert!(!place.work().join("flag.marker").exists(), "the flag's hook comes after the files'");
    let out = place.harnessx(&[
        "tools",
        "call",
        "list_directory",
        "{}",
        "--hook",
        "pre_tool_use:*=touch flag.marker",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(place.work().join("flag.marker").exists(), "the flag's hook runs");
}

#[test]
fn mcp_serve_puts_every_call_through_the_files_and_the_flags_hooks() {
    let place = Place::new();
    place.project(DENY_WRITES).user(REDACT_READS);
    let results = place.mcp_calls(
        &["--tools", "filesystem", "--hook", "pre_tool_use:glob=echo globs are off >&2; exit 2"],
        &[
            ("write_file", json!({"path": "x.txt", "content": "x"})),
            ("read_file", json!({"path": "notes.md"})),
            ("glob", json!({"pattern": "*"})),
            ("list_directory", json!({})),
        ],
    );
    assert_eq!(mcp_text(&results[0]), (true, "no writes here".into()), "{}", results[0]);
    assert!(!place.work().join("x.txt").exists(), "the refused write wrote");
    assert!(place.work().join("refused.marker").exists(), "the hook ran");
    assert_eq!(mcp_text(&results[1]), (false, "[redacted]".into()), "{}", results[1]);
    assert_eq!(mcp_text(&results[2]), (true, "globs are off".into()), "{}", results[2]);
    let (failed, listing) = mcp_text(&results[3]);
    assert!(!failed && listing.contains("notes.md"), "{listing}");
}

#[test]
fn config_show_lists_every_hook_with_its_source() {
    let place = Place::new();
    place.project(&format!("model = \"test\"\n\n{DENY_WRITES}")).user(REDACT_READS);
    let project = place.project_file().display().to_string();
    let user = place.user_file().display().to_string();
    let out = place.harnessx(&["config", "show", "--json", "--hook", "post_tool_use:*=./log.sh"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let hooks = &shown["settings"]["hooks"];
    assert_eq!(
        hooks["value"],
        json!([
            {"event": "pre_tool_use", "matcher": "write_file", "command": "touch refused.marker; echo no writes here >&2; exit 2",
             "timeout_seconds": 10, "from": format!("{project}:3")},
            {"event": "post_tool_use", "matcher": "read_file", "command": "echo '{\"content\": \"[redacted]\"}'",
             "timeout_seconds": 60, "from": format!("{user}:1")},
            {"event": "post_tool_use", "matcher": "*", "command": "./log.sh", "timeout_seconds": 60, "from": "command line"},
        ]),
        "{hooks}"
    );
    assert_eq!(hooks["from"], format!("{project}, {user}, command line"));

    // The text form: one line a hook, each with its source.
    let out = place.harnessx(&["config", "show"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("hooks ")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains(r#""matcher":"write_file""#) && lines[0].ends_with(&format!("# {project}:3")),
        "{text}"
    );
    assert!(
        lines[1].contains(r#""timeout_seconds":60"#) && lines[1].ends_with(&format!("# {user}:1")),
        "{text}"
    );

    // None: an empty list, by default.
    let place = Place::new();
    let out = place.harnessx(&["config", "show"]);
    assert!(
        stdout(&out).lines().any(|l| l.starts_with("hooks ") && l.ends_with("= []    # default")),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_bad_hook_table_stops_every_command_with_its_file_and_line() {
    for (text, line, says) in [
        (
            "model = \"test\"\n[[hooks.pre_tool_use]]\ncommand = \"x\"\n",
            2,
            "a pre_tool_use hook needs a `matcher`",
        ),
        ("[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"\"\n", 3, "`command` is empty"),
        ("[[hooks.pre_tool_use]]\nmatcher = \"write_file(path=\"\ncommand = \"x\"\n", 2, "hook matcher"),
        (
            "[[hooks.post_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\nwhen = \"always\"\n",
            4,
            "unknown field `when`",
        ),
        (
            "[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"x\"\ntimeout_seconds = 0\n",
            4,
            "timeout_seconds 0",
        ),
        ("[[hooks.on_save]]\nmatcher = \"*\"\ncommand = \"x\"\n", 2, "unknown hook event \"on_save\""),
    ] {
        let place = Place::new();
        place.project(text);
        let place_line = format!("{}:{line}: ", place.project_file().display());
        for args in [
            &["tools", "call", "list_directory"][..],
            &["run", "hi", "--tools", "list_directory"],
            &["config", "show"],
            &["mcp", "serve", "--tools", "read_file"],
        ] {
            let out = place.harnessx(args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{text:?} {args:?}: {err}");
            assert!(err.contains(&place_line) && err.contains(says), "{text:?} {args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        }
    }
}

/// A relative hook command runs in the working folder, not the file's.
#[test]
fn a_files_hook_runs_in_the_working_folder() {
    let place = Place::new();
    place.project("[[hooks.pre_tool_use]]\nmatcher = \"*\"\ncommand = \"pwd > where.txt\"\n");
    let deeper = place.work().join("deeper");
    std::fs::create_dir(&deeper).unwrap();
    let out = Binary::new(BIN)
        .env("XDG_CONFIG_HOME", &place.xdg())
        .run(&deeper, &["tools", "call", "list_directory"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let here = std::fs::read_to_string(deeper.join("where.txt")).expect("the hook ran in the working folder");
    assert_eq!(Path::new(here.trim()).canonicalize().unwrap(), deeper.canonicalize().unwrap());
}
