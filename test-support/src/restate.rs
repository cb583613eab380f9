//! A real `restate-server` for the tests, from the npm registry, on loopback ports of its
//! own, stopped (killed) when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::npm::{ensure_npm_package, installed_file};

/// The server version the tests run (the 1.7 line).
pub const RESTATE_VERSION: &str = "1.7.12";

/// A running `restate-server`.
#[derive(Debug)]
pub struct RestateServer {
    child: Child,
    /// `http://127.0.0.1:PORT` of the admin API (deployments, queries).
    pub admin_url: String,
    /// `http://127.0.0.1:PORT` of the ingress (invocations).
    pub ingress_url: String,
    dir: tempfile::TempDir,
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server binary, installed on demand; `None` (reason printed) without `npm`, which
/// under `CI` panics instead ([`skip_or_fail`](crate::skip_or_fail)).
pub fn restate_server_binary() -> Option<PathBuf> {
    let prefix = ensure_npm_package("@restatedev/restate-server", RESTATE_VERSION)?;
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let native = format!("@restatedev/restate-server-{}-{arch}/bin/restate-server", std::env::consts::OS);
    let found = installed_file(&prefix, &native).or_else(|| installed_file(&prefix, ".bin/restate-server"));
    Some(found.unwrap_or_else(|| {
        panic!(
            "restate-server {RESTATE_VERSION} is installed in {} but {native} is missing",
            prefix.display()
        )
    }))
}

/// A free loopback port (bound and released: another process could take it in between,
/// which the start-up check would then report).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl RestateServer {
    /// Starts a server with its own data folder and waits until its admin API answers
    /// (about half a second). `None` when `npm` is missing (under `CI`, a panic).
    pub fn start() -> Option<Self> {
        let binary = restate_server_binary()?;
        let dir = tempfile::tempdir().expect("a data folder");
        let (admin, ingress, node) = (free_port(), free_port(), free_port());
        let log = std::fs::File::create(dir.path().join("server.log")).expect("a log file");
        // Its own temporary folder, removed with the data folder (the server's invokers
        // leave `invoker-*` folders in the temporary folder otherwise).
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("a temporary folder");
        let child = Command::new(&binary)
            .args(["--no-logo", "--node-name", "n1", "--base-dir"])
            .arg(dir.path().join("data"))
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env("RESTATE_INGRESS__BIND_ADDRESS", format!("127.0.0.1:{ingress}"))
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let mut server = Self {
            child,
            admin_url: format!("http://127.0.0.1:{admin}"),
            ingress_url: format!("http://127.0.0.1:{ingress}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok((200, _)) = http("GET", &format!("{}/health", server.admin_url), None) {
                return Some(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("restate-server exited ({status}) before it was ready:\n{}", server.log_tail());
            }
            assert!(
                Instant::now() < deadline,
                "restate-server was not ready in 60 s:\n{}",
                server.log_tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last lines the server logged, for an assertion message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Its data folder.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Registers the service endpoint at `uri` (`http://127.0.0.1:PORT`); returns the
    /// admin API's answer.
    pub fn register(&self, uri: &str) -> Result<String, String> {
        Self::register_at(&self.admin_url, uri)
    }

    /// [`register`](Self::register) with the admin URL only (from another thread).
    pub fn register_at(admin_url: &str, uri: &str) -> Result<String, String> {
        let body = format!(r#"{{"uri": "{uri}"}}"#);
        match http("POST", &format!("{admin_url}/deployments"), Some(&body)) {
            Ok((200 | 201, text)) => Ok(text),
            Ok((status, text)) => Err(format!("registering {uri}: HTTP {status}: {text}")),
            Err(e) => Err(format!("registering {uri}: {e}")),
        }
    }
}

/// One HTTP/1.1 request to a loopback URL (`Connection: close`), a JSON body when given;
/// returns the status and the body (chunked bodies decoded).
pub fn http(method: &str, url: &str, body: Option<&str>) -> Result<(u16, String), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| format!("not an http URL: {url}"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(host).map_err(|e| format!("connecting to {host}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(120))).map_err(|e| e.to_string())?;
    // No body, no content type: Restate refuses one for a handler that takes no input.
    let content_type = if body.is_some() { "Content-Type: application/json\r\n" } else { "" };
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{content_type}Accept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).map_err(|e| format!("sending to {host}: {e}"))?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| format!("reading from {host}: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, payload) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no HTTP answer from {host}"))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("a bad status line from {host}: {head}"))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Ok((status, if chunked { dechunk(payload) } else { payload.to_owned() }))
}

fn dechunk(payload: &str) -> String {
    crate::http::dechunk(payload)
}
