//! An MCP server's question mid-call (elicitation), through the binary, against
//! server-everything's `trigger-elicitation-request`: asked on the terminal in a plain
//! run (accept, decline, cancel, typed on a pty), and in a durable run with nobody at a
//! terminal a pause (`needs_input` of kind `elicitation`, with the server's schema) that
//! `answer` settles (accept, decline, cancel; a wrong answer refused naming the field,
//! exit 2) and `resume`
//! continues, the call run again and given the answer, nothing journaled repeated.

use std::path::{Path, PathBuf};
use std::process::Output;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::npm::{ensure_npm_package, installed_file};
use harnessx_test_support::server::{Reply, Server};
use serde_json::{Value, json};

use super::cli_chat::Terminal;

const TOOL: &str = "trigger-elicitation-request";

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

fn everything() -> Option<PathBuf> {
    let prefix = ensure_npm_package("@modelcontextprotocol/server-everything", "2026.8.31")?;
    installed_file(&prefix, "@modelcontextprotocol/server-everything/dist/index.js")
}

/// A model that calls the elicitation tool, then answers `Got: ` and the tool's result.
fn model() -> Server {
    Server::respond(|request| {
        let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
        let message = match messages.iter().rev().find(|m| m["role"] == "tool") {
            Some(tool) => {
                json!({"role": "assistant", "content": format!("Got: {}", tool["content"].as_str().unwrap_or(""))})
            }
            None => {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "e1", "type": "function",
                "function": {"name": TOOL, "arguments": "{}"}}]})
            }
        };
        Reply::chat(message)
    })
}

