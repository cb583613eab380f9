//! Durable runs on a Restate cluster from the command line, end to end: a real
//! restate-server on loopback (installed from npm by the test support), a `harnessx
//! worker` process serving the test model, and `run`, `approve`, `answer` and `resume`
//! with `--restate`, each its own process.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::restate::RestateServer;
use serde_json::{Value, json};

fn harnessx(dir: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, args)
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

fn json(out: &Output) -> Value {
    serde_json::from_str(stdout(out).trim())
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)))
}

/// A `harnessx worker` process, stopped with SIGTERM when dropped.
pub(crate) struct Worker {
    child: Child,
    /// Its `--json` line.
    ready: Value,
}

impl Worker {
    pub(crate) fn start(dir: &Path, server: &RestateServer, flags: &[&str]) -> Self {
        Self::start_with_env(dir, server, flags, &[])
    }

    fn start_with_env(dir: &Path, server: &RestateServer, flags: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
            .current_dir(dir)
            .envs(env.iter().copied())
            .args(["worker", "--restate-admin", &server.admin_url, "--listen", "127.0.0.1:0", "--json"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the harnessx binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{e}: the worker's first line {line:?}\n{}", server.log_tail()));
        Self { child, ready }
    }

    /// SIGTERM, and its exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_run_on_the_cluster_waits_for_an_approval_from_another_process_and_finishes() {
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let worker = Worker::start(d, &server, &["--tools", "write_file"]);
    assert!(worker.ready["deployment"].as_str().unwrap().starts_with("dp_"), "{}", worker.ready);
    assert!(
        worker.ready["config"]["summary"].as_str().unwrap().contains("tools [write_file, "),
        "{}",
        worker.ready
    );
    let ingress = server.ingress_url.as_str();

    // write_file asks; no one is there: the run waits, durably (exit 3).
    // Agent flags with --restate say what the workers must have; these match.
    let out = harnessx(
        d,
        &["run", "Write it.", "--restate", ingress, "--run-id", "w1", "--tools", "write_file", "--json"],
    );
    assert_eq!(code(&out), 3, "{}\n{}", stderr(&out), server.log_tail());
    let stopped = json(&out);
    assert_eq!(stopped["run_id"], "w1");
    assert_eq!(stopped["status"], "needs_input", "{stopped}");
    assert_eq!(stopped["output"], Value::Null);
    let waiting = &stopped["needs_input"][0];
    assert_eq!(waiting["kind"], "approval", "{stopped}");
    assert_eq!(waiting["tool"], "write_file");
    let call = waiting["call_id"].as_str().unwrap().to_owned();

    // The same id again is refused; so is an approval of a call it does not wait on.
    let out = harnessx(d, &["run", "Again.", "--restate", ingress, "--run-id", "w1"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("a run with id \"w1\" already exists"), "{}", stderr(&out));
    let out = harnessx(d, &["approve", "w1", "nope", "--restate", ingress]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "run \"w1\" is not waiting for an approval of call \"nope\"; it waits for: approval of \"{call}\""
        )),
        "{}",
        stderr(&out)
    );

    // Approved from a third process; the run goes on by itself, `resume` follows it.
    let out = harnessx(d, &["approve", "w1", &call, "--restate", ingress]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = harnessx(d, &["resume", "w1", "--restate", ingress, "--json"]);
    assert_eq!(code(&out), 0, "{}\n{}", stderr(&out), server.log_tail());
    let done = json(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["output"].as_str().unwrap().starts_with("Ran "), "{done}");
    assert_eq!(done["needs_input"], serde_json::json!([]));

    // Text mode follows the run's events on stderr and prints the answer.
    let out = harnessx(d, &["resume", "w1", "--restate", ingress]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("turn 1: calls write_file ("), "{}", stderr(&out));
    assert!(stderr(&out).contains("turn 2: the final answer"), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Ran "), "{}", stdout(&out));

    // Flags that do not match the workers: the run fails at once, naming both.
    let out = harnessx(
        d,
        &["run", "Read it.", "--restate", ingress, "--run-id", "w2", "--tools", "read_file", "--json"],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let failed = json(&out);
    assert_eq!(failed["status"], "failed", "{failed}");
    let why = failed["output"].as_str().unwrap();
    assert!(why.starts_with("run \"w2\" asked for tools [read_file, "), "{why}");
    assert!(why.contains("; the cluster's workers have tools [write_file, "), "{why}");

    let status = worker.stop();
    assert!(status.success(), "a worker stops cleanly on SIGTERM: {status}");
}

/// An OpenAI-compatible reply calling `run_bash` `n` times (ids `call_{first}`...), each
/// appending its id to `calls.log`; or, with `n == 0`, the answer `done`.
fn bash_turn(first: usize, n: usize) -> harnessx_test_support::server::Reply {
    let calls: Vec<Value> = (first..first + n)
        .map(|i| {
            let arguments = json!({"command": format!("echo call_{i} >> calls.log")}).to_string();
            json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "run_bash", "arguments": arguments}})
        })
        .collect();
    let message = if n == 0 {
        json!({"role": "assistant", "content": "done"})
    } else {
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    };
    let body = json!({"choices": [{"index": 0, "finish_reason": if n == 0 { "stop" } else { "tool_calls" },
        "message": message}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}});
    harnessx_test_support::server::Reply::json(200, body.to_string())
}

#[test]
fn a_run_on_the_cluster_waits_at_its_tool_call_limit_and_goes_on_when_it_is_raised() {
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model =
        harnessx_test_support::server::Server::start(vec![bash_turn(1, 3), bash_turn(4, 1), bash_turn(0, 0)]);
    let base = format!("{}/v1", model.url);
    // The key only reaches the loopback server.
    let worker = Worker::start_with_env(
        d,
        &server,
        &["--model", "openai:gpt-4o", "--base-url", &base, "--tools", "run_bash", "--yes"],
        &[("OPENAI_API_KEY", "test-key")],
    );
    let ingress = server.ingress_url.as_str();
    let ran = || std::fs::read_to_string(d.join("calls.log")).unwrap_or_default();

    // The run's own limit, sent with it: two of the three calls run, and it waits.
    let out = harnessx(
        d,
        &["run", "Log.", "--restate", ingress, "--run-id", "b1", "--max-tool-calls", "2", "--json"],
    );
    assert_eq!(code(&out), 4, "{}\n{}", stderr(&out), server.log_tail());
    let stopped = json(&out);
    assert_eq!(
        (&stopped["status"], &stopped["limit"]),
        (&json!("limit_reached"), &json!("tool_calls")),
        "{stopped}"
    );
    assert_eq!(
        (&stopped["usage"]["tool_calls"], &stopped["usage"]["requests"]),
        (&json!(2), &json!(1)),
        "{stopped}"
    );
    assert_eq!(ran(), "call_1\ncall_2\n");
    assert_eq!(model.requests().len(), 1, "no request after the stop");
    // Following it again says the same.
    let out = harnessx(d, &["resume", "b1", "--restate", ingress, "--json"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));

    // Raised to 3: the cut call runs, the next turn's call is cut, and it waits again.
    let out = harnessx(d, &["resume", "b1", "--restate", ingress, "--max-tool-calls", "3", "--json"]);
    assert_eq!(code(&out), 4, "{}\n{}", stderr(&out), server.log_tail());
    assert_eq!(ran(), "call_1\ncall_2\ncall_3\n", "nothing journaled ran again");
    assert_eq!(model.requests().len(), 2);

    // Raised again: it finishes.
    let out = harnessx(d, &["resume", "b1", "--restate", ingress, "--max-tool-calls", "10", "--json"]);
    assert_eq!(code(&out), 0, "{}\n{}", stderr(&out), server.log_tail());
    assert_eq!(json(&out)["output"], "done");
    assert_eq!(ran(), "call_1\ncall_2\ncall_3\ncall_4\n");
    assert_eq!(model.requests().len(), 3);
    // A run not stopped at a limit has nothing to raise.
    let out = harnessx(d, &["resume", "b1", "--restate", ingress, "--max-tool-calls", "20"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("run \"b1\" is not stopped at a limit"), "{}", stderr(&out));
    drop(worker);
}

#[test]
fn restate_flags_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A run on a cluster goes on with its workers' agent flags.
    let out = harnessx(d, &["resume", "r", "--restate", "http://127.0.0.1:9", "--tools", "read_file"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--tools has no effect with --restate: the run goes on on the cluster's workers, with their agent flags"),
        "{}",
        stderr(&out)
    );
    // --durable and --restate exclude each other; --run-id needs one of them.
    let out = harnessx(d, &["run", "x", "--restate", "http://127.0.0.1:9", "--durable", "runs.db"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = harnessx(d, &["run", "x", "--run-id", "r"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--run-id needs --durable FILE or --restate URL"), "{}", stderr(&out));
    let out = harnessx(d, &["resume", "r"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    // Not a URL; a dead cluster.
    let out = harnessx(d, &["run", "x", "--restate", "localhost:8080"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("is not an http(s) URL"), "{}", stderr(&out));
    let out = harnessx(d, &["approve", "r", "c", "--restate", "http://127.0.0.1:9"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("the Restate cluster at http://127.0.0.1:9/"), "{}", stderr(&out));
    // The workers' configuration cannot be known from --mcp without starting the server:
    // `run --restate` starts none (and sends no expectation), and the cluster is asked.
    let out = harnessx(d, &["run", "x", "--restate", "http://127.0.0.1:9", "--mcp", "touch started"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("the Restate cluster at http://127.0.0.1:9/"), "{}", stderr(&out));
    assert!(!d.join("started").exists(), "run --restate started an MCP server");
    // A worker whose admin API is not there does not serve.
    let out = harnessx(d, &["worker", "--restate-admin", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("registering http://127.0.0.1:"), "{}", stderr(&out));
}

/// A typed run on the cluster: the workers check the answer against the schema the run
/// carries; `--json` gives it as a JSON value, the text mode as one line of JSON, and
/// `resume` gives it again. A schema the workers cannot use fails the run, naming why.
#[test]
fn a_typed_run_on_the_cluster_answers_a_json_value() {
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("schema.json"),
        r#"{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0}},"required":["city","population"]}"#,
    )
    .unwrap();
    let worker = Worker::start(d, &server, &["--tools", "read_file"]);
    let ingress = server.ingress_url.as_str();
    for mode in ["tool", "native", "prompted"] {
        let id = format!("typed-{mode}");
        let out = harnessx(
            d,
            &[
                "run",
                "What city?",
                "--restate",
                ingress,
                "--run-id",
                &id,
                "--tools",
                "read_file",
                "--output-schema",
                "schema.json",
                "--output-mode",
                mode,
                "--json",
            ],
        );
        assert_eq!(code(&out), 0, "{mode}: {}\n{}", stderr(&out), server.log_tail());
        let done = json(&out);
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["output"], json!({"city": "a", "population": 0}), "{mode}: {done}");
        let out = harnessx(d, &["resume", &id, "--restate", ingress]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out), "{\"city\":\"a\",\"population\":0}\n", "{mode}");
    }
    // A free-text run on the same workers still answers text.
    let out = harnessx(
        d,
        &["run", "Hello.", "--restate", ingress, "--run-id", "text", "--tools", "read_file", "--json"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(json(&out)["output"].is_string());
    drop(worker);
}

/// Fallback models on the cluster: a worker whose first model's server is down (nothing
/// listens there) asks its `--fallback-model`, and the run completes with that model's
/// answer; the switch is one of the run's journaled steps' answers, not asked again.
#[test]
fn a_workers_fallback_model_answers_when_its_first_is_down() {
    use harnessx_test_support::server::{Reply, Server, dead_url};
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let backup = Server::respond(|request| {
        let text = "Backup here.";
        if request.body["stream"] == true {
            Reply::event_stream(harnessx_test_support::sse::openai(&[
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ]))
        } else {
            Reply::json(
                200,
                json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
                    .to_string(),
            )
        }
    });
    let down = format!("{}/v1", dead_url());
    let fallback = format!("openai:backup@{}/v1", backup.url);
    let worker = Worker::start(
        d,
        &server,
        &[
            "--model",
            "openai:primary",
            "--base-url",
            &down,
            "--fallback-model",
            &fallback,
            "--tools",
            "read_file",
        ],
    );
    let ingress = server.ingress_url.as_str();
    let out = harnessx(d, &["run", "Hello.", "--restate", ingress, "--run-id", "fb", "--json"]);
    assert_eq!(code(&out), 0, "{}\n{}", stderr(&out), server.log_tail());
    let done = json(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"], "Backup here.");
    assert_eq!(backup.requests().len(), 1, "the answered turn is not asked again");
    assert_eq!(backup.bodies()[0]["model"], "backup");
    drop(worker);
}

/// A long run on the cluster fits its window: the workers cap each result and compact
/// the history as a journaled step, so a run whose results add up to about twice the
/// window completes and no request over the window reaches the (window-enforcing) server.
#[test]
fn a_long_run_on_the_cluster_compacts_within_the_window() {
    use harnessx_test_support::window::{Dialect, WindowServer};
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text: String = (0..3_000).map(|i| format!("line {i}: some words of a long file\n")).collect();
    std::fs::write(d.join("big.txt"), text).unwrap();
    let window =
        WindowServer::calling(Dialect::OpenAi, 8_000, 15, "read_file", Some(r#"{"path": "big.txt"}"#));
    let base = format!("{}/v1", window.server.url);
    let worker = Worker::start(
        d,
        &server,
        &[
            "--model",
            "openai:local-model",
            "--base-url",
            &base,
            "--tools",
            "read_file",
            "--max-result-chars",
            "3000",
            "--context-window",
            "8000",
        ],
    );
    let ingress = server.ingress_url.as_str();
    let out = harnessx(
        d,
        &["run", "Read big.txt again and again.", "--restate", ingress, "--run-id", "long", "--json"],
    );
    assert_eq!(code(&out), 0, "{}\n{}", stderr(&out), server.log_tail());
    let done = json(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"], "done after 15 pages");
    let seen = window.seen();
    assert!(seen.iter().all(|s| !s.refused), "no request over the window reached the server");
    let largest: u64 = seen.iter().map(|s| s.tokens).max().unwrap_or_default();
    assert!(largest <= 8_000, "{largest}");
    // The history shrank at least once (cleared results or a summary): compacted.
    let turns: Vec<u64> = seen.iter().filter(|s| !s.summary).map(|s| s.tokens).collect();
    assert!(turns.windows(2).any(|w| w[1] < w[0]), "{turns:?}");
    drop(worker);
}

/// A run's `--price` goes with it to the cluster: workers whose model has no known price
/// count the run's cost at the run's price and stop it at its `--max-cost-usd`; without
/// a price the run cannot have a cost limit and says so.
#[test]
fn a_runs_price_goes_with_it_to_the_cluster() {
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = harnessx_test_support::server::Server::start(vec![bash_turn(1, 1)]);
    let base = format!("{}/v1", model.url);
    let worker = Worker::start(
        d,
        &server,
        &["--model", "openai:local-model", "--base-url", &base, "--tools", "run_bash", "--yes"],
    );
    let ingress = server.ingress_url.as_str();
    // 100 input and 10 output tokens at $1 a million each: $0.00011, over $0.0001.
    let out = harnessx(
        d,
        &[
            "run",
            "Log.",
            "--restate",
            ingress,
            "--run-id",
            "p1",
            "--max-cost-usd",
            "0.0001",
            "--price",
            "1,1",
            "--json",
        ],
    );
    assert_eq!(code(&out), 4, "{}\n{}", stderr(&out), server.log_tail());
    let stopped = json(&out);
    assert_eq!(
        (&stopped["status"], &stopped["limit"]),
        (&json!("limit_reached"), &json!("cost")),
        "{stopped}"
    );
    let cost = stopped["usage"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.00011).abs() < 1e-9, "{stopped}");
    // No price anywhere: a cost limit cannot be kept, and the run says why.
    let out = harnessx(
        d,
        &["run", "Log.", "--restate", ingress, "--run-id", "p2", "--max-cost-usd", "0.0001", "--json"],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let failed = json(&out);
    assert!(failed["output"].as_str().unwrap().contains("price"), "{failed}");
    drop(worker);
}

/// Media on the cluster: a 100 kB picture attached to a run and read again by a tool
/// (both over the 64 KiB a journal entry takes inline) go to the blob store the worker
/// and the client share, once (one file: the same bytes), and reach the model whole on
/// both requests. Without a store, the client refuses the attachment in one line.
#[test]
fn attached_and_returned_images_on_the_cluster_go_through_the_shared_blob_store() {
    use harnessx_test_support::server::{Reply, Server};
    let Some(server) = RestateServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut png = include_bytes!("../../../examples/assets/bars.png").to_vec();
    png.resize(100_000, 0);
    std::fs::write(d.join("big.png"), &png).unwrap();
    let model = Server::respond(|request| {
        let results = request.body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
        let message = match results {
            0 => {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"big.png\"}"}}]})
            }
            _ => json!({"role": "assistant", "content": "Five bars."}),
        };
        Reply::json(
            200,
            json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).to_string(),
        )
    });
    let base = format!("{}/v1", model.url);
    let agent = ["--model", "openai:m", "--base-url", &base, "--tools", "read_file", "--blob-store", "blobs"];
    let worker = Worker::start(d, &server, &agent);
    let ingress = server.ingress_url.as_str();
    let mut run = vec![
        "run",
        "How many bars?",
        "--attach",
        "big.png",
        "--restate",
        ingress,
        "--run-id",
        "pic",
        "--json",
    ];
    run.extend_from_slice(&agent);
    let out = harnessx(d, &run);
    assert_eq!(code(&out), 0, "{}\n{}", stderr(&out), server.log_tail());
    assert_eq!(json(&out)["output"], "Five bars.");
    let url = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|p| p["type"] == "image_url")
            .map(|p| p["image_url"]["url"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let bodies = model.bodies();
    assert_eq!(bodies.len(), 2);
    let first = url(&bodies[0]);
    assert_eq!(first.len(), 1);
    assert!(first[0].len() > 130_000, "the image was not sent whole");
    assert_eq!(url(&bodies[1]), [first[0].clone(), first[0].clone()], "the prompt's and the result's image");
    let stored: Vec<_> = std::fs::read_dir(d.join("blobs")).unwrap().filter_map(Result::ok).collect();
    assert_eq!(stored.len(), 1, "{stored:?}");

    // Without a store the client says what to do, before anything is sent.
    let mut run =
        vec!["run", "How many bars?", "--attach", "big.png", "--restate", ingress, "--run-id", "pic2"];
    run.extend_from_slice(&agent[..6]);
    let out = harnessx(d, &run);
    assert_ne!(code(&out), 0);
    let err = stderr(&out);
    assert!(err.contains("holds 100000 bytes of image/png, over the 65536 bytes a Restate journal entry holds inline; configure a blob store"), "{err}");
    assert_eq!(model.bodies().len(), 2);
    drop(worker);
}
