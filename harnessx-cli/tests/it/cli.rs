//! The `harnessx` command end to end: exit statuses, JSON output, permissions, the
//! containment of `--base-path`, and `run` with the test model.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use harnessx_test_support::bin::{Binary, json_lines, stderr, stdout};
use serde_json::Value;

fn binary() -> Binary {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
}

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    binary().run(dir, args)
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

// `tools schema NAME --tools SPEC` worked in an earlier release and became a usage error.
#[test]
fn tools_schema_takes_tools_as_list_does() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["tools", "schema", "grep", "--tools", "read_file,grep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let spec: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(spec["name"], "grep");
    // A tool outside the set named is unknown, with the usual suggestion.
    let out = harnessx(dir.path(), &["tools", "schema", "write_file", "--tools", "read_file"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("write_file"), "{}", stderr(&out));
    let out = harnessx(dir.path(), &["tools", "schema", "fetch_url", "--tools", "web"]);
    assert!(out.status.success(), "{}", stderr(&out));
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
    json_lines(out)
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

#[test]
fn tools_call_dash_reads_the_arguments_from_standard_input() {
    let dir = workspace();
    // 4 MiB of content cannot go through argv (its limit per argument is 128 KiB).
    let content = "x".repeat(4 << 20);
    let args = serde_json::json!({"path": "big.txt", "content": content}).to_string();
    let out = binary().run_with_input(
        dir.path(),
        &["tools", "call", "write_file", "-", "--base-path", ".", "--json"],
        args.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["is_error"], false, "{v}");
    assert_eq!(std::fs::metadata(dir.path().join("big.txt")).unwrap().len(), 4 << 20);

    // Bad JSON on stdin is the model-facing parse error, exit 1, and nothing written.
    let out =
        binary().run_with_input(dir.path(), &["tools", "call", "write_file", "-", "--json"], b"{\"path\": ");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("not valid JSON"), "{}", stdout(&out));
}

#[test]
fn run_on_the_test_model_says_so_on_stderr_and_how_to_pick_a_real_one() {
    let dir = workspace();
    let out = harnessx(dir.path(), &["run", "hi", "--tools", "list_directory", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("built-in test model"), "{err}");
    assert!(err.contains("--model openai:MODEL"), "{err}");
    // stdout stays pure JSON lines.
    assert!(events(&out).iter().all(|e| e["type"].is_string()));
}

#[test]
fn run_without_file_tools_needs_no_base_path_and_an_unused_base_path_is_a_usage_error() {
    let dir = workspace();
    // The default base path (the current directory) is simply unused by ask-free tools...
    let out = harnessx(dir.path(), &["run", "hi", "--tools", "list_directory", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // ...while an explicit --base-path that nothing uses is a mistake worth reporting.
    let out =
        harnessx(dir.path(), &["tools", "call", "ask_user", "{}", "--tools", "ask_user", "--base-path", "."]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn run_in_a_non_utf8_directory_fails_clearly_instead_of_dropping_the_file_tools() {
    // Regression: `run` used to swallow this error (matched by its text) and run without
    // the file tools.
    use std::os::unix::ffi::OsStrExt;
    let dir = workspace();
    let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&odd).unwrap();
    let out = harnessx(&odd, &["run", "hi", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not valid UTF-8"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--base-path"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "the run must not start: {}", stdout(&out));
}

/// `harnessx run ... 2>&1 | head`: standard output and error whose reader is gone. The
/// run goes on to its end and exits as it would have (no panic, no status 101); so do
/// the listing commands.
#[test]
fn a_reader_that_went_away_is_not_a_crash() {
    let dir = workspace();
    for args in [
        &["run", "Look around.", "--tools", "list_directory,read_file"][..],
        &["run", "Look around.", "--tools", "list_directory", "--json"],
        &["tools", "list"],
        &["tools", "call", "list_directory", "{}"],
    ] {
        // The read end is closed before the command starts: every write to either
        // stream fails with a broken pipe.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let status = Command::new(env!("CARGO_BIN_EXE_harnessx"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer.try_clone().unwrap()))
            .stderr(Stdio::from(writer))
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {status}");
    }
}

/// README: exit status 74 when the output cannot be written (other than by a reader that
/// went away, above). Standard output on `/dev/full`, where every write fails: the
/// streaming run (text and `--json` events), the durable report and a listing say why
/// on stderr and exit 74.
#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written_exits_74() {
    let dir = workspace();
    for args in [
        &["run", "Look around.", "--tools", "list_directory"][..],
        &["run", "Look around.", "--tools", "list_directory", "--json"],
        &["run", "Look around.", "--tools", "list_directory", "--durable", "runs.db", "--json"],
        &["tools", "list"],
    ] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_harnessx"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(full))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(74), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("harnessx: cannot write the output: "), "{args:?}: {}", stderr(&out));
    }
}

/// Spec: no untrusted input recurses without bound. `tools call` with arguments nested
/// 1,000,000 levels deep (every shape, on standard input) ends at once with the one-line
/// depth error, exit 1 and nothing written, in bounded time and memory; one level under
/// the limit the call runs.
#[test]
fn tools_call_with_arguments_a_million_levels_deep_ends_quickly_in_little_memory() {
    use harnessx_test_support::deep::{Shape, nested_json};
    let dir = workspace();
    let args = ["tools", "call", "write_file", "-", "--base-path", ".", "--json"];
    for shape in Shape::ALL {
        // `{"path": "deep.txt", "content": <the nesting>}`: the content is a string in the
        // schema, so a shallow nesting gets the schema's error, a deep one the depth error.
        let deep = nested_json(shape, 1_000_000);
        let input = format!(r#"{{"path": "deep.txt", "content": {}"#, &deep[r#"{"a":"#.len()..]);
        let (out, measured) = binary().run_measured(dir.path(), &args, input.as_bytes());
        let v: Value = serde_json::from_str(stdout(&out).trim())
            .unwrap_or_else(|e| panic!("{shape:?}: {e}: {}", stderr(&out)));
        assert_eq!(out.status.code(), Some(1), "{shape:?}: {}", stderr(&out));
        assert_eq!(v["is_error"], true, "{shape:?}");
        assert_eq!(
            v["content"],
            "invalid arguments for write_file: the arguments are nested too deeply (more than 100 levels of arrays and objects); the tool did not run. Send the call again with flatter arguments.",
            "{shape:?}"
        );
        assert!(!dir.path().join("deep.txt").exists());
        eprintln!("{shape:?}: {:?}, peak {} KiB", measured.elapsed, measured.peak_rss_kib);
        assert!(measured.elapsed < std::time::Duration::from_secs(20), "{shape:?}: {measured:?}");
        assert!(measured.peak_rss_kib < 200 * 1024, "{shape:?}: {measured:?}");
    }
    // At the limit the text parses and the schema speaks (content must be a string).
    let input = format!(r#"{{"path": "deep.txt", "content": {}"#, &nested_json(Shape::Arrays, 100)[5..]);
    let out = binary().run_with_input(dir.path(), &args, input.as_bytes());
    assert!(stdout(&out).contains("invalid arguments for write_file: content: "), "{}", stdout(&out));
}

/// The README's first command: the test model explores the folder as a person would
/// (list it, glob and grep for the prompt's words, read the file it found) instead of
/// probing with a fragment of the prompt (`glob: No files match "a"`), and says it is
/// the offline test model.
#[test]
fn the_readme_s_first_command_explores_the_folder_like_a_person() {
    let dir = workspace();
    std::fs::write(dir.path().join("README.md"), "# A folder\nIt holds notes.\n").unwrap();
    let prompt = "What is in this folder?";
    let out =
        harnessx(dir.path(), &["run", prompt, "--tools", "list_directory,read_file,grep,glob", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = events(&out);
    let calls: Vec<(String, Value)> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_start")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                serde_json::from_str(e["arguments"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["list_directory", "glob", "grep", "read_file"], "{calls:?}");
    assert_eq!(calls[0].1["path"], ".");
    assert_eq!(calls[1].1["pattern"], "**/*folder*", "a word of the prompt, not a fragment");
    assert_eq!(calls[2].1["pattern"], "folder");
    assert_eq!(calls[3].1["path"], "README.md", "a file the listing found");
    let answer = events.last().unwrap()["output"].as_str().unwrap().to_owned();
    assert!(answer.contains("# A folder"), "{answer}");
    assert!(answer.contains("list_directory: README.md"), "{answer}");
    assert!(answer.contains("offline test model, not a language model"), "{answer}");
    assert!(!answer.contains("\"a\""), "{answer}");
}

// The built-in test model deleted a user's file named `a` ("Deleted `a`.") when run with
// `--yes`, and its denied calls' `tool_call_start` events lacked the `tool` field.
#[test]
fn the_test_model_never_touches_a_users_file() {
    let dir = workspace();
    std::fs::write(dir.path().join("a"), "my own notes\n").unwrap();
    std::fs::write(dir.path().join("a-2"), "more of mine\n").unwrap();
    for extra in [&[][..], &["--yes"]] {
        let mut args = vec!["run", "What do my notes say?", "--json"];
        args.extend_from_slice(extra);
        let out = harnessx(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(std::fs::read_to_string(dir.path().join("a")).unwrap(), "my own notes\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("a-2")).unwrap(), "more of mine\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "alpha\nbeta\n");
        let events = events(&out);
        let starts: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call_start").collect();
        assert!(starts.len() >= 8, "{starts:?}");
        for start in &starts {
            assert_eq!(start["tool"], start["name"], "{extra:?}: {start}");
        }
        let written: Vec<&Value> = starts
            .iter()
            .copied()
            .filter(|s| {
                ["write_file", "edit_file", "delete", "generate_file"].contains(&s["name"].as_str().unwrap())
            })
            .collect();
        assert_eq!(written.len(), 4, "{starts:?}");
        for call in written {
            let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
            assert_eq!(args["path"], "a-3", "a name nothing had: {call}");
        }
        let answer = events.last().unwrap()["output"].as_str().unwrap().to_owned();
        assert!(answer.contains("it was given `a-3`"), "the answer says where it wrote: {answer}");
    }
    // With --yes, the file it wrote it also deleted; its download is under its name.
    assert!(!dir.path().join("a-3").exists());
    assert!(dir.path().join("output/a-3").exists());
}
