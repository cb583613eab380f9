//! `harnessx serve` through the binary, on loopback: a run started, streamed, paused at
//! an approval, approved with edited arguments and finished; a denial with a message; a
//! run paused at its turn limit and resumed past it; cancel; a token; 404s, malformed
//! JSON, a body over the limit; a second server on the same journal refused; a server
//! killed with -9 mid-run and started again goes on with the run, and a client that
//! reconnects with `Last-Event-ID` misses no event.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use harnessx_test_support::http::{Answer, request, sse_events};
use serde_json::{Value, json};

/// A `harnessx serve` process, killed when dropped.
pub(crate) struct Serve {
    child: Child,
    pub(crate) url: String,
}

impl Serve {
    pub(crate) fn start(dir: &Path, flags: &[&str]) -> Result<Self, String> {
        Self::start_on(dir, &["--durable", "runs.db"], flags)
    }

    /// `harnessx serve` with the flags saying where the runs are (`--durable FILE`,
    /// `--restate URL`), then `flags`.
    fn start_on(dir: &Path, on: &[&str], flags: &[&str]) -> Result<Self, String> {
        let listen: &[&str] = if flags.contains(&"--listen") { &[] } else { &["--listen", "127.0.0.1:0"] };
        let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
            .args(["serve", "--json"])
            .args(on)
            .args(listen)
            .args(flags)
            .current_dir(dir)
            .env("XDG_CONFIG_HOME", dir.join("no-config"))
            .env_remove("HARNESSX_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        if line.is_empty() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            let _ = child.wait();
            return Err(err);
        }
        let ready: Value = serde_json::from_str(&line).unwrap();
        Ok(Self { child, url: ready["url"].as_str().unwrap().to_owned() })
    }

    pub(crate) fn call(&self, method: &str, path: &str, body: Option<Value>) -> Answer {
        self.call_with(method, path, &[], body)
    }

    fn call_with(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<Value>) -> Answer {
        let body = body.map(|b| b.to_string().into_bytes());
        request(method, &format!("{}{path}", self.url), headers, body.as_deref(), Duration::from_secs(60))
            .unwrap()
    }

    /// The events of run `id` after event `after` (all with `None`), until the stream ends.
    fn events(&self, id: &str, after: Option<u64>) -> Vec<(Option<u64>, Value)> {
        let last = after.map(|n| n.to_string());
        let headers: Vec<(&str, &str)> = last.iter().map(|l| ("Last-Event-ID", l.as_str())).collect();
        let answer = self.call_with("GET", &format!("/v1/runs/{id}/events"), &headers, None);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.header("content-type"), Some("text/event-stream"));
        sse_events(&answer.body)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn types(events: &[(Option<u64>, Value)]) -> Vec<String> {
    events.iter().map(|(_, e)| e["type"].as_str().unwrap_or_default().to_owned()).collect()
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the secret is tangerine\n").unwrap();
    dir
}

#[test]
fn a_run_streams_pauses_for_an_approval_with_edited_arguments_and_finishes() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file,write_file"]).unwrap();
    let started = server.call("POST", "/v1/runs", Some(json!({"prompt": "Look around.", "run_id": "r1"})));
    assert_eq!((started.status, started.json()), (201, json!({"run_id": "r1"})));
    // The test model writes `a`, which asks: the run pauses, and the stream ends there.
    let events = server.events("r1", None);
    assert_eq!(types(&events).last().map(String::as_str), Some("needs_input"), "{events:?}");
    let ids: Vec<u64> = events.iter().map(|(id, _)| id.unwrap()).collect();
    assert_eq!(ids, (0..events.len() as u64).collect::<Vec<_>>(), "ids are the events' indexes");
    let waiting = &events.last().unwrap().1["needs_input"][0];
    assert_eq!((waiting["kind"].as_str(), waiting["tool"].as_str()), (Some("approval"), Some("write_file")));
    let call = waiting["call_id"].as_str().unwrap();
    let shown = server.call("GET", "/v1/runs/r1", None).json();
    assert_eq!(shown["status"], "needs_input");
    assert_eq!(shown["prompt"], "Look around.");
    assert!(shown.get("messages").is_none());

