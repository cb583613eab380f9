//! `runs fork` through the binary: a journaled run against a loopback model whose turn 1
//! runs `run_bash` (`manual`, leaving a trace in a file), forked at turn 2 onto another
//! model: the trace shows one execution, the new model saw turn 1's result, `runs show`
//! says where the fork came from, the source is untouched; a turn the run lacks exits 2
//! naming its turns, an unknown run exits 1 in one line, a cluster is refused.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

fn json(out: &Output) -> Value {
    serde_json::from_str(stdout(out).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// A model that runs `echo ran >> trace.txt` while its history has no tool result, then
/// answers `NAME saw: RESULT`.
fn model(name: &'static str) -> Server {
    Server::respond(move |request| {
        let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
        let message = match messages.iter().rev().find(|m| m["role"] == "tool") {
            Some(tool) => {
                json!({"role": "assistant", "content": format!("{name} saw: {}", tool["content"].as_str().unwrap_or(""))})
            }
            None => {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{}", messages.len()), "type": "function",
                "function": {"name": "run_bash", "arguments": "{\"command\": \"echo ran >> trace.txt\"}"}}]})
            }
        };
        Reply::chat(message)
    })
}

/// How many times the command ran.
fn traces(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("trace.txt")).unwrap_or_default().lines().count()
}

fn show(dir: &Path, run_id: &str) -> Value {
    let out = harnessx(dir, &["runs", "show", run_id, "--durable", "runs.db", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)
}

#[test]
fn a_fork_after_a_manual_call_does_not_run_it_again_and_says_where_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let first = model("first");
    let base = format!("{}/v1", first.url);
    let out = harnessx(
        dir.path(),
        &[
            "run",
            "Leave a trace.",
            "--tools",
            "bash",
            "--yes",
            "--model",
            "openai:first",
            "--base-url",
            &base,
            "--durable",
            "runs.db",
            "--run-id",
            "src",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("first saw: "), "{}", stdout(&out));
    assert_eq!(traces(dir.path()), 1);
    let source = show(dir.path(), "src");
    assert_eq!(source["report"]["turns"], 2, "{source}");
    assert!(source["report"].get("forked_from").is_none(), "{source}");

    // At turn 2, onto another model (no --yes: the copied call is not asked about, nor run).
    let other = model("other");
    let other_base = format!("{}/v1", other.url);
    let out = harnessx(
        dir.path(),
        &[
            "runs",
            "fork",
            "src",
            "--at",
            "2",
            "--durable",
            "runs.db",
            "--tools",
            "bash",
            "--model",
            "openai:other",
            "--base-url",
            &other_base,
            "--run-id",
            "f2",
            "--json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("harnessx: run id f2 (forked from src at turn 2)\n"), "{}", stderr(&out));
    let stopped = json(&out);
    assert_eq!((&stopped["run_id"], &stopped["status"]), (&json!("f2"), &json!("completed")), "{stopped}");
    assert_eq!(stopped.as_object().unwrap().len(), 4, "as `run --durable --json`: {stopped}");
    let said = stopped["output"].as_str().unwrap();
    assert!(said.starts_with("other saw: ") && said.contains("[exit code 0]"), "{said}");
    assert_eq!(traces(dir.path()), 1, "the manual call of turn 1 ran once");
    // The other model was asked once, for turn 2, with turn 1's call and result.
    let asked = other.bodies();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["model"], "other");
    let messages = asked[0]["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").expect("turn 1's result");
    assert_eq!(result["content"].as_str().unwrap(), said.trim_start_matches("other saw: "));
    assert!(messages.iter().any(|m| m["tool_calls"][0]["function"]["name"] == "run_bash"), "{messages:?}");

    // `runs show` says where it came from; the source is as it was.
    let out = harnessx(dir.path(), &["runs", "show", "f2", "--durable", "runs.db"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("run f2\nforked from src at turn 2\n"), "{}", stdout(&out));
    let forked = show(dir.path(), "f2");
    assert_eq!(forked["report"]["forked_from"], json!({"run_id": "src", "turn": 2}), "{forked}");
    assert_eq!(forked["entries"][0]["entry"], json!({"kind": "forked", "run_id": "src", "turn": 2}));
    assert_eq!(show(dir.path(), "src"), source, "the source's report and entries");

    // At turn 1 (the prompt alone), a new id, text, the agent from a configuration file
    // as for `run`: the other model calls it again, and it runs.
    let config = format!("model = \"openai:other\"\nbase_url = \"{other_base}\"\ntools = [\"bash\"]\n");
    std::fs::write(dir.path().join("harnessx.toml"), config).unwrap();
    let out = harnessx(dir.path(), &["runs", "fork", "src", "--at", "1", "--durable", "runs.db", "--yes"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("harnessx: run id run-"), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("other saw: "), "{}", stdout(&out));
    assert_eq!(traces(dir.path()), 2);
}

#[test]
fn a_fork_at_a_turn_the_run_lacks_or_of_no_run_or_on_a_cluster_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = model("first");
    let base = format!("{}/v1", first.url);
    let flags =
        ["--tools", "bash", "--yes", "--model", "openai:first", "--base-url", &base, "--durable", "runs.db"];
    let mut args = vec!["run", "Leave a trace.", "--run-id", "src"];
    args.extend(flags);
    assert_eq!(code(&harnessx(dir.path(), &args)), 0);
    let asked = first.bodies().len();

    for at in ["0", "99"] {
        let mut args = vec!["runs", "fork", "src", "--at", at];
        args.extend(flags);
        let out = harnessx(dir.path(), &args);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("run \"src\" has 2 turns: a fork starts at a turn from 1 to 2"),
            "{}",
            stderr(&out)
        );
    }
    let mut args = vec!["runs", "fork", "nope", "--at", "1"];
    args.extend(flags);
    let out = harnessx(dir.path(), &args);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("harnessx: no run with id \"nope\""), "{}", stderr(&out));

    let out = harnessx(dir.path(), &["runs", "fork", "src", "--at", "1", "--restate", "http://127.0.0.1:9"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("`runs fork` reads a journal"), "{}", stderr(&out));

    // Nothing was asked, run or written.
    assert_eq!(first.bodies().len(), asked);
    assert_eq!(traces(dir.path()), 1);
    let out = harnessx(dir.path(), &["runs", "list", "--durable", "runs.db", "--json"]);
    assert_eq!(json(&out).as_array().unwrap().len(), 1);
}
