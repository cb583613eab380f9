//! MCP servers behind OAuth, through the binary, against the official TypeScript SDK's
//! example server with its in-memory OAuth provider (npm `@modelcontextprotocol/sdk`,
//! installed by the test support): a server that needs a login says so with the command;
//! `mcp login --no-browser` (the test follows the `Open:` URL itself) discovers the
//! authorization server, registers a client, checks the redirect's `state` and keeps the
//! tokens (mode 0600, in the user's data folder); tool calls then carry the token;
//! `mcp status` shows the login, `mcp logout` forgets it; a forged redirect and a login
//! nobody finishes each end with one line, exit 1.
//!
//! Against test-support's own SDK-built server that issues short-lived tokens and refresh
//! tokens (`oauth::OAuthMcpServer`): a refusal mid-grant and a token about to expire are
//! refreshed; a grant revoked mid-run pauses a durable run (`needs_input` kind `auth`)
//! until a login and `resume`, nothing journaled repeated, and fails the call in one line
//! in a plain run; hostile authorization servers (a token response over 64 KiB, plain-HTTP
//! endpoints off this machine, metadata at another origin) are refused, nothing stored.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::http::request;
use harnessx_test_support::npm::{ensure_npm_package, installed_file};
use serde_json::Value;

/// The SDK whose example server is run.
const SDK_VERSION: &str = "1.32.2";

/// The SDK's example MCP server with OAuth (`--oauth`), its authorization server on a
/// port of its own; killed when dropped.
struct OAuthServer {
    child: Child,
    url: String,
}