/// The flags of a run against `model` with server-everything's elicitation tool only.
fn flags(server: &str, base: &str) -> Vec<String> {
    ["--mcp", server, "--tools", "", "--model", "openai:m", "--base-url", base, "--yes"]
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn last_json(out: &Output) -> Value {
    let text = stdout(out);
    let line = text.lines().last().unwrap_or_else(|| panic!("no output; stderr: {}", stderr(out)));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn a_durable_run_pauses_for_a_servers_question_until_it_is_answered() {
    let Some(script) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = format!("node '{}' stdio", script.display());
    let model = model();
    let base = format!("{}/v1", model.url);
    let flags = flags(&server, &base);
    let with = |head: &[&str]| -> Vec<String> {
        head.iter().map(|s| (*s).to_owned()).chain(flags.iter().cloned()).collect()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        harnessx(dir.path(), &args)
    };

    // Nobody at a terminal: the run pauses, the server's question and schema in the need.
    let out = run(with(&["run", "Go.", "--durable", "runs.db", "--run-id", "e", "--json"]));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let stopped = last_json(&out);
    assert_eq!(stopped["status"], "needs_input", "{stopped}");
    let need = &stopped["needs_input"][0];
    assert_eq!(need["kind"], "elicitation", "{stopped}");
    assert_eq!(need["call_id"], "e1");
    assert_eq!(need["tool"], TOOL);
    assert!(need["reason"].as_str().unwrap().contains("asks: Please provide inputs"), "{need}");
    assert_eq!(need["schema"]["required"], json!(["name"]), "{need}");

    // A wrong answer is refused, one line naming the field, nothing recorded.
    for (wrong, names) in [
        (r#"{"name": "Ada", "integer": "seven"}"#, "integer"),
        ("[1, 2]", "not a JSON object"),
        ("{not json", "not JSON"),
        (&format!("{}1{}", "[".repeat(200), "]".repeat(200)), "not JSON"),
    ] {
        let out = harnessx(dir.path(), &["answer", "e", "e1", wrong, "--durable", "runs.db"]);
        assert_eq!(code(&out), 2, "{wrong}: {}", stderr(&out));
        let said = stderr(&out);
        assert_eq!(said.trim().lines().count(), 1, "{said}");
        assert!(said.contains(names), "{wrong}: {said}");
    }
    // A resume before the answer waits again, running nothing.
    let out = run(with(&["resume", "e", "--durable", "runs.db", "--json"]));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(last_json(&out)["needs_input"][0]["kind"], "elicitation");

    let out = harnessx(
        dir.path(),
        &["answer", "e", "e1", r#"{"name": "Ada", "integer": 7}"#, "--durable", "runs.db"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(with(&["resume", "e", "--durable", "runs.db", "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let end = last_json(&out);
    let output = end["output"].as_str().unwrap();
    assert!(output.contains("- Name: Ada") && output.contains("- Favorite Integer: 7"), "{end}");
    // Two model requests in all (the call, then the answer): the first not asked again.
    assert_eq!(model.requests().len(), 2);
    // One result for the call in the journal.
    let out = harnessx(dir.path(), &["runs", "show", "e", "--durable", "runs.db", "--json"]);
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let results =
        shown["entries"].as_array().unwrap().iter().filter(|e| e["entry"]["kind"] == "call_result").count();
    assert_eq!(results, 1, "{shown}");

    // `decline` is sent as such.
    let out = run(with(&["run", "Go.", "--durable", "runs.db", "--run-id", "d", "--json"]));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let out = harnessx(dir.path(), &["answer", "d", "e1", "decline", "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(with(&["resume", "d", "--durable", "runs.db", "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(last_json(&out)["output"].as_str().unwrap().contains("User declined"), "{}", stdout(&out));

    // `cancel` too.
    let out = run(with(&["run", "Go.", "--durable", "runs.db", "--run-id", "c", "--json"]));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let out = harnessx(dir.path(), &["answer", "c", "e1", "cancel", "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(with(&["resume", "c", "--durable", "runs.db", "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(last_json(&out)["output"].as_str().unwrap().contains("User cancelled"), "{}", stdout(&out));

    // A plain run with nobody to ask declines at once.
    let out = run(with(&["run", "Go.", "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(last_json(&out)["output"].as_str().unwrap().contains("User declined"), "{}", stdout(&out));
}

/// Answers the question on the terminal: `name` (and `integer` when given), every other
/// field left out; or `word` (`decline`, `cancel`) at the first prompt.
fn answer_on_terminal(term: &mut Terminal, word: Option<&str>) {
    term.expect("asks: Please provide inputs for the following fields:");
    if let Some(word) = word {
        term.expect(" > ");
        term.type_line(word);
        return;
    }
    // server-everything asks 13 fields.
    for _ in 0..13 {
        let prompt = term.expect(" > ");
        let field = prompt.lines().last().unwrap_or("").trim_start();
        if field.starts_with("name (string, required") {
            term.type_line("Ada");
        } else if field.starts_with("integer (integer") {
            // Refused first (not a number), then given.
            term.type_line("seven");
            term.expect("a whole number");
            term.expect(" > ");
            term.type_line("7");
        } else {
            term.type_line("");
        }
    }
}

#[test]
fn a_servers_question_is_asked_on_the_terminal() {
    let Some(script) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let server = format!("node '{}' stdio", script.display());
    let model = model();
    let base = format!("{}/v1", model.url);
    let mut args = vec!["run".to_owned(), "Go.".to_owned()];
    args.extend(flags(&server, &base));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for (word, expected) in
        [(None, "- Name: Ada"), (Some("decline"), "User declined"), (Some("cancel"), "User cancelled")]
    {
        let Some(mut term) = Terminal::start(dir.path(), None, &args) else { return };
        answer_on_terminal(&mut term, word);
        term.expect(expected);
        assert!(term.wait().success(), "{}", term.screen());
        if word.is_none() {
            assert!(term.screen().contains("- Favorite Integer: 7"), "{}", term.screen());
        }
    }
}

/// The page of `harnessx serve` in a real browser (headless Chromium): the server's
/// question as a form of its fields, an answer missing a required field refused on the
/// page, the answer sent, the call run again and the model given the server's result;
/// the API refuses an answer the schema does not admit, naming the field.
#[test]
fn in_a_real_browser_a_person_answers_a_servers_question() {
    use harnessx_test_support::system::ensure_debian_package;
    let Some(script) = everything() else { return };
    let Some(chromium) = ensure_debian_package("chromium", "chromium") else { return };
    let Some(node) = ensure_debian_package("nodejs", "node") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mcp = format!("node '{}' stdio", script.display());
    let model = model();
    let base = format!("{}/v1", model.url);
    let flags = flags(&mcp, &base);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = super::cli_serve::Serve::start(dir.path(), &flags).unwrap();

    // Through the API: the run pauses; an answer the schema refuses is a 400 naming the field.
    let started = server.call("POST", "/v1/runs", Some(json!({"prompt": "Go.", "run_id": "api"})));
    assert_eq!(started.status, 201, "{}", started.body);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let need = loop {
        let shown = server.call("GET", "/v1/runs/api", None).json();
        if shown["status"] == "needs_input" {
            break shown["needs_input"][0].clone();
        }
        assert!(std::time::Instant::now() < deadline, "never paused: {shown}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(
        (&need["kind"], &need["schema"]["required"]),
        (&json!("elicitation"), &json!(["name"])),
        "{need}"
    );
    let wrong = json!({"text": r#"{"name": "Ada", "integer": "seven"}"#});
    let refused = server.call("POST", "/v1/runs/api/answers/e1", Some(wrong));
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.json()["error"].as_str().unwrap().contains("integer"), "{}", refused.body);

    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/drive_page.mjs");
    let out = std::process::Command::new(node)
        .args(["--experimental-websocket", page])
        .arg(&chromium)
        .arg(format!("{}/", server.url))
        .arg(dir.path().join("elicitation.png"))
        .arg(dir.path().join("chromium-profile"))
        .arg("elicitation")
        .output()
        .unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    assert!(out.status.success(), "{seen}");
    assert!(seen["asked"].as_str().unwrap().contains("asks: Please provide inputs"), "{seen}");
    let fields = seen["fields"].as_array().unwrap();
    assert!(fields.contains(&json!("name")) && fields.contains(&json!("integer")), "{seen}");
    assert!(seen["refused"].as_str().unwrap().contains("name is required"), "{seen}");
    let answer = seen["answer"].as_str().unwrap();
    assert!(answer.contains("- Name: Ada <b>bold</b>") && answer.contains("- Favorite Integer: 7"), "{seen}");
    assert_eq!(seen["injected"], 0, "{seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
}
