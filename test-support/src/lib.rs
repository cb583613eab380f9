//! Helpers the harnessx tests share. Not published: every crate that needs them takes
//! this crate as a dev-dependency. It depends on none of the harnessx crates, so any of
//! them can use it without building a second copy of itself.
//!
//! - [`fixture`], [`fixture_bytes`], [`fixture_json`], [`fixture_path`]: the recorded
//!   material under `test-support/fixtures/` (the one copy in the repository);
//! - [`server`]: a loopback HTTP server that replays canned provider replies (whole or
//!   in chunks) and records each request;
//! - [`local`]: imitations of the OpenAI-compatible servers people run at home
//!   (llama-cpp-python, `llama-server`, vLLM, Ollama), request by request;
//! - [`bin`]: running a built binary in a folder and reading its output, JSON lines
//!   included;
//! - [`deep`]: hostile nesting (JSON text of every shape and depth, deep values);
//! - [`sse`]: framing provider events as server-sent events;
//! - [`system`]: Debian packages installed on demand, and which processes are alive;
//! - [`npm`], [`python`]: npm packages and Python virtual environments installed on
//!   demand into a cache folder;
//! - [`oauth`]: an MCP server behind OAuth 2.1 (the TypeScript SDK's, with short-lived
//!   access tokens, refresh tokens, revocation and misbehaviour on request);
//! - [`process`]: a test that needs a process of its own inside a crate's one test binary;
//! - [`skip_or_fail`]: what a test does when this machine cannot run it.

pub mod bin;
pub mod deep;
pub mod http;
pub mod local;
pub mod npm;
pub mod oauth;
pub mod process;
pub mod python;
pub mod restate;
pub mod server;
pub mod sse;
pub mod system;
pub mod window;

use std::path::PathBuf;

use serde_json::Value;

/// What a test does when this machine lacks what it needs (a program, a package manager to
/// install it with, root, a writable cgroup): under `CI` (the variable set, to anything) it
/// panics with `reason`, so that a green CI run means every test ran; elsewhere it prints
/// `skipping: REASON` and the caller returns.
///
/// ```
/// fn bubblewrap_is_here() -> bool {
///     let found = std::path::Path::new("/usr/bin/bwrap").exists();
///     if !found {
///         harnessx_test_support::skip_or_fail("`bwrap` is missing");
///     }
///     found
/// }
/// # let _ = bubblewrap_is_here;
/// ```
#[track_caller]
pub fn skip_or_fail(reason: impl std::fmt::Display) {
    if std::env::var_os("CI").is_some() {
        panic!("{reason}; under CI no test may skip: give the machine what this test needs (see .ci/run)");
    }
    eprintln!("skipping: {reason}");
}

/// The path of a file under `test-support/fixtures/`.
pub fn fixture_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(relative)
}

/// The bytes of a fixture; panics with the path when it cannot be read.
pub fn fixture_bytes(relative: &str) -> Vec<u8> {
    let path = fixture_path(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading fixture {}: {e}", path.display()))
}

/// The text of a fixture.
pub fn fixture(relative: &str) -> String {
    String::from_utf8(fixture_bytes(relative))
        .unwrap_or_else(|e| panic!("fixture {relative} is not UTF-8: {e}"))
}

/// A fixture parsed as JSON.
pub fn fixture_json(relative: &str) -> Value {
    serde_json::from_slice(&fixture_bytes(relative))
        .unwrap_or_else(|e| panic!("parsing fixture {relative}: {e}"))
}

/// The tool results an OpenAI-compatible request body carries back to the model, in
/// order, as (call id, content).
pub fn openai_tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}