impl OAuthServer {
    fn start() -> Option<Self> {
        let prefix = ensure_npm_package("@modelcontextprotocol/sdk", SDK_VERSION)?;
        let script = installed_file(
            &prefix,
            "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
        )
        .expect("the SDK ships its example server");
        let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (mcp, auth) = (free(), free());
        let mut child = Command::new("node")
            .arg(script)
            .arg("--oauth")
            .env("MCP_PORT", mcp.to_string())
            .env("MCP_AUTH_PORT", auth.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node starts");
        // Ready once both listen (each says so on stdout).
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut listening = 0;
        while listening < 2 {
            let line = lines.next().expect("the example server exits early").unwrap();
            if line.contains("listening on port") {
                listening += 1;
            }
        }
        // Keep reading its output so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Some(Self { child, url: format!("http://localhost:{mcp}/mcp") })
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn harnessx(dir: &Path, data: &Path, args: &[&str]) -> Output {
    Binary::new(env!("CARGO_BIN_EXE_harnessx"))
        .env("XDG_DATA_HOME", data.to_str().unwrap())
        .env("XDG_CONFIG_HOME", dir.join("no-config").to_str().unwrap())
        .run(dir, args)
}

/// `harnessx mcp login URL --no-browser ARGS`, started; returns it, its `Open:` URL and
/// the rest of its stderr once it ends.
fn start_login(
    dir: &Path,
    data: &Path,
    url: &str,
    more: &[&str],
) -> (Child, String, std::thread::JoinHandle<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(["mcp", "login", url, "--no-browser"])
        .args(more)
        .current_dir(dir)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let open = line
        .trim_end()
        .strip_prefix("Open: ")
        .unwrap_or_else(|| panic!("the first line: {line:?}"))
        .to_owned();
    // The rest of stderr, read on as the login goes on.
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
    (child, open, rest)
}

/// What a browser does with the authorization URL: follows the authorization server's
/// redirect (the demo provider logs the user in at once) to the loopback listener.
fn follow(open: &str) -> String {
    let answer = request("GET", open, &[], None, Duration::from_secs(30)).unwrap();
    assert_eq!(answer.status, 302, "{}", answer.body);
    let location = answer.header("location").unwrap().to_owned();
    let landed = request("GET", &location, &[], None, Duration::from_secs(30)).unwrap();
    assert_eq!(landed.status, 200, "{}", landed.body);
    location
}

fn query(url: &str, name: &str) -> Option<String> {
    url.split_once('?')?.1.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}=")).map(str::to_owned))
}

fn token_files(data: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(data.join("harnessx/mcp-tokens")) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_login_through_the_browser_lets_the_tools_of_a_server_behind_oauth_be_used() {
    let Some(server) = OAuthServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (d, data) = (dir.path(), dir.path().join("data"));
    let url = server.url.as_str();

    // Before a login: one line saying what to run.
    let out = harnessx(d, &data, &["tools", "list", "--mcp-http", url]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains(&format!("needs a login (it answered 401): run `harnessx mcp login {url}`")),
        "{said}"
    );
    assert!(!said.contains("WorkerTransport"), "a type name, not advice: {said}");

    // The login: the URL to open on one line, then the redirect, then exit 0.
    let (mut login, open, said) = start_login(d, &data, url, &[]);
    assert!(open.contains("code_challenge_method=S256"), "{open}");
    assert!(open.contains("resource="), "the resource parameter: {open}");
    let redirect = query(&open, "redirect_uri").unwrap();
    assert!(redirect.starts_with("http%3A%2F%2F127.0.0.1%3A"), "{redirect}");
    follow(&open);
    let status = login.wait().unwrap();
    let said = said.join().unwrap();
    assert!(status.success(), "{status}: {said}");
    assert!(said.starts_with("harnessx: logged in to http://localhost:"), "{said}");
    let files = token_files(&data);
    assert_eq!(files.len(), 1, "{files:?}");
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let folder = std::fs::metadata(files[0].parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(folder, 0o700);
    assert!(!d.read_dir().unwrap().flatten().any(|e| e.path().extension().is_some_and(|x| x == "json")));

    // The tools, listed and called with the token.
    let out = harnessx(d, &data, &["tools", "list", "--mcp-http", url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("greet"), "{}", stdout(&out));
    let out = harnessx(d, &data, &["tools", "call", "greet", r#"{"name": "Ada"}"#, "--mcp-http", url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello, Ada!"), "{}", stdout(&out));
    // The token is in no output.
    let kept: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    let token = kept["credentials"]["token_response"]["access_token"].as_str().unwrap().to_owned();
    assert!(!stdout(&out).contains(&token) && !stderr(&out).contains(&token));

    let out = harnessx(d, &data, &["mcp", "status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let servers = shown["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{shown}");
    assert_eq!(servers[0]["url"], url);
    assert!(servers[0]["expires_at"].as_u64().unwrap() > 1_700_000_000, "{shown}");
    assert!(!stdout(&out).contains(&token));
    let out = harnessx(d, &data, &["mcp", "status"]);
    assert!(stdout(&out).contains("its token expires in"), "{}", stdout(&out));

    // Logged out: the file is gone, and the server needs a login again.
    let out = harnessx(d, &data, &["mcp", "logout", url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(token_files(&data).is_empty());
    let out = harnessx(d, &data, &["tools", "list", "--mcp-http", url]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("needs a login"), "{}", stderr(&out));
}

#[test]
fn a_forged_redirect_or_a_login_nobody_finishes_stores_nothing() {
    let Some(server) = OAuthServer::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (d, data) = (dir.path(), dir.path().join("data"));

    // A redirect with another `state` than the login sent.
    let (mut login, open, said) = start_login(d, &data, &server.url, &[]);
    let redirect = query(&open, "redirect_uri").unwrap().replace("%3A", ":").replace("%2F", "/");
    let forged =
        request("GET", &format!("{redirect}?code=abc&state=forged"), &[], None, Duration::from_secs(30));
    assert_eq!(forged.unwrap().status, 200);
    let status = login.wait().unwrap();
    let said = said.join().unwrap();
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(said.contains("the redirect came back with another `state` than this login sent"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(token_files(&data).is_empty());

    // Nobody opens the URL: the login gives up at its timeout.
    let out = harnessx(d, &data, &["mcp", "login", &server.url, "--no-browser", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.lines().next().unwrap().starts_with("Open: "), "{said}");
    assert!(said.contains("no redirect came back within 1 s"), "{said}");
    assert_eq!(said.lines().count(), 2, "the Open: line and one line saying why: {said}");
    assert!(token_files(&data).is_empty());

    // Plain HTTP beyond this machine is refused before anything is sent.
    let out = harnessx(d, &data, &["mcp", "login", "http://mcp.example.com/mcp", "--no-browser"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("HTTPS only"), "{}", stderr(&out));
}

/// `mcp login URL --no-browser`, the `Open:` URL followed as a browser would; the login
/// must succeed.
fn log_in(d: &Path, data: &Path, url: &str) {
    let (mut login, open, said) = start_login(d, data, url, &[]);
    follow(&open);
    let status = login.wait().unwrap();
    let said = said.join().unwrap();
    assert!(status.success(), "{status}: {said}");
}

/// The access token kept for the only login in `data`.
fn kept_token(data: &Path) -> String {
    let files = token_files(data);
    let kept: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    kept["credentials"]["token_response"]["access_token"].as_str().unwrap().to_owned()
}

#[test]
fn tokens_are_refreshed_before_they_expire_and_after_a_refusal() {
    use harnessx_test_support::oauth::{OAuthMcpServer, OAuthOptions};
    let dir = tempfile::tempdir().unwrap();
    let (d, data) = (dir.path(), dir.path().join("data"));
    let call = |url: &str| harnessx(d, &data, &["tools", "call", "whoami", "{}", "--mcp-http", url]);

    // Refused mid-grant (the server let every access token expire): refreshed after the
    // 401, and the call goes through.
    let Some(server) = OAuthMcpServer::start(OAuthOptions::default()) else { return };
    let url = server.url();
    log_in(d, &data, &url);
    let out = harnessx(d, &data, &["mcp", "status", "--json"]);
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(shown["servers"][0]["refreshable"], true, "{shown}");
    let first = kept_token(&data);
    let out = call(&url);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("call 1 by"), "{}", stdout(&out));
    assert_eq!(server.stats()["refreshes"], 0);
    server.expire();
    let out = call(&url);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("call 2 by"), "{}", stdout(&out));
    assert_eq!(server.stats()["refreshes"], 1, "{}", server.stats());
    // The new tokens are kept (the refresh token rotates: the old one would be refused).
    assert_ne!(kept_token(&data), first);
    let out = call(&url);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.stats()["refreshes"], 1, "a fresh token is not refreshed again");
    drop(server);

    // A token about to expire is refreshed before it is sent: one that lives 6 s, used
    // with less than half its life left (rmcp refreshes within min(30 s, half its life)).
    let data = dir.path().join("data-short");
    let short = OAuthOptions { access_ttl: Some(6), ..OAuthOptions::default() };
    let Some(server) = OAuthMcpServer::start(short) else { return };
    let url = server.url();
    log_in(d, &data, &url);
    std::thread::sleep(Duration::from_secs(4));
    let out = harnessx(d, &data, &["tools", "call", "whoami", "{}", "--mcp-http", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stats = server.stats();
    assert!(stats["refreshes"].as_u64().unwrap() >= 1, "{stats}");
    assert_eq!(stats["refreshes_refused"], 0, "{stats}");
}

/// A model that calls `whoami` twice, the grant revoked (at `revoke`) before the second,
/// then answers `Done: ` and the last result.
fn revoking_model(revoke: String) -> harnessx_test_support::server::Server {
    use harnessx_test_support::server::{Reply, Server};
    Server::respond(move |asked| {
        let messages = asked.body["messages"].as_array().cloned().unwrap_or_default();
        let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
        let call = |id: &str| {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                "function": {"name": "whoami", "arguments": "{}"}}]})
        };
        let message = match results.len() {
            0 => call("w1"),
            1 => {
                let revoked = request("POST", &revoke, &[], Some(b"{}"), Duration::from_secs(30)).unwrap();
                assert_eq!(revoked.status, 200, "{}", revoked.body);
                call("w2")
            }
            _ => serde_json::json!({"role": "assistant",
                "content": format!("Done: {}", results.last().unwrap()["content"].as_str().unwrap_or(""))}),
        };
        Reply::chat(message)
    })
}

#[test]
fn a_revoked_grant_pauses_a_durable_run_until_a_login_and_resume() {
    use harnessx_test_support::oauth::{OAuthMcpServer, OAuthOptions};
    let Some(server) = OAuthMcpServer::start(OAuthOptions::default()) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (d, data) = (dir.path(), dir.path().join("data"));
    let url = server.url();
    log_in(d, &data, &url);
    let model = revoking_model(format!("{}/test/revoke", server.auth_url()));
    let base = format!("{}/v1", model.url);
    let flags = ["--mcp-http", &url, "--tools", "", "--model", "openai:m", "--base-url", &base, "--yes"];
    let with = |head: &[&str]| -> Vec<String> {
        head.iter().chain(flags.iter()).map(|s| (*s).to_owned()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        harnessx(d, &data, &args)
    };

    let out = run(with(&["run", "Who?", "--durable", "runs.db", "--run-id", "a", "--json"]));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let stopped: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    let need = &stopped["needs_input"][0];
    assert_eq!((&need["kind"], &need["call_id"]), (&Value::from("auth"), &Value::from("w2")), "{stopped}");
    let reason = need["reason"].as_str().unwrap();
    assert!(reason.contains(&format!("run `harnessx mcp login {url}`")), "{reason}");
    // A resume before the login: the server refuses to connect, and says what to run;
    // the run still waits, nothing run.
    let out = run(with(&["resume", "a", "--durable", "runs.db", "--json"]));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("run `harnessx mcp login {url}`")), "{}", stderr(&out));
    let out = harnessx(d, &data, &["runs", "show", "a", "--durable", "runs.db", "--json"]);
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(shown["report"]["run"]["status"], "needs_input", "{shown}");
    assert_eq!(server.stats()["authorization_codes"], 1);

    log_in(d, &data, &url);
    let out = run(with(&["resume", "a", "--durable", "runs.db", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let end: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    // w1 was call 1; w2 never reached the tool before the login, so it is call 2.
    assert!(end["output"].as_str().unwrap().starts_with("Done: call 2 by"), "{end}");
    assert_eq!(model.requests().len(), 3, "no request asked twice");
    let out = harnessx(d, &data, &["runs", "show", "a", "--durable", "runs.db", "--json"]);
    let shown: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let results: Vec<&Value> =
        shown["entries"].as_array().unwrap().iter().filter(|e| e["entry"]["kind"] == "call_result").collect();
    assert_eq!(results.len(), 2, "one result a call: {shown}");
    // No token in the journal or the events.
    let token = kept_token(&data);
    let journal = std::fs::read(d.join("runs.db")).unwrap();
    assert!(!journal.windows(token.len()).any(|w| w == token.as_bytes()));
    assert!(!stdout(&out).contains(&token));

    // A plain run fails the call with one line, and goes on.
    let data_plain = dir.path().join("data-plain");
    let Some(server) = OAuthMcpServer::start(OAuthOptions::default()) else { return };
    let url = server.url();
    log_in(d, &data_plain, &url);
    let model = revoking_model(format!("{}/test/revoke", server.auth_url()));
    let base = format!("{}/v1", model.url);
    let args = [
        "run",
        "Who?",
        "--mcp-http",
        &url,
        "--tools",
        "",
        "--model",
        "openai:m",
        "--base-url",
        &base,
        "--yes",
        "--json",
    ];
    let out = harnessx(d, &data_plain, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let end: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    let output = end["output"].as_str().unwrap();
    assert!(
        output.contains("needs a login again") && output.contains(&format!("harnessx mcp login {url}")),
        "{end}"
    );
}

#[test]
fn hostile_authorization_servers_are_refused_in_one_line_storing_nothing() {
    use harnessx_test_support::oauth::{OAuthMcpServer, OAuthOptions};
    use harnessx_test_support::server::{Reply, Server};
    let dir = tempfile::tempdir().unwrap();
    let (d, data) = (dir.path(), dir.path().join("data"));

    // A token response over 64 KiB.
    let huge = OAuthOptions { misbehave: Some("huge-token"), ..OAuthOptions::default() };
    let Some(server) = OAuthMcpServer::start(huge) else { return };
    let (mut login, open, said) = start_login(d, &data, &server.url(), &[]);
    follow(&open);
    let status = login.wait().unwrap();
    let said = said.join().unwrap();
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(said.contains("token response is 97 KiB, more than the 64 KiB allowed"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(token_files(&data).is_empty());
    drop(server);

    // An authorization server whose endpoints are plain HTTP off this machine.
    let plain = OAuthOptions { misbehave: Some("http-auth-server"), ..OAuthOptions::default() };
    let Some(server) = OAuthMcpServer::start(plain) else { return };
    let out = harnessx(d, &data, &["mcp", "login", &server.url(), "--no-browser"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("`http://auth.example.test:") && said.contains("is not HTTPS"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(token_files(&data).is_empty());
    drop(server);

    // A 401 naming protected-resource metadata at another origin.
    let lying = Server::respond(|_| {
        Reply::json(401, "{}").header(
            "www-authenticate",
            r#"Bearer resource_metadata="http://127.0.0.2:9/.well-known/oauth-protected-resource""#,
        )
    });
    let url = format!("{}/mcp", lying.url);
    let out = harnessx(d, &data, &["mcp", "login", &url, "--no-browser"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("names protected-resource metadata at http://127.0.0.2:9, another origin"),
        "{said}"
    );
    assert!(said.contains("--allow-metadata-origin http://127.0.0.2:9"), "{said}");
    assert!(token_files(&data).is_empty());
}