    let approved = server.call(
        "POST",
        &format!("/v1/runs/r1/approvals/{call}"),
        Some(json!({"decision": "approve", "arguments": {"path": "edited.txt", "content": "from the page"}})),
    );
    assert_eq!(approved.status, 202, "{}", approved.body);
    let more = server.events("r1", Some(*ids.last().unwrap()));
    assert_eq!(more.first().unwrap().0, Some(ids.len() as u64), "it goes on from the next event");
    assert_eq!(types(&more).last().map(String::as_str), Some("run_end"), "{more:?}");
    let end = &more.last().unwrap().1;
    assert_eq!(end["status"], "completed");
    assert_eq!(std::fs::read_to_string(dir.path().join("edited.txt")).unwrap(), "from the page");
    assert!(!dir.path().join("a").exists(), "the model's own arguments ran");
    // The whole stream, from the start, is the two halves.
    let all = server.events("r1", None);
    assert_eq!(all.len(), events.len() + more.len());
    let listed = server.call("GET", "/v1/runs", None).json();
    assert_eq!(listed["runs"][0]["run_id"], "r1");
    assert_eq!(listed["runs"][0]["status"], "completed");
    // Approving again: the run no longer waits.
    let again =
        server.call("POST", &format!("/v1/runs/r1/approvals/{call}"), Some(json!({"decision": "approve"})));
    assert_eq!(again.status, 409, "{}", again.body);
}

#[test]
fn a_denial_with_a_message_reaches_the_model_and_a_limit_is_resumed_past() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file,write_file"]).unwrap();
    server.call("POST", "/v1/runs", Some(json!({"prompt": "Look.", "run_id": "d"})));
    let events = server.events("d", None);
    let call = events.last().unwrap().1["needs_input"][0]["call_id"].as_str().unwrap().to_owned();
    let denied = server.call(
        "POST",
        &format!("/v1/runs/d/approvals/{call}"),
        Some(json!({"decision": "deny", "message": "not in this folder"})),
    );
    assert_eq!(denied.status, 202, "{}", denied.body);
    let more = server.events("d", events.last().unwrap().0);
    let end =
        more.iter().find(|(_, e)| e["type"] == "tool_call_end" && e["call_id"] == call.as_str()).unwrap();
    assert_eq!(end.1["is_error"], true);
    assert!(end.1["content"].as_str().unwrap().contains("not in this folder"), "{}", end.1);
    assert!(!dir.path().join("a").exists());

    // A run limited to one turn stops at its limit; resumed with more, it completes.
    drop(server);
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file"]).unwrap();
    let started = server.call(
        "POST",
        "/v1/runs",
        Some(json!({"prompt": "What is the secret?", "run_id": "l", "limits": {"max_turns": 1}})),
    );
    assert_eq!(started.status, 201);
    let limited = server.events("l", None);
    let shown = server.call("GET", "/v1/runs/l", None).json();
    assert_eq!(shown["status"], "limit_reached", "{limited:?}");
    let resumed = server.call("POST", "/v1/runs/l/resume", Some(json!({"limits": {"max_turns": 10}})));
    assert_eq!(resumed.status, 202, "{}", resumed.body);
    let rest = server.events("l", limited.last().unwrap().0);
    assert_eq!(rest.last().unwrap().1["status"], "completed", "{rest:?}");
}

