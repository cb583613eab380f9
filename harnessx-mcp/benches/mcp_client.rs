//! Round trips of a trivial tool (`echo`) to `@modelcontextprotocol/server-everything`
//! over stdio, through our client, next to rmcp's bare client and the official Python
//! client against the same server, in the same run.
//!
//! `cargo bench -p harnessx-mcp --bench mcp_client` (`HX_BENCH_CALLS` sets the calls per
//! measurement, 2,000 by default). A plain timing loop, not criterion: a Python
//! measurement is a process of its own. Without `npm` the bench prints why and stops;
//! without `python3` the Python row is skipped, printing why. Results are in
//! `docs/performance.md`, "MCP round trips".
//!
//! Rows:
//! - `rmcp client`: `RunningService::call_tool`, no harnessx (the SDK's own cost);
//! - `harnessx registry.execute`: the full pipeline (name resolution, validation,
//!   permissions, timeout) in front of the same call;
//! - the same with 8 calls in flight (`echo` is read-only and the server trusted, so
//!   concurrent);
//! - `python mcp 2.3 client`: `ClientSession.call_tool` in a loop, timed in the script
//!   (`test-support/python/mcp_client.py`, in a venv the test support makes).

use std::time::{Duration, Instant};

use harnessx_core::{PermissionLevel, PermissionManager, ToolCall, ToolRegistry};
use harnessx_mcp::{McpOptions, McpServer, register_mcp};
use harnessx_test_support::npm::{ensure_npm_package, installed_file};
use harnessx_test_support::python;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

const IN_FLIGHT: usize = 8;
/// Calls before the first measurement (node's JIT warms up).
const WARMUP: usize = 5_000;
/// Measurements per row.
const ROUNDS: usize = 4;

fn calls() -> usize {
    std::env::var("HX_BENCH_CALLS").ok().and_then(|n| n.parse().ok()).unwrap_or(2_000)
}

fn row(name: &str, calls: usize, elapsed: Duration) {
    let per_call = elapsed.as_secs_f64() * 1e6 / calls as f64;
    println!("{name:<40} {:>9.0} calls/s {per_call:>9.1} µs/call", calls as f64 / elapsed.as_secs_f64());
}

fn main() {
    let Some(prefix) = ensure_npm_package("@modelcontextprotocol/server-everything", "2026.8.31") else {
        return;
    };
    let script = installed_file(&prefix, "@modelcontextprotocol/server-everything/dist/index.js")
        .expect("dist/index.js")
        .display()
        .to_string();
    let n = calls();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!("echo on server-everything (stdio), {n} calls per row");

    runtime.block_on(async {
        // rmcp's client alone, on a server process of its own.
        let command = tokio::process::Command::new("node").configure(|c| {
            c.arg(&script).arg("stdio");
        });
        let (transport, _) =
            TokioChildProcess::builder(command).stderr(std::process::Stdio::null()).spawn().unwrap();
        let client = ().serve(transport).await.unwrap();
        let params = || {
            CallToolRequestParams::new("echo")
                .with_arguments(serde_json::json!({"message": "hi"}).as_object().unwrap().clone())
        };

        // Ours: the registry's pipeline in front of the same call, on another.
        let registry = ToolRegistry::new();
        let server =
            McpServer::stdio("node", [script.clone(), "stdio".into()], Vec::<(String, String)>::new());
        // The reference server, pinned: trusted, so `echo` (read-only) runs concurrently.
        let options =
            McpOptions { include: Some(vec!["echo".into()]), trust_hints: true, ..McpOptions::default() };
        let connection = register_mcp(&registry, server, options).await.unwrap();
        let permissions = PermissionManager::new(PermissionLevel::Allow);
        let call = ToolCall::new("c1", "echo", r#"{"message":"hi"}"#);

        // Both servers warmed up alike, then measured in turns.
        for _ in 0..WARMUP {
            client.call_tool(params()).await.unwrap();
            assert!(!registry.execute(&call, Some(&permissions)).await.is_error);
        }
        for _ in 0..ROUNDS {
            let start = Instant::now();
            for _ in 0..n {
                client.call_tool(params()).await.unwrap();
            }
            row("rmcp client", n, start.elapsed());
            let start = Instant::now();
            for _ in 0..n {
                let r = registry.execute(&call, Some(&permissions)).await;
                assert!(!r.is_error, "{r:?}");
            }
            row("harnessx registry.execute", n, start.elapsed());
        }
        let _ = client.cancel().await;

        let start = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..IN_FLIGHT {
            let (registry, permissions, call) = (registry.clone(), permissions.clone(), call.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..n / IN_FLIGHT {
                    assert!(!registry.execute(&call, Some(&permissions)).await.is_error);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        row(
            &format!("harnessx registry.execute, {IN_FLIGHT} in flight"),
            n / IN_FLIGHT * IN_FLIGHT,
            start.elapsed(),
        );
        connection.close().await;
    });

    // The official Python client, on a server process of its own, warmed up alike.
    let Some(venv) = python::ensure_venv("mcp-2.3.0", &python::MCP_PACKAGES) else { return };
    for _ in 0..ROUNDS {
        row(
            "python mcp 2.3 client",
            n,
            python::time_calls(
                &venv,
                &["--stdio", "node", &script, "stdio"],
                "echo",
                &json!({"message": "hi"}),
                n as u64,
                WARMUP as u64,
            ),
        );
    }
}
