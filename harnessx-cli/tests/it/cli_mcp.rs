//! Tools from MCP servers on the command line: `tools list --mcp`, `tools call --mcp`,
//! `run --mcp` with the test model, against the reference servers from the npm registry
//! (installed by the test support; skipped with a printed reason only when npm is missing).

use std::path::{Path, PathBuf};
use std::process::Output;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::npm::{ensure_npm_package, installed_file};
use serde_json::Value;

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

/// The entry script of a reference server, installed on demand.
fn server_script(package: &str) -> Option<PathBuf> {
    let prefix = ensure_npm_package(&format!("@modelcontextprotocol/{package}"), "2026.8.31")?;
    Some(
        installed_file(&prefix, &format!("@modelcontextprotocol/{package}/dist/index.js"))
            .expect("dist/index.js"),
    )
}

#[test]
fn tools_list_and_call_reach_an_mcp_server() {
    let Some(script) = server_script("server-everything") else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = format!("node '{}' stdio", script.display());

    let out = harnessx(dir.path(), &["tools", "list", "--mcp", &server, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let specs: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"echo") && names.contains(&"get-sum"), "{names:?}");
    assert!(!names.contains(&"read_file"), "no built-ins unless --tools names them: {names:?}");

    let out = harnessx(
        dir.path(),
        &["tools", "call", "get-sum", r#"{"a": 2, "b": 40}"#, "--mcp", &server, "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let result: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(result["is_error"], false);
    assert!(result["content"].as_str().unwrap().contains("42"), "{result}");

    // `tools schema NAME --mcp SERVER` prints a server tool's schema (scripts use it).
    let out = harnessx(dir.path(), &["tools", "schema", "get-sum", "--mcp", &server]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let spec: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(spec["name"], "get-sum");
    assert!(spec["input_schema"]["properties"]["b"].is_object(), "{spec}");

    // A schema error is the pipeline's, before the server is asked: exit status 1.
    let out = harnessx(dir.path(), &["tools", "call", "get-sum", r#"{"a": 2}"#, "--mcp", &server]);
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains('b'), "names the missing field: {}", stdout(&out));

    // The same server twice: its names clash, a usage error naming server and tool.
    let out = harnessx(dir.path(), &["tools", "list", "--mcp", &server, "--mcp", &server]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "harnessx: the MCP server `node {} stdio` has a tool named \"",
            script.display()
        )),
        "{err}"
    );
    assert!(err.contains("--tools '' for none"), "{err}");
}

#[test]
fn a_server_that_cannot_start_or_a_bad_flag_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = harnessx(dir.path(), &["tools", "list", "--mcp", "/nonexistent/server --x"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).starts_with("harnessx: could not start the MCP server `/nonexistent/server --x`: "),
        "{}",
        stderr(&out)
    );
    let out = harnessx(dir.path(), &["tools", "list", "--mcp", "node 'open"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out).trim(),
        "harnessx: --mcp \"node 'open\": unbalanced quotes or a trailing backslash"
    );
    let out = harnessx(dir.path(), &["tools", "list", "--mcp-http", "localhost:3001/mcp"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out).trim(),
        "harnessx: --mcp-http \"localhost:3001/mcp\": give an http:// or https:// URL"
    );
    let out = harnessx(dir.path(), &["run", "hi", "--mcp", "sh -c 'exit 3'"]);
    assert_eq!(code(&out), 1, "started, then failed: {}", stderr(&out));
    assert!(
        stderr(&out).contains("harnessx: the MCP server `sh -c exit 3` did not initialize: "),
        "{}",
        stderr(&out)
    );
}

/// `run --mcp` with the test model, which calls every tool once: server-filesystem's
/// tools act under the folder, `--deny write_file` holds, tools that may modify ask
/// (approved by `--yes`), and the server does not outlive the run.
#[test]
fn run_with_server_filesystem_keeps_a_deny_and_stops_the_server() {
    let Some(script) = server_script("server-filesystem") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "kept\n").unwrap();
    let server = format!("node '{}' '{}'", script.display(), root.display());
    let out = harnessx(
        &root,
        &["run", "Look around.", "--tools", "", "--mcp", &server, "--deny", "write_file", "--yes", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let end = |name: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_call_end" && e["name"] == name)
            .unwrap_or_else(|| panic!("no result for {name}: {}", stdout(&out)))
            .clone()
    };
    let write = end("write_file");
    assert_eq!(
        (write["is_error"].as_bool(), write["content"].as_str()),
        (Some(true), Some("Permission denied"))
    );
    let allowed = end("list_allowed_directories");
    assert_eq!(allowed["is_error"], false);
    assert!(allowed["content"].as_str().unwrap().contains(root.to_str().unwrap()), "{allowed}");
    // Approved by --yes (it may modify: not read-only), and run by the server in the folder.
    assert_eq!(end("create_directory")["is_error"], false);
    assert!(root.join("a").is_dir());
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "kept\n");

    // The run is over: no process serves this folder any more.
    let marker = root.to_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains("server-filesystem") && c.contains(&marker))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the server outlived the run: {left:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The tool `name`'s `tool_call_end` event in a `run --json` output.
fn call_end(out: &Output, name: &str) -> Value {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "tool_call_end" && e["name"] == name)
        .unwrap_or_else(|| panic!("no result for {name}: {}", stdout(out)))
}