#[test]
fn bad_requests_get_one_line_errors_with_their_status() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file", "--max-body-bytes", "1000"]).unwrap();
    let cases: Vec<(Answer, u16, &str)> = vec![
        (server.call("GET", "/v1/runs/nope", None), 404, "no run with id \"nope\""),
        (server.call("GET", "/v1/runs/nope/events", None), 404, "no run with id"),
        (server.call("POST", "/v1/runs/nope/cancel", None), 404, "no run with id"),
        (server.call("GET", "/v1/nothing", None), 404, "no such endpoint"),
        (
            server.call_with("POST", "/v1/runs", &[], None),
            400,
            "the request body is not what this endpoint takes: missing field `prompt`",
        ),
        (
            server.call("POST", "/v1/runs", Some(json!({"prompt": 3}))),
            400,
            "invalid type: integer `3`, expected a string",
        ),
        (
            server.call("POST", "/v1/runs", Some(json!({"prompt": "x", "colour": 1}))),
            400,
            "unknown field `colour`",
        ),
        (
            server.call(
                "POST",
                "/v1/runs",
                Some(json!({"prompt": "x", "attachments": [{"name": "a", "data": "!!"}]})),
            ),
            400,
            "attachments[0] (a): `data` is not base64",
        ),
        (
            server.call("POST", "/v1/runs", Some(json!({"prompt": "x".repeat(2000)}))),
            413,
            "over the limit of 1000 bytes",
        ),
    ];
    for (answer, status, said) in cases {
        assert_eq!(answer.status, status, "{}", answer.body);
        let error = answer.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains(said), "{error:?} does not say {said:?}");
        assert!(!error.contains('\n'));
    }
    let malformed = request(
        "POST",
        &format!("{}/v1/runs", server.url),
        &[],
        Some(b"{\"prompt\": \"unclosed"),
        Duration::from_secs(10),
    )
    .unwrap();
    assert_eq!(malformed.status, 400);
    assert!(
        malformed.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("the request body is not what this endpoint takes: EOF")
    );
    // A run id taken is 409.
    server.call("POST", "/v1/runs", Some(json!({"prompt": "Hi.", "run_id": "same"})));
    let taken = server.call("POST", "/v1/runs", Some(json!({"prompt": "Hi.", "run_id": "same"})));
    assert_eq!(taken.status, 409, "{}", taken.body);
}

#[test]
fn a_token_is_asked_of_every_request_and_beyond_loopback_one_is_required() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file", "--token", "s3cret"]).unwrap();
    for headers in [&[][..], &[("Authorization", "Bearer wrong")][..], &[("Authorization", "s3cret")][..]] {
        let answer = server.call_with("GET", "/v1/runs", headers, None);
        assert_eq!(answer.status, 401, "{headers:?}");
        assert!(answer.json()["error"].as_str().unwrap().contains("Authorization: Bearer TOKEN"));
    }
    let answer = server.call_with("GET", "/v1/runs", &[("Authorization", "Bearer s3cret")], None);
    assert_eq!(answer.status, 200);
    drop(server);
    let refused = Serve::start(dir.path(), &["--listen", "0.0.0.0:0"]).err().expect("refused");
    assert!(refused.contains("serving beyond this machine needs a token"), "{refused}");
}

#[test]
fn a_second_server_on_a_journal_is_refused_and_cancel_stops_a_run() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file,write_file"]).unwrap();
    let refused = Serve::start(dir.path(), &[]).err().expect("refused");
    assert!(refused.contains("another harnessx serve (pid"), "{refused}");
    assert!(refused.contains("serves the journal runs.db"), "{refused}");
    server.call("POST", "/v1/runs", Some(json!({"prompt": "Look.", "run_id": "c"})));
    server.events("c", None);
    let cancelled = server.call("POST", "/v1/runs/c/cancel", None);
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.json()["status"], "failed");
    assert_eq!(cancelled.json()["error"], "cancelled");
    let events = server.events("c", None);
    assert_eq!(events.last().unwrap().1, json!({"type": "error", "message": "cancelled"}));
}

#[test]
fn a_server_killed_mid_run_goes_on_with_it_and_a_reconnecting_client_misses_nothing() {
    use harnessx_test_support::server::{Reply, Server};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let dir = folder();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    // 1: read notes.txt; 2: hang (the server is killed there); 3 (after the restart): answer.
    let model = Server::respond_later(move |_| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let message = match n {
                0 => {
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}]})
                }
                1 => {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    json!({"role": "assistant", "content": "too late"})
                }
                _ => json!({"role": "assistant", "content": "It is tangerine."}),
            };
            Reply::chat(message)
        })
    });
    let base = format!("{}/v1", model.url);
    let flags = ["--model", "openai:m", "--base-url", &base, "--tools", "read_file"];
    let mut server = Serve::start(dir.path(), &flags).unwrap();
    server.call("POST", "/v1/runs", Some(json!({"prompt": "What is the secret?", "run_id": "k"})));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while model.requests().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "the second request never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    // What a client saw before the kill (read from the log by a second connection).
    let seen = {
        let answer = request(
            "GET",
            &format!("{}/v1/runs/k/events", server.url),
            &[],
            None,
            Duration::from_millis(1500),
        );
        // The stream does not end (the run goes on): what came before the timeout.
        sse_events(&answer.unwrap().body)
    };
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let server = Serve::start(dir.path(), &flags).unwrap();
    assert!(!seen.is_empty(), "the client saw nothing before the kill");
    let after = seen.last().and_then(|(id, _)| *id);
    let rest = server.events("k", after);
    assert_eq!(rest.last().unwrap().1["type"], "run_end", "{rest:?}");
    assert_eq!(rest.last().unwrap().1["output"], "It is tangerine.");
    let all = server.events("k", None);
    let ids: Vec<u64> = all.iter().map(|(id, _)| id.unwrap()).collect();
    assert_eq!(ids, (0..all.len() as u64).collect::<Vec<_>>(), "no event missing or repeated");
    if let Some(after) = after {
        assert_eq!(rest.first().unwrap().0, Some(after + 1));
    }
    // The read was journaled: not run again; the model was asked three times in all.
    let reads = all.iter().filter(|(_, e)| e["type"] == "tool_call_end").count();
    assert_eq!(reads, 1, "{all:?}");
    assert_eq!(model.requests().len(), 3);
}

