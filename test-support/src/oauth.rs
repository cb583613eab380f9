//! An MCP server behind OAuth 2.1 for loopback tests: `assets/oauth_mcp_server.mjs`, run
//! with `node` on the official TypeScript SDK (npm `@modelcontextprotocol/sdk`, installed
//! on demand). Unlike the SDK's example server, its authorization server issues
//! short-lived access tokens with refresh tokens (rotated at each refresh), a test can
//! revoke every grant or expire every access token, read what the servers saw, and ask
//! them to misbehave (see [`OAuthOptions::misbehave`]). The file's header comment says
//! everything it does on the wire.
//!
//! ```no_run
//! use harnessx_test_support::oauth::{OAuthMcpServer, OAuthOptions};
//!
//! let Some(server) = OAuthMcpServer::start(OAuthOptions { access_ttl: Some(2), ..Default::default() })
//! else {
//!     return; // no npm here (under CI: a panic instead)
//! };
//! let url = server.url(); // http://localhost:PORT/mcp, answers 401 without a token
//! // ... log in, call `whoami` ...
//! server.revoke();
//! assert_eq!(server.stats()["authorization_codes"], 1);
//! # let _ = url;
//! ```

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::http::request;
use crate::npm::ensure_npm_package;

/// The SDK version the server runs on.
pub const SDK_VERSION: &str = "1.32.2";

/// The server's script.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/oauth_mcp_server.mjs");

/// How the server is started.
#[derive(Debug, Clone, Copy, Default)]
pub struct OAuthOptions {
    /// An access token's lifetime in seconds (`expires_in`); 3600 when `None`.
    pub access_ttl: Option<u64>,
    /// `None` (behaves), or one of:
    /// - `"foreign-metadata"`: the protected-resource metadata names the authorization
    ///   server `http://127.0.0.2:AUTH_PORT/`, another origin than the `localhost` one the
    ///   client used; it answers there too (issuer and endpoints on that origin, the same
    ///   tokens), so [`stats`](OAuthMcpServer::stats) shows whether a client went;
    /// - `"huge-token"`: the token endpoint answers a well-formed JSON body of about
    ///   100 KB (a 100,000-character access token, valid at the MCP server);
    /// - `"http-auth-server"`: the authorization-server metadata (at
    ///   `http://localhost:AUTH_PORT/.well-known/oauth-authorization-server`) names its
    ///   endpoints on `http://auth.example.test:AUTH_PORT/...` (plain HTTP, not loopback,
    ///   never resolves).
    pub misbehave: Option<&'static str>,
}

/// A running server (the authorization server and the MCP server, each on a loopback
/// port of its own); killed when dropped.
#[derive(Debug)]
pub struct OAuthMcpServer {
    child: Child,
    mcp_port: u16,
    auth_port: u16,
}

impl OAuthMcpServer {
    /// Installs the SDK when missing, starts the server and waits until both ports
    /// listen. `None` only when `npm` is missing outside CI (under `CI`, a panic:
    /// [`skip_or_fail`](crate::skip_or_fail)); a server that does not start panics.
    pub fn start(options: OAuthOptions) -> Option<Self> {
        let prefix = ensure_npm_package("@modelcontextprotocol/sdk", SDK_VERSION)?;
        let free = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free loopback port")
        };
        let (mcp_port, auth_port) = (free(), free());
        let mut command = Command::new("node");
        command
            .arg(SCRIPT)
            // The script resolves the SDK and its express from here (ES modules ignore it).
            .env("NODE_PATH", prefix.join("node_modules"))
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string())
            .env("ACCESS_TTL", options.access_ttl.unwrap_or(3600).to_string())
            .env("MISBEHAVE", options.misbehave.unwrap_or(""))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().unwrap_or_else(|e| panic!("starting node {SCRIPT}: {e}"));
        // Ready once both say they listen; its stdout is read on to the end so that it
        // never blocks on a full pipe.
        let stdout = child.stdout.take().expect("a piped stdout");
        let (ready, listening) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("listening on port") {
                    let _ = ready.send(());
                }
            }
        });
        let mut server = Self { child, mcp_port, auth_port };
        for _ in 0..2 {
            if listening.recv_timeout(Duration::from_secs(60)).is_err() {
                let status = server.child.try_wait().ok().flatten();
                panic!(
                    "the OAuth MCP server ({SCRIPT}) did not listen on ports {mcp_port} and {auth_port} \
                     ({}); its stderr is above",
                    status.map_or_else(|| "no answer in 60 s".to_owned(), |s| format!("it exited: {s}"))
                );
            }
        }
        Some(server)
    }

    /// The MCP server's URL, `http://localhost:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp_port)
    }

    /// The authorization server's URL, `http://localhost:PORT` (its issuer is this with a
    /// `/`).
    pub fn auth_url(&self) -> String {
        format!("http://localhost:{}", self.auth_port)
    }

    /// Revokes every access token, refresh token and pending authorization code: the next
    /// MCP request answers 401, a refresh `invalid_grant`. Registered clients stay.
    pub fn revoke(&self) {
        self.control("POST", "/test/revoke");
    }

    /// Makes every access token expired now (refresh tokens stay good), as if
    /// `access_ttl` had passed.
    pub fn expire(&self) {
        self.control("POST", "/test/expire");
    }

    /// What the servers saw: `{"authorization_codes", "refreshes", "refreshes_refused",
    /// "registrations", "mcp_requests_with_token", "mcp_requests_refused"}`, each a count
    /// since start (codes exchanged for tokens; refreshes granted; refreshes refused;
    /// dynamic registrations; requests to `/mcp` with `Authorization: Bearer`, valid or
    /// not; requests to `/mcp` answered 401 or 403).
    pub fn stats(&self) -> Value {
        self.control("GET", "/test/stats")
    }

    fn control(&self, method: &str, path: &str) -> Value {
        let url = format!("{}{path}", self.auth_url());
        let answer = request(method, &url, &[], None, Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        assert_eq!(answer.status, 200, "{method} {url}: {}", answer.body);
        answer.json()
    }
}

impl Drop for OAuthMcpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