/// Regression: an untrusted server's `readOnlyHint` kept `run` from asking. The server
/// is `harnessx mcp serve` itself, whose `read_file` claims `readOnlyHint` and
/// `write_file` `destructiveHint`; with no terminal, a call that asks is denied.
#[test]
fn run_takes_a_server_s_read_only_claim_only_with_mcp_trust() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    // The test model reads and writes the path `a`.
    std::fs::write(served.join("a"), "kept\n").unwrap();
    let server = format!(
        "'{}' mcp serve --tools read_file,write_file --base-path '{}'",
        env!("CARGO_BIN_EXE_harnessx"),
        served.display()
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "Look around.", "--tools", "", "--mcp", &server, "--json"];
        args.extend_from_slice(extra);
        let out = harnessx(dir.path(), &args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        out
    };

    let out = run(&[]);
    assert_eq!(call_end(&out, "read_file")["content"], "Permission denied", "untrusted: asked, so denied");
    assert_eq!(call_end(&out, "write_file")["content"], "Permission denied");

    let out = run(&["--mcp-trust"]);
    let read = call_end(&out, "read_file");
    assert_eq!(read["is_error"], false, "trusted: read-only, not asked: {read}");
    assert!(read["content"].as_str().unwrap().contains("kept"), "{read}");
    assert_eq!(
        call_end(&out, "write_file")["content"],
        "Permission denied",
        "destructive: asked, trusted or not"
    );
    assert_eq!(std::fs::read_to_string(served.join("a")).unwrap(), "kept\n");

    let out = harnessx(dir.path(), &["tools", "list", "--mcp", &server, "--mcp-trust"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = harnessx(dir.path(), &["tools", "list", "--mcp-trust"]);
    assert_eq!(code(&out), 2);
    assert_eq!(
        stderr(&out).trim(),
        "harnessx: --mcp-trust applies to the servers of --mcp and --mcp-http, and none is given"
    );
}

/// Regression: an untrusted server's `idempotentHint` made a durable run re-run a call
/// that a crash cut off. server-everything's `trigger-long-running-operation` (10 s by
/// default) claims `idempotentHint`; the run is killed during it, then resumed.
#[test]
fn a_durable_run_re_runs_an_mcp_call_cut_off_by_a_crash_only_for_a_trusted_server() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let Some(script) = server_script("server-everything") else { return };
    let server = format!("node '{}' stdio", script.display());
    const TOOL: &str = "trigger-long-running-operation";
    for trusted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut flags = vec!["--tools", "", "--mcp", &server, "--tool-choice", TOOL, "--yes"];
        if trusted {
            flags.push("--mcp-trust");
        }
        let durable = ["--durable", "runs.db"];
        let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
            .args(["run", "Go.", "--run-id", "k"])
            .args(durable)
            .args(&flags)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed once the call is journaled as started.
        let deadline = Instant::now() + Duration::from_secs(30);
        let started = loop {
            let out = harnessx(dir.path(), &["runs", "show", "k", "--durable", "runs.db", "--json"]);
            let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap_or(Value::Null);
            let start = shown["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["entry"]["kind"] == "call_start");
            if let Some(start) = start {
                break start["entry"].clone();
            }
            assert!(Instant::now() < deadline, "the call never started: {}", stderr(&out));
            assert!(child.try_wait().unwrap().is_none(), "the run ended before the call started");
            std::thread::sleep(Duration::from_millis(50));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(started["tool"], TOOL);
        assert_eq!(started["replay"], if trusted { "idempotent" } else { "manual" }, "{started}");

        let mut resume = vec!["resume", "k"];
        resume.extend_from_slice(&durable);
        resume.extend_from_slice(&flags);
        let out = harnessx(dir.path(), &resume);
        let out_show = harnessx(dir.path(), &["runs", "show", "k", "--durable", "runs.db", "--json"]);
        let shown: Value = serde_json::from_str(stdout(&out_show).trim()).unwrap();
        let results: Vec<&Value> = shown["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["entry"]["kind"] == "call_result")
            .map(|e| &e["entry"]["result"])
            .collect();
        if trusted {
            assert_eq!(code(&out), 0, "re-run and completed: {}", stderr(&out));
            assert_eq!(results.len(), 1, "{shown}");
            let content = results[0]["content"].as_str().unwrap();
            assert!(content.starts_with("Long running operation completed."), "{content}");
        } else {
            assert_eq!(code(&out), 3, "waits for an answer instead of re-running: {}", stderr(&out));
            assert_eq!(shown["report"]["needs_input"][0]["kind"], "outcome", "{shown}");
            assert!(results.is_empty(), "not run again: {shown}");
        }
    }
}

#[test]
fn mcp_resources_offers_a_servers_resources_as_tools() {
    let Some(script) = server_script("server-everything") else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = format!("node '{}' stdio", script.display());
    let out = harnessx(dir.path(), &["tools", "list", "--mcp", &server, "--mcp-resources", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let specs: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = specs.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"list_resources") && names.contains(&"read_resource"), "{names:?}");
    let uri = "demo://resource/static/document/features.md";
    let out = harnessx(
        dir.path(),
        &[
            "tools",
            "call",
            "read_resource",
            &format!(r#"{{"uri": "{uri}"}}"#),
            "--mcp",
            &server,
            "--mcp-resources",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!("[resource {uri}]")), "{}", stdout(&out));
    let out = harnessx(dir.path(), &["tools", "list", "--mcp-resources"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains("list_resources"), "no server, no resource tools: {}", stdout(&out));
}

#[test]
fn an_mcp_prompt_is_listed_and_becomes_the_runs_prompt() {
    use harnessx_test_support::server::{Reply, Server};
    let Some(script) = server_script("server-everything") else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = format!("node '{}' stdio", script.display());

    let out = harnessx(dir.path(), &["mcp", "prompts", "--mcp", &server]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = stdout(&out);
    assert!(
        listed.lines().any(|l| l
            == "mcp1/args-prompt city [state]  A prompt with two arguments, one required and one optional"),
        "{listed}"
    );
    let out = harnessx(dir.path(), &["mcp", "prompts", "--mcp", &server, "--json"]);
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(shown["server"], "mcp1");
    let args_prompt =
        shown["prompts"].as_array().unwrap().iter().find(|p| p["name"] == "args-prompt").unwrap();
    assert_eq!(
        args_prompt["arguments"][0],
        serde_json::json!({"name": "city", "description": "Name of the city", "required": true})
    );

    // The prompt, filled in, is what the model is asked.
    let model =
        Server::respond(|_| Reply::chat(serde_json::json!({"role": "assistant", "content": "Sunny."})));
    let base = format!("{}/v1", model.url);
    let run = |extra: &[&str]| {
        let mut args =
            vec!["run", "--mcp", &server, "--tools", "", "--model", "openai:m", "--base-url", &base];
        args.extend_from_slice(extra);
        harnessx(dir.path(), &args)
    };
    let out = run(&["--mcp-prompt", "args-prompt", "--arg", "city=Paris"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Sunny.");
    let asked = &model.requests()[0].body["messages"];
    let user = asked.as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(user["content"], "What's weather in Paris?", "{asked}");

    // The command line's mistakes, each one line before anything is asked.
    for (extra, said) in [
        (vec!["--mcp-prompt", "args-prompt"], "the prompt mcp1/args-prompt needs --arg city=VALUE"),
        (vec!["--mcp-prompt", "nope"], "the MCP server mcp1 has no prompt \"nope\"; it has "),
        (vec!["--mcp-prompt", "other/args-prompt"], "no MCP server named \"other\"; the servers are mcp1"),
        (vec!["--mcp-prompt", "args-prompt", "--arg", "city"], "--arg \"city\": give it as NAME=VALUE"),
    ] {
        let out = run(&extra);
        assert_eq!(code(&out), 2, "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{extra:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));
    }
    assert_eq!(model.requests().len(), 1);
    let out = harnessx(dir.path(), &["run", "hi", "--mcp-prompt", "args-prompt", "--mcp", &server]);
    assert_eq!(code(&out), 2, "a prompt and --mcp-prompt: {}", stderr(&out));
}

/// `mcp serve --skills DIR` offers the skills as prompts: another harnessx lists them and
/// runs one (the skill's instructions are what the model is asked).
#[test]
fn mcp_serve_offers_skills_as_prompts() {
    use harnessx_test_support::server::{Reply, Server};
    let dir = tempfile::tempdir().unwrap();
    let skills = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../harnessx-agent/tests/fixtures/skills");
    let served = format!(
        "'{}' mcp serve --tools read_file --base-path '{}' --skills '{}'",
        env!("CARGO_BIN_EXE_harnessx"),
        dir.path().display(),
        skills.display()
    );
    let out = harnessx(dir.path(), &["mcp", "prompts", "--mcp", &served]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = stdout(&out);
    let pdf =
        listed.lines().find(|l| l.starts_with("mcp1/pdf-forms  ")).unwrap_or_else(|| panic!("{listed}"));
    assert!(pdf.contains("Fill in PDF forms and extract their fields."), "{pdf}");
    assert!(listed.lines().any(|l| l.starts_with("mcp1/release-notes  ")), "{listed}");

    let model =
        Server::respond(|_| Reply::chat(serde_json::json!({"role": "assistant", "content": "Noted."})));
    let base = format!("{}/v1", model.url);
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "--mcp-prompt",
            "pdf-forms",
            "--mcp",
            &served,
            "--tools",
            "",
            "--model",
            "openai:m",
            "--base-url",
            &base,
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let asked = &model.requests()[0].body["messages"];
    let user = asked.as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap();
    let text = user["content"].as_str().unwrap();
    let body = std::fs::read_to_string(skills.join("pdf-forms/SKILL.md")).unwrap();
    let first = body.split("---").nth(2).unwrap().trim().lines().next().unwrap();
    assert!(text.starts_with(first), "the skill's instructions: {text}");
    assert!(text.contains("This skill expects to use only these tools: read_file, bash."), "{text}");

    let out = harnessx(dir.path(), &["run", "--mcp-prompt", "nope", "--mcp", &served, "--tools", ""]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("has no prompt \"nope\"; it has commit-messages, pdf-forms, release-notes"),
        "{}",
        stderr(&out)
    );
}

/// A server's progress notifications about a call become `tool_progress` events.
#[test]
fn a_servers_progress_is_streamed_as_tool_progress_events() {
    use harnessx_test_support::server::{Reply, Server};
    let Some(script) = server_script("server-everything") else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = format!("node '{}' stdio", script.display());
    let model = Server::respond(|request| {
        let answered =
            request.body["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let message = if answered {
            serde_json::json!({"role": "assistant", "content": "Done."})
        } else {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "p1", "type": "function",
                "function": {"name": "trigger-long-running-operation", "arguments": "{\"duration\": 0.3, \"steps\": 3}"}}]})
        };
        Reply::chat(message)
    });
    let base = format!("{}/v1", model.url);
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "Go.",
            "--mcp",
            &server,
            "--tools",
            "",
            "--model",
            "openai:m",
            "--base-url",
            &base,
            "--yes",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let progress: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_progress").collect();
    assert_eq!(progress.len(), 3, "{events:?}");
    for (i, event) in progress.iter().enumerate() {
        assert_eq!(event["call_id"], "p1");
        assert_eq!(event["progress"], serde_json::json!(i as f64 + 1.0));
        assert_eq!(event["total"], serde_json::json!(3.0));
    }
    let start = events.iter().position(|e| e["type"] == "tool_call_start").unwrap();
    let end = events.iter().position(|e| e["type"] == "tool_call_end").unwrap();
    let first = events.iter().position(|e| e["type"] == "tool_progress").unwrap();
    assert!(start < first && first < end, "progress between the call's start and end: {events:?}");
}
