//! `--record DIR` and `--replay DIR` through the binary: a run against a loopback model
//! recorded as cassettes, then replayed with the model gone, giving the same answer; a
//! changed prompt under `--replay` fails naming the nearest cassette and the difference.

use std::path::Path;
use std::process::Output;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

fn model() -> Server {
    Server::respond(|request| {
        let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
        let message = match messages.iter().rev().find(|m| m["role"] == "tool") {
            Some(tool) => {
                json!({"role": "assistant", "content": format!("Read: {}", tool["content"].as_str().unwrap_or(""))})
            }
            None => {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{}", messages.len()), "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"note.txt\"}"}}]})
            }
        };
        Reply::chat(message)
    })
}

#[test]
fn a_recorded_run_replays_offline_and_a_changed_prompt_names_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "The secret word is tangerine.").unwrap();
    let server = model();
    let base = format!("{}/v1", server.url);
    let live = ["--tools", "read_file", "--model", "openai:m", "--base-url", &base, "--json"];
    let mut args = vec!["run", "What is the secret?", "--record", "tapes"];
    args.extend(live);
    let out = harnessx(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recorded: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert!(recorded["output"].as_str().unwrap().contains("tangerine"), "{recorded}");
    let tapes: Vec<_> = std::fs::read_dir(dir.path().join("tapes")).unwrap().flatten().collect();
    assert_eq!(tapes.len(), 2);
    for tape in &tapes {
        let text = std::fs::read_to_string(tape.path()).unwrap();
        assert!(!text.to_ascii_lowercase().contains("authorization"), "{text}");
    }
    drop(server);

    // The model is gone: the replay answers the same.
    let gone = harnessx_test_support::server::dead_url();
    let offline = ["--tools", "read_file", "--model", "openai:m", "--base-url", &gone, "--json"];
    let mut args = vec!["run", "What is the secret?", "--replay", "tapes"];
    args.extend(offline);
    let out = harnessx(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let replayed: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(replayed["output"], recorded["output"]);

    let mut args = vec!["run", "What is the secret word?", "--replay", "tapes"];
    args.extend(offline);
    let out = harnessx(dir.path(), &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // (With --json the run's error is its last event, on stdout.)
    let error: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(error["type"], "error", "{error}");
    let said = error["message"].as_str().unwrap();
    assert!(said.contains("no cassette matches this request; the nearest, tapes/"), "{said}");
    assert!(said.contains("recorded \"What is the secret?\", now \"What is the secret word?\""), "{said}");

    // Both at once, or a folder that is not cassettes: exit 2.
    let mut args = vec!["run", "x", "--replay", "tapes", "--record", "more"];
    args.extend(offline);
    assert_eq!(harnessx(dir.path(), &args).status.code(), Some(2));
    let mut args = vec!["run", "x", "--replay", "note.txt"];
    args.extend(offline);
    let out = harnessx(dir.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--replay note.txt"), "{}", stderr(&out));
}

/// Cassettes recorded by a plain run answer a durable run (SQLite) and a run on a Restate
/// cluster (a worker with `--replay`): the request is the harness's own, the durable run's
/// cache key left out, so one recording serves every backend.
#[test]
fn one_recording_replays_on_sqlite_and_on_a_restate_worker() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("note.txt"), "The secret word is tangerine.").unwrap();
    let server = model();
    let base = format!("{}/v1", server.url);
    let out = harnessx(
        d,
        &[
            "run",
            "What is the secret?",
            "--record",
            "tapes",
            "--tools",
            "read_file",
            "--model",
            "openai:m",
            "--base-url",
            &base,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recorded: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    drop(server);
    let gone = format!("{}/v1", harnessx_test_support::server::dead_url());
    let offline =
        ["--replay", "tapes", "--tools", "read_file", "--model", "openai:m", "--base-url", &gone, "--json"];

    let mut args = vec!["run", "What is the secret?", "--durable", "runs.db"];
    args.extend(offline);
    let out = harnessx(d, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let durable: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(durable["output"], recorded["output"], "{durable}");

    let Some(restate) = harnessx_test_support::restate::RestateServer::start() else { return };
    let worker = super::cli_restate::Worker::start(d, &restate, &offline[..offline.len() - 1]);
    let out = harnessx(
        d,
        &["run", "What is the secret?", "--restate", &restate.ingress_url, "--run-id", "replayed", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), restate.log_tail());
    let clustered: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(clustered["output"], recorded["output"], "{clustered}");
    drop(worker);
}
