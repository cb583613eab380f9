//! `harnessx mcp serve` driven by the official Python MCP client (PyPI `mcp` 2.3.0,
//! installed by the test into its own virtual environment), over stdio and streamable
//! HTTP: the tools listed with their annotations, every built-in bundle called, a DENY,
//! schema errors, a containment refusal, a hook's refusal and redaction, ASK through
//! elicitation (accepted, accepted with every field filled in, declined, dismissed,
//! allowed for the session) and without it; an HTTP session ended by the
//! client's DELETE (200, then 404), as the reference servers answer it.
//!
//! Without `python3` these tests print why and pass; `harnessx-mcp/tests/serve_rmcp.rs`
//! covers the same cases with rmcp's client, which needs nothing installed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harnessx_test_support::bin::{Binary, stderr};
use harnessx_test_support::python;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_harnessx");

/// The official client, or `None` (reason printed) without Python.
fn venv() -> Option<PathBuf> {
    python::ensure_venv("mcp-2.3.0", &python::MCP_PACKAGES)
}

/// A temporary folder with `base/notes.txt` to serve, and `secret.txt` beside `base`.
fn workspace() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    std::fs::write(base.join("notes.txt"), "hello\nworld\n").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside\n").unwrap();
    (dir, base.to_str().unwrap().to_owned())
}

/// `harnessx mcp serve ARGS --http 127.0.0.1:0 --json`, stopped (SIGTERM) when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(["mcp", "serve"])
            .args(args)
            .args(["--http", "127.0.0.1:0", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting harnessx mcp serve --http");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))["url"]
            .as_str()
            .expect("a url")
            .to_owned();
        Self { child, url }
    }

    /// SIGTERM; the exit status, within 10 s.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        wait_for(&mut self.child, Duration::from_secs(10))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "harnessx did not stop within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where the client reaches the server.
enum Via<'a> {
    /// The client starts `harnessx mcp serve ARGS`.
    Stdio(&'a [&'a str]),
    /// The client connects to this URL.
    Http(&'a str),
}

/// Runs the Python client over `steps`; one JSON value per step, then the elicitations.
fn drive(venv: &Path, via: Via<'_>, answers: Option<&str>, steps: &Value) -> (Vec<Value>, Vec<Value>) {
    let mut command = Command::new(python::venv_python(venv));
    command.arg(python::MCP_CLIENT);
    if let Some(answers) = answers {
        command.args(["--answers", answers]);
    }
    match via {
        Via::Stdio(args) => command.args(["--stdio", BIN, "mcp", "serve"]).args(args),
        Via::Http(url) => command.args(["--http", url]),
    };
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the Python client");
    serde_json::to_writer(child.stdin.take().unwrap(), steps).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the Python client failed:\n{}", stderr(&out));
    // The client ends its HTTP session with a DELETE on close, and logs a warning
    // unless the answer is 200 or 204 (rmcp's own is 202).
    assert!(
        !stderr(&out).contains("Session termination failed"),
        "the client could not end its session:\n{}",
        stderr(&out)
    );
    let mut lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let elicitations =
        lines.pop().expect("the elicitations line")["elicitations"].as_array().unwrap().clone();
    assert_eq!(lines.len(), steps.as_array().unwrap().len(), "one line per step: {lines:?}");
    (lines, elicitations)
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"call": name, "arguments": arguments})
}

fn ok(result: &Value) -> &str {
    assert_eq!(result["is_error"], false, "expected success: {result}");
    result["text"].as_str().unwrap()
}

fn err(result: &Value) -> &str {
    assert_eq!(result["is_error"], true, "expected an error result: {result}");
    result["text"].as_str().unwrap()
}

const EVERY_BUNDLE: &str = "filesystem,bash,memory,planning,web";