#[test]
fn attachments_sessions_and_tools() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file"]).unwrap();
    // A PNG attached in base64 reaches the model; the events and the run show its summary.
    let png = include_bytes!("../../../examples/assets/bars.png");
    let data = harnessx_test_support::http::base64(png);
    let started = server.call(
        "POST",
        "/v1/runs",
        Some(json!({"prompt": "What is this?", "run_id": "pic", "attachments": [{"name": "bars.png", "data": data}]})),
    );
    assert_eq!(started.status, 201, "{}", started.body);
    let events = server.events("pic", None);
    let summary = json!([{"type": "image", "media_type": "image/png", "bytes": png.len()}]);
    assert_eq!(events[0].1["parts"], summary, "{events:?}");
    assert_eq!(server.call("GET", "/v1/runs/pic", None).json()["attachments"], summary);
    let refused = server.call(
        "POST",
        "/v1/runs",
        Some(json!({"prompt": "x", "attachments": [{"name": "x.bin", "data": harnessx_test_support::http::base64(&[0, 159, 146, 150])}]})),
    );
    assert_eq!(refused.status, 400);
    assert!(
        refused.json()["error"]
            .as_str()
            .unwrap()
            .contains("attachments[0] (x.bin): not a type that can be attached")
    );

    // A session's turns are ID.1, ID.2, ...: each continues the conversation.
    for n in 1..=2 {
        let turn = server.call(
            "POST",
            "/v1/sessions/chat-1/messages",
            Some(json!({"prompt": format!("Turn {n}.")})),
        );
        assert_eq!(
            (turn.status, turn.json()),
            (201, json!({"run_id": format!("chat-1.{n}")})),
            "{}",
            turn.body
        );
        let end = server.events(&format!("chat-1.{n}"), None);
        assert_eq!(end.last().unwrap().1["type"], "run_end", "{end:?}");
    }
    let bad = server.call("POST", "/v1/sessions/a%2Fb/messages", Some(json!({"prompt": "x"})));
    assert_eq!(bad.status, 400, "{}", bad.body);

    let tools = server.call("GET", "/v1/tools", None).json();
    assert_eq!(tools["tools"][0]["name"], "read_file");
    assert_eq!(tools["tools"][0]["input_schema"]["type"], "object");
}