/// Lists and calls the tools of every built-in bundle, with `--deny write_file`.
fn every_bundle(venv: &Path, via: Via<'_>, base: &Path) {
    let steps = json!([
        {"list": true},
        call("read_file", json!({"path": "notes.txt"})),
        call("write_file", json!({"path": "new.txt", "content": "x"})),
        call("edit_file", json!({"path": "notes.txt", "old_string": "world", "new_string": "there"})),
        call("glob", json!({"pattern": "*.txt"})),
        call("grep", json!({"pattern": "there"})),
        call("list_directory", json!({})),
        call("read_file", json!({"path": "../secret.txt"})),
        call("read_file", json!({})),
        call("read_file", json!({"path": 5})),
        call("read_fiel", json!({"path": "notes.txt"})),
        call("READ-FILE", json!({"path": "notes.txt"})),
        call("run_bash", json!({"command": "echo hi"})),
        call("save_memory", json!({"text": "the sky is blue"})),
        call("search_memories", json!({"query": "sky"})),
        call("write_todos", json!({"todos": [{"content": "step one", "status": "pending"}]})),
        call("read_todos", json!({})),
        call("fetch_url", json!({"url": "http://127.0.0.1:1/"})),
        call("fetch_url", json!({})),
    ]);
    let (r, elicitations) = drive(venv, via, None, &steps);
    let tools = r[0]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "delete",
        "glob",
        "grep",
        "list_directory",
        "run_bash",
        "save_memory",
        "search_memories",
        "write_todos",
        "read_todos",
        "fetch_url",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap();
    assert_eq!(
        tool("read_file")["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(tool("write_file")["annotations"]["destructiveHint"], true);
    assert_eq!(tool("run_bash")["annotations"]["openWorldHint"], true);
    assert_eq!(tool("read_file")["input_schema"]["required"], json!(["path"]));

    assert!(ok(&r[1]).contains("hello"), "{}", r[1]);
    assert_eq!(err(&r[2]), "Permission denied");
    assert!(!base.join("new.txt").exists(), "a denied write_file wrote");
    assert_eq!(ok(&r[3]), "Edited `notes.txt`: replaced 1 occurrence at line 2.");
    assert!(ok(&r[4]).contains("notes.txt"));
    assert_eq!(ok(&r[5]), "notes.txt:2:there\n");
    assert!(ok(&r[6]).contains("notes.txt"));
    assert!(
        err(&r[7]).starts_with("refused: `../secret.txt` leads outside the root"),
        "containment: {}",
        r[7]
    );
    assert_eq!(err(&r[8]), r#"invalid arguments for read_file: "path" is a required property"#);
    assert_eq!(err(&r[9]), r#"invalid arguments for read_file: path: 5 is not of type "string""#);
    assert!(err(&r[10]).starts_with(r#"Unknown tool "read_fiel". Did you mean: read_file, "#), "{}", r[10]);
    assert!(ok(&r[11]).contains("hello"), "name repair: {}", r[11]);
    assert_eq!(ok(&r[12]), "[stdout]\nhi\n[exit code 0]");
    assert_eq!(r[12]["structured"]["exit_code"], 0);
    assert_eq!(ok(&r[13]), "Saved memory 1.");
    assert!(ok(&r[14]).contains("the sky is blue"), "{}", r[14]);
    ok(&r[15]);
    assert!(ok(&r[16]).contains("step one"), "{}", r[16]);
    assert_eq!(
        err(&r[17]),
        "refused: 127.0.0.1 is a loopback address; fetch_url only reaches public addresses (allow_private or allow_hosts opens local ones)"
    );
    assert_eq!(err(&r[18]), r#"invalid arguments for fetch_url: "url" is a required property"#);
    assert!(elicitations.is_empty());
}

#[test]
fn python_client_calls_every_bundle_over_stdio() {
    let Some(venv) = venv() else { return };
    let (dir, base) = workspace();
    let args = ["--tools", EVERY_BUNDLE, "--base-path", &base, "--deny", "write_file"];
    every_bundle(&venv, Via::Stdio(&args), &dir.path().join("base"));
}

#[test]
fn python_client_calls_every_bundle_over_http() {
    let Some(venv) = venv() else { return };
    let (dir, base) = workspace();
    let mut server =
        HttpServer::start(&["--tools", EVERY_BUNDLE, "--base-path", &base, "--deny", "write_file"]);
    every_bundle(&venv, Via::Http(&server.url), &dir.path().join("base"));
    assert!(server.terminate().success(), "SIGTERM ends the HTTP server with status 0");
}

/// Regression: every close of the official client logged `Session termination failed:
/// 202`, the status rmcp answers a session's DELETE with.
#[test]
fn python_client_ends_its_http_session_without_a_warning() {
    let Some(venv) = venv() else { return };
    let (_dir, base) = workspace();
    let server = HttpServer::start(&["--tools", "read_file", "--base-path", &base]);
    // `drive` fails on the warning.
    let (r, _) =
        drive(&venv, Via::Http(&server.url), None, &json!([call("read_file", json!({"path": "notes.txt"}))]));
    assert!(ok(&r[0]).contains("hello"));
}

/// One HTTP/1.1 request to the server at `url`, written by hand: the status and the
/// header lines of the answer (its body is not waited for: an SSE answer may stay open).
fn raw_request(url: &str, method: &str, session: Option<&str>, body: &str) -> (u16, String) {
    let addr = url.strip_prefix("http://").and_then(|u| u.strip_suffix("/mcp")).expect("http://ADDR/mcp");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(id) = session {
        request.push_str(&format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    (status.unwrap_or_else(|| panic!("no status line: {head:?}")), head)
}

/// A session's DELETE is answered as the reference servers answer it: 200 while the
/// session lives, then 404 for it (and for any session the server never made).
#[test]
fn http_delete_of_a_session_answers_200_then_404() {
    let (_dir, base) = workspace();
    let server = HttpServer::start(&["--tools", "read_file", "--base-path", &base]);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let (status, head) = raw_request(&server.url, "POST", None, &initialize.to_string());
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id")))
        .map(|(_, id)| id.trim().to_owned())
        .unwrap_or_else(|| panic!("no session id: {head}"));
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();

    let (status, head) = raw_request(&server.url, "DELETE", Some(&session), "");
    assert_eq!(status, 200, "a live session's DELETE: {head}");
    let (status, head) = raw_request(&server.url, "POST", Some(&session), &list);
    assert_eq!(status, 404, "a request of the ended session: {head}");
    let (status, head) = raw_request(&server.url, "DELETE", Some(&session), "");
    assert_eq!(status, 404, "the ended session's DELETE again: {head}");
    let (status, head) = raw_request(&server.url, "DELETE", Some("no-such-session"), "");
    assert_eq!(status, 404, "an unknown session's DELETE: {head}");
    // rmcp's own answers stand: no session header is a bad request.
    let (status, head) = raw_request(&server.url, "DELETE", None, "");
    assert_eq!(status / 100, 4, "{head}");
}

const ASK_WRITES: [&str; 5] = ["--tools", "filesystem", "--default-permission", "ask", "--allow"];

/// ASK through elicitation: declined, dismissed, accepted once (with no fields, and with
/// every field filled in), accepted for the session.
fn elicitation(venv: &Path, via: Via<'_>, base: &Path) {
    let steps = json!([
        call("write_file", json!({"path": "a.txt", "content": "declined"})),
        call("write_file", json!({"path": "a.txt", "content": "dismissed"})),
        call("write_file", json!({"path": "a.txt", "content": "once"})),
        call("write_file", json!({"path": "f.txt", "content": "filled"})),
        call("write_file", json!({"path": "b.txt", "content": "session"})),
        call("write_file", json!({"path": "c.txt", "content": "granted"})),
        call("read_file", json!({"path": "a.txt"})),
    ]);
    let (r, asked) = drive(venv, via, Some("decline,cancel,accept,fill,session"), &steps);
    assert_eq!(err(&r[0]), "Permission denied: the user declined to run write_file");
    assert_eq!(err(&r[1]), "Permission denied: the user dismissed the request to run write_file");
    ok(&r[2]);
    // Regression: every field filled in ticked the old form's `refuse` box, refusing.
    ok(&r[3]);
    ok(&r[4]);
    ok(&r[5]);
    assert!(ok(&r[6]).contains("once"));
    assert_eq!(std::fs::read_to_string(base.join("f.txt")).unwrap(), "filled");
    assert_eq!(std::fs::read_to_string(base.join("c.txt")).unwrap(), "granted");
    // Five questions: the sixth write ran on the session grant, read_file is allowed.
    assert_eq!(asked.len(), 5, "{asked:?}");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(message.starts_with("Allow the tool write_file to run with these arguments?"), "{message}");
    assert!(message.contains(r#""content": "declined""#), "{message}");
    let decision = &asked[0]["schema"]["properties"]["decision"];
    assert_eq!(decision["default"], "approve", "{decision}");
    assert_eq!(decision["oneOf"][2]["const"], "refuse", "{decision}");
}

#[test]
fn python_client_answers_ask_through_elicitation_over_stdio() {
    let Some(venv) = venv() else { return };
    let (dir, base) = workspace();
    let args = [&ASK_WRITES[..], &["read_file", "--base-path", &base]].concat();
    elicitation(&venv, Via::Stdio(&args), &dir.path().join("base"));
}

#[test]
fn python_client_answers_ask_through_elicitation_over_http() {
    let Some(venv) = venv() else { return };
    let (dir, base) = workspace();
    let server = HttpServer::start(&[&ASK_WRITES[..], &["read_file", "--base-path", &base]].concat());
    elicitation(&venv, Via::Http(&server.url), &dir.path().join("base"));
}

/// A hook's refusal (`--hook`) reaches the client as an error result with the hook's
/// message, and a post hook's replacement is the result the client reads.
#[test]
fn python_client_gets_a_hooks_refusal_as_an_error_result() {
    let Some(venv) = venv() else { return };
    let (dir, base) = workspace();
    let marker = dir.path().join("refused.marker");
    let deny =
        format!("pre_tool_use:write_file=touch '{}'; echo no writes here >&2; exit 2", marker.display());
    let redact = r#"post_tool_use:read_file=echo '{"content": "[redacted]"}'"#;
    let args = ["--tools", "filesystem", "--base-path", &base, "--hook", &deny, "--hook", redact];
    let steps = json!([
        call("write_file", json!({"path": "new.txt", "content": "x"})),
        call("read_file", json!({"path": "notes.txt"})),
        call("list_directory", json!({})),
    ]);
    let (r, _) = drive(&venv, Via::Stdio(&args), None, &steps);
    assert_eq!(err(&r[0]), "no writes here");
    assert!(marker.exists(), "the hook ran");
    assert!(!dir.path().join("base/new.txt").exists(), "a refused write_file wrote");
    assert_eq!(ok(&r[1]), "[redacted]");
    assert!(ok(&r[2]).contains("notes.txt"));
}

const CANNOT_ASK: &str = "Permission denied: write_file needs approval and this MCP client cannot ask its user (no elicitation support); allow it on the server (--allow write_file or --default-permission allow)";

#[test]
fn python_client_without_elicitation_is_refused_ask_calls() {
    let Some(venv) = venv() else { return };
    let (dir, base) = workspace();
    let args = [&ASK_WRITES[..], &["read_file", "--base-path", &base]].concat();
    let steps = json!([
        call("write_file", json!({"path": "a.txt", "content": "x"})),
        call("read_file", json!({"path": "notes.txt"})),
    ]);
    let (r, _) = drive(&venv, Via::Stdio(&args), None, &steps);
    assert_eq!(err(&r[0]), CANNOT_ASK);
    assert!(ok(&r[1]).contains("hello"));
    assert!(!dir.path().join("base/a.txt").exists());
}

/// "Allow for this session" belongs to the HTTP session that said it: another client of
/// the same server is still asked (and, unable to answer, refused).
#[test]
fn http_session_grants_stay_in_their_session() {
    let Some(venv) = venv() else { return };
    let (_dir, base) = workspace();
    let server = HttpServer::start(&[&ASK_WRITES[..], &["read_file", "--base-path", &base]].concat());
    let writes = json!([
        call("write_file", json!({"path": "a.txt", "content": "1", "overwrite": true})),
        call("write_file", json!({"path": "a.txt", "content": "2", "overwrite": true})),
    ]);
    let (r, asked) = drive(&venv, Via::Http(&server.url), Some("session"), &writes);
    ok(&r[0]);
    ok(&r[1]);
    assert_eq!(asked.len(), 1);
    let (r, _) = drive(&venv, Via::Http(&server.url), None, &writes);
    assert_eq!(err(&r[0]), CANNOT_ASK);
}

#[test]
fn mcp_serve_refuses_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let harnessx = Binary::new(BIN);
    let cases: [(&[&str], &str); 5] = [
        (
            &["mcp", "serve", "--tools", "filesystem", "--http", "nowhere"],
            "invalid value 'nowhere' for '--http <ADDR>': expected HOST:PORT",
        ),
        (&["mcp", "serve", "--tools", "filez"], "harnessx: unknown built-in tool or bundle \"filez\""),
        (&["mcp", "serve"], "harnessx: mcp serve needs --tools SPEC"),
        (&["mcp", "serve", "--tools", "bash", "--json"], "harnessx: --json applies to --http"),
        (
            &["mcp", "serve", "--tools", "bash", "--base-path", "."],
            "harnessx: --base-path was given but none of the --tools uses a base path",
        ),
    ];
    for (args, expected) in cases {
        let out = harnessx.run(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    }
}

/// Over stdio, SIGTERM ends the server even while its client keeps stdin open.
#[test]
fn mcp_serve_over_stdio_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "serve", "--tools", "filesystem", "--base-path"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A handshake first, so the signal handler is surely in place; the answer is the
    // first thing on stdout.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(answer["result"]["serverInfo"]["name"], "harnessx", "{answer}");
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let status = wait_for(&mut child, Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
}