#[test]
fn the_page_is_served_with_a_policy_that_runs_no_other_script() {
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file", "--token", "s3cret"]).unwrap();
    // The page holds no data: it is served without the token, and asks for it.
    let page = server.call("GET", "/", None);
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    let policy = page.header("content-security-policy").unwrap();
    assert!(policy.contains("default-src 'none'") && policy.contains("script-src 'self'"), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert!(page.body.contains(r#"<script src="/assets/app.js" defer></script>"#));
    assert!(page.body.contains(r#"id="token-form""#));
    // No inline script or style in the page; the script never writes HTML.
    assert!(!page.body.contains("<script>") && !page.body.contains("style="));
    let script = server.call("GET", "/assets/app.js", None);
    assert_eq!((script.status, script.header("content-type")), (200, Some("text/javascript; charset=utf-8")));
    for unsafe_sink in
        ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"]
    {
        assert!(!script.body.contains(unsafe_sink), "app.js uses {unsafe_sink}");
    }
    let style = server.call("GET", "/assets/app.css", None);
    assert_eq!((style.status, style.header("content-type")), (200, Some("text/css; charset=utf-8")));
    assert_eq!(server.call("GET", "/v1/runs", None).status, 401);
}

/// The page in a real browser: headless Chromium (Debian's package, installed when
/// missing), driven over the DevTools protocol by `tests/browser/drive_page.mjs`: a prompt
/// typed and sent, the pending call's arguments edited (an edit the schema refuses is said
/// first) and approved, the tool calls and the answer seen; a screenshot saved.
#[test]
fn in_a_real_browser_a_person_edits_and_approves_a_call_and_sees_the_answer() {
    use harnessx_test_support::system::ensure_debian_package;
    let Some(chromium) = ensure_debian_package("chromium", "chromium") else { return };
    let Some(node) = ensure_debian_package("nodejs", "node") else { return };
    let dir = folder();
    let server = Serve::start(dir.path(), &["--tools", "read_file,write_file"]).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/drive_page.mjs");
    let shot = dir.path().join("page.png");
    let out = Command::new(node)
        .args(["--experimental-websocket", script])
        .arg(&chromium)
        .arg(format!("{}/", server.url))
        .arg(&shot)
        .arg(dir.path().join("chromium-profile"))
        .output()
        .unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    assert!(out.status.success(), "{seen}");
    assert_eq!(seen["status"], "completed", "{seen}");
    assert_eq!(seen["toolCalls"], json!(["→ read_file", "→ write_file"]), "{seen}");
    assert!(seen["answer"].as_str().unwrap().contains("edited.txt"), "{seen}");
    assert_eq!(seen["refused"], "arguments.content is required", "{seen}");
    assert_eq!(seen["injected"], 0, "markup from the prompt became an element: {seen}");
    assert!(seen["promptShown"].as_str().unwrap().contains("<img src=x onerror=alert(1)>"), "{seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("edited.txt")).unwrap(), "from the browser");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 5_000, "the screenshot is {} bytes", png.len());
    // Kept where a person can look at it after a run: the test's target folder.
    let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-page.png");
    std::fs::write(&kept, png).unwrap();
}

/// The same flow with the runs on a Restate cluster (a real restate-server on loopback and
/// a `harnessx worker`): start, stream, pause at an approval, approve with edited
/// arguments (the workers run the edit), reconnect with `Last-Event-ID`, deny with a
/// message, resume past a limit, cancel, list, 404; a server killed and started again
/// finds every run where the cluster has it.
#[test]
fn the_same_flow_on_a_restate_cluster() {
    let Some(cluster) = harnessx_test_support::restate::RestateServer::start() else { return };
    let dir = folder();
    let d = dir.path();
    let tools = ["--tools", "read_file,write_file"];
    let _worker = crate::cli_restate::Worker::start(d, &cluster, &tools);
    let on = ["--restate", cluster.ingress_url.as_str(), "--restate-admin", cluster.admin_url.as_str()];
    let server = Serve::start_on(d, &on, &tools).unwrap();

    let started = server.call("POST", "/v1/runs", Some(json!({"prompt": "Look around.", "run_id": "r1"})));
    assert_eq!((started.status, started.json()), (201, json!({"run_id": "r1"})), "{}", cluster.log_tail());
    let taken = server.call("POST", "/v1/runs", Some(json!({"prompt": "Again.", "run_id": "r1"})));
    assert_eq!(taken.status, 409, "{}", taken.body);
    let events = server.events("r1", None);
    assert_eq!(types(&events).last().map(String::as_str), Some("needs_input"), "{events:?}");
    assert_eq!(types(&events).first().map(String::as_str), Some("model_request"), "{events:?}");
    let ids: Vec<u64> = events.iter().map(|(id, _)| id.unwrap()).collect();
    assert_eq!(ids, (0..events.len() as u64).collect::<Vec<_>>(), "ids are the events' indexes");
    let waiting = &events.last().unwrap().1["needs_input"][0];
    assert_eq!((waiting["kind"].as_str(), waiting["tool"].as_str()), (Some("approval"), Some("write_file")));
    let call = waiting["call_id"].as_str().unwrap().to_owned();
    let shown = server.call("GET", "/v1/runs/r1", None).json();
    assert_eq!(shown["status"], "needs_input", "{shown}");
    let wrong = server.call("POST", "/v1/runs/r1/approvals/nope", Some(json!({"decision": "approve"})));
    assert_eq!(wrong.status, 409, "{}", wrong.body);
    assert!(wrong.json()["error"].as_str().unwrap().contains(&call), "{}", wrong.body);

    // A server killed and started again: the run is where the cluster has it.
    drop(server);
    let server = Serve::start_on(d, &on, &tools).unwrap();
    let approved = server.call(
        "POST",
        &format!("/v1/runs/r1/approvals/{call}"),
        Some(json!({"decision": "approve", "arguments": {"path": "edited.txt", "content": "from the page"}})),
    );
    assert_eq!(approved.status, 202, "{}", approved.body);
    let more = server.events("r1", Some(*ids.last().unwrap()));
    assert_eq!(more.first().unwrap().0, Some(ids.len() as u64), "it goes on from the next event");
    let start = more.iter().find(|(_, e)| e["type"] == "tool_call_start" && e["call_id"] == call.as_str());
    assert_eq!(start.unwrap().1["tool"], "write_file", "{more:?}");
    let end = &more.last().unwrap().1;
    assert_eq!(
        (end["type"].as_str(), end["status"].as_str()),
        (Some("run_end"), Some("completed")),
        "{more:?}"
    );
    assert_eq!(std::fs::read_to_string(d.join("edited.txt")).unwrap(), "from the page");
    assert!(!d.join("a").exists(), "the model's own arguments ran");
    let all = server.events("r1", None);
    assert_eq!(all.len(), events.len() + more.len(), "each event once: {all:?}");
    let listed = server.call("GET", "/v1/runs", None).json();
    let r1 = listed["runs"].as_array().unwrap().iter().find(|r| r["run_id"] == "r1").unwrap();
    assert_eq!(r1["status"], "completed", "{listed}");

    // A denial with a message reaches the model as the call's result.
    server.call("POST", "/v1/runs", Some(json!({"prompt": "Look.", "run_id": "d"})));
    let events = server.events("d", None);
    let call = events.last().unwrap().1["needs_input"][0]["call_id"].as_str().unwrap().to_owned();
    let denied = server.call(
        "POST",
        &format!("/v1/runs/d/approvals/{call}"),
        Some(json!({"decision": "deny", "message": "not in this folder"})),
    );
    assert_eq!(denied.status, 202, "{}", denied.body);
    let more = server.events("d", events.last().unwrap().0);
    let ended =
        more.iter().find(|(_, e)| e["type"] == "tool_call_end" && e["call_id"] == call.as_str()).unwrap();
    assert_eq!(ended.1["is_error"], true, "{more:?}");
    assert!(ended.1["content"].as_str().unwrap().contains("not in this folder"), "{}", ended.1);

    // A run limited to one turn stops at its limit (a `run_end` saying so); resumed with
    // more, it completes.
    let started = server.call(
        "POST",
        "/v1/runs",
        Some(json!({"prompt": "What is the secret?", "run_id": "l", "limits": {"max_turns": 1}})),
    );
    assert_eq!(started.status, 201, "{}", started.body);
    // (The workers' agent writes a file first: approved, the turn's calls run.)
    let asked = server.events("l", None);
    let call = asked.last().unwrap().1["needs_input"][0]["call_id"].as_str().unwrap().to_owned();
    let approved =
        server.call("POST", &format!("/v1/runs/l/approvals/{call}"), Some(json!({"decision": "approve"})));
    assert_eq!(approved.status, 202, "{}", approved.body);
    let limited = server.events("l", asked.last().unwrap().0);
    let stop = &limited.last().unwrap().1;
    assert_eq!((stop["type"].as_str(), stop["status"].as_str()), (Some("run_end"), Some("limit_reached")));
    assert_eq!(server.call("GET", "/v1/runs/l", None).json()["status"], "limit_reached");
    let early = server.call("POST", "/v1/runs/r1/resume", None);
    assert_eq!(early.status, 409, "{}", early.body);
    let resumed = server.call("POST", "/v1/runs/l/resume", Some(json!({"limits": {"max_turns": 10}})));
    assert_eq!(resumed.status, 202, "{}", resumed.body);
    let rest = server.events("l", limited.last().unwrap().0);
    assert_eq!(rest.last().unwrap().1["status"], "completed", "{rest:?}");

    // Cancel: a run waiting for an approval stops, failed; its stream ends with the error.
    server.call("POST", "/v1/runs", Some(json!({"prompt": "Look.", "run_id": "c"})));
    let events = server.events("c", None);
    assert_eq!(types(&events).last().map(String::as_str), Some("needs_input"));
    let cancelled = server.call("POST", "/v1/runs/c/cancel", None);
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.json()["status"], "failed", "{}", cancelled.body);
    let rest = server.events("c", events.last().unwrap().0);
    assert_eq!(types(&rest), ["error"], "{rest:?}");
    assert_eq!(rest[0].0, Some(events.len() as u64));

    for (answer, status) in [
        (server.call("GET", "/v1/runs/nope", None), 404),
        (server.call("GET", "/v1/runs/nope/events", None), 404),
        (server.call("POST", "/v1/sessions/s/messages", Some(json!({"prompt": "hi"}))), 400),
    ] {
        assert_eq!(answer.status, status, "{}", answer.body);
        assert!(!answer.json()["error"].as_str().unwrap().contains('\n'));
    }
}

/// A model that asks the person one question with `ask_user`, then answers with what the
/// tool's result said the reply was.
fn asking_model() -> harnessx_test_support::server::Server {
    use harnessx_test_support::server::{Reply, Server};
    Server::respond(|request| {
        let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
        let replied = messages.iter().rev().find(|m| m["role"] == "tool");
        let message = match replied {
            None => {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "q1", "type": "function",
                "function": {"name": "ask_user", "arguments": "{\"question\": \"Which colour?\", \"choices\": [\"red\", \"blue\"]}"}}]})
            }
            Some(tool) => {
                json!({"role": "assistant", "content": format!("Told: {}", tool["content"].as_str().unwrap_or_default())})
            }
        };
        Reply::chat(message)
    })
}

/// The question flow on `server` (its agent on `asking_model`): the run pauses with a
/// `question`, an approval of it is refused, the reply is answered and reaches the model.
fn a_question_is_answered(server: &Serve, id: &str) {
    let started = server.call("POST", "/v1/runs", Some(json!({"prompt": "Paint it.", "run_id": id})));
    assert_eq!(started.status, 201, "{}", started.body);
    let events = server.events(id, None);
    let waiting = &events.last().unwrap().1["needs_input"][0];
    assert_eq!(waiting["kind"], "question", "{events:?}");
    assert_eq!(
        (waiting["tool"].as_str(), waiting["reason"].as_str()),
        (Some("ask_user"), Some("Which colour?"))
    );
    let arguments: Value = serde_json::from_str(waiting["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments["choices"], json!(["red", "blue"]));
    let shown = server.call("GET", &format!("/v1/runs/{id}"), None).json();
    assert_eq!(shown["needs_input"][0]["kind"], "question", "{shown}");
    let approval =
        server.call("POST", &format!("/v1/runs/{id}/approvals/q1"), Some(json!({"decision": "approve"})));
    assert_eq!(approval.status, 409, "{}", approval.body);
    let answered = server.call("POST", &format!("/v1/runs/{id}/answers/q1"), Some(json!({"text": "blue"})));
    assert_eq!(answered.status, 202, "{}", answered.body);
    let more = server.events(id, events.last().unwrap().0);
    let end = &more.last().unwrap().1;
    assert_eq!(end["status"], "completed", "{more:?}");
    assert_eq!(end["output"], "Told: The user answered: blue");
    let again = server.call("POST", &format!("/v1/runs/{id}/answers/q1"), Some(json!({"text": "red"})));
    assert_eq!(again.status, 409, "{}", again.body);
}

#[test]
fn ask_user_pauses_a_run_for_a_reply_given_through_the_api() {
    let model = asking_model();
    let dir = folder();
    let base = format!("{}/v1", model.url);
    let flags = ["--model", "openai:m", "--base-url", &base, "--tools", "ask_user"];
    let server = Serve::start(dir.path(), &flags).unwrap();
    a_question_is_answered(&server, "q");
}

#[test]
fn ask_user_pauses_a_run_on_a_restate_cluster_for_a_reply() {
    let Some(cluster) = harnessx_test_support::restate::RestateServer::start() else { return };
    let model = asking_model();
    let dir = folder();
    let base = format!("{}/v1", model.url);
    let flags = ["--model", "openai:m", "--base-url", &base, "--tools", "ask_user"];
    let _worker = crate::cli_restate::Worker::start(dir.path(), &cluster, &flags);
    let on = ["--restate", cluster.ingress_url.as_str(), "--restate-admin", cluster.admin_url.as_str()];
    let server = Serve::start_on(dir.path(), &on, &flags).unwrap();
    a_question_is_answered(&server, "q");
}

/// A client that stops reading its event stream, and one that goes away, hold nothing up:
/// the run (megabytes of events, more than the sockets buffer) completes while the first
/// reads nothing, and when it reads at last it gets every event, to the `run_end`.
#[test]
fn a_slow_or_vanished_event_client_never_stalls_a_run() {
    use harnessx_test_support::server::{Reply, Server};
    use std::io::{Read, Write};

    let dir = folder();
    std::fs::write(dir.path().join("big.txt"), "tangerine ".repeat(20_000)).unwrap();
    let calls: Vec<Value> = (0..60)
        .map(|i| {
            json!({"id": format!("c{i}"), "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"big.txt\"}"}})
        })
        .collect();
    let model = Server::respond(move |request| {
        let answered =
            request.body["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let message = if answered {
            json!({"role": "assistant", "content": "Read it 60 times."})
        } else {
            json!({"role": "assistant", "content": null, "tool_calls": calls.clone()})
        };
        Reply::chat(message)
    });
    let base = format!("{}/v1", model.url);
    let flags = ["--model", "openai:m", "--base-url", &base, "--tools", "read_file"];
    let server = Serve::start(dir.path(), &flags).unwrap();
    let started = server.call("POST", "/v1/runs", Some(json!({"prompt": "Read big.txt.", "run_id": "s"})));
    assert_eq!(started.status, 201, "{}", started.body);

    let address = server.url.trim_start_matches("http://").to_owned();
    let get = "GET /v1/runs/s/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n";
    // One client asks for the stream and reads nothing; another asks and goes away.
    let mut slow = std::net::TcpStream::connect(&address).unwrap();
    slow.write_all(get.as_bytes()).unwrap();
    let mut gone = std::net::TcpStream::connect(&address).unwrap();
    gone.write_all(get.as_bytes()).unwrap();
    drop(gone);

    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let shown = server.call("GET", "/v1/runs/s", None).json();
        if shown["status"] == "completed" {
            assert_eq!(shown["output"], "Read it 60 times.");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the run stalled: {shown}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The slow client reads at last: every event, in order, to the end.
    slow.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut seen = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    while !String::from_utf8_lossy(&seen[seen.len().saturating_sub(4096)..]).contains("\"type\":\"run_end\"")
    {
        let n = slow.read(&mut chunk).unwrap();
        assert!(n > 0, "the stream ended before run_end");
        seen.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&seen);
    assert!(text.len() > 1_000_000, "the stream was {} bytes: more than the sockets buffer?", text.len());
    assert_eq!(text.matches("\"type\":\"tool_call_end\"").count(), 60);
}

#[test]
fn in_a_real_browser_a_person_replies_to_the_models_question() {
    use harnessx_test_support::system::ensure_debian_package;
    let Some(chromium) = ensure_debian_package("chromium", "chromium") else { return };
    let Some(node) = ensure_debian_package("nodejs", "node") else { return };
    let model = asking_model();
    let dir = folder();
    let base = format!("{}/v1", model.url);
    let server =
        Serve::start(dir.path(), &["--model", "openai:m", "--base-url", &base, "--tools", "ask_user"])
            .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/drive_page.mjs");
    let out = Command::new(node)
        .args(["--experimental-websocket", script])
        .arg(&chromium)
        .arg(format!("{}/", server.url))
        .arg(dir.path().join("question.png"))
        .arg(dir.path().join("chromium-profile"))
        .arg("question")
        .output()
        .unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    assert!(out.status.success(), "{seen}");
    assert_eq!(seen["asked"], "Which colour?", "{seen}");
    assert_eq!(seen["choices"], json!(["red", "blue"]), "{seen}");
    assert!(seen["answer"].as_str().unwrap().contains("Told: The user answered: blue"), "{seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
}
