//! MCP round trips of a trivial tool (`echo {"text": "hi"}`), one group per direction;
//! criterion's `thrpt` is calls per second. Figures in docs/performance.md, "MCP round
//! trips".
//!
//! - `serve_rmcp_client`: rmcp's client calling our server ([`serve_mcp`]) in this
//!   process: `io` over a `tokio::io::duplex` pipe (MCP's stdio framing, no process),
//!   `http` over streamable HTTP on loopback.
//! - `serve_python_client`: the official Python client (PyPI `mcp` 2.3.0, in a venv
//!   test-support makes) calling the same HTTP server in the same run. Each sample is one
//!   Python process making 50 untimed calls, then N timed ones on one session: only the
//!   steady state is timed (by the script), not Python's start, the handshake or first-use
//!   costs. Skipped without `python3`.
//!
//! The client direction (our client calling a server) gets its own group here.
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harnessx_core::{PermissionManager, ToolHandler, ToolOptions, ToolRegistry};
use harnessx_mcp::{McpTransport, serve_mcp};
use harnessx_test_support::python;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    let echo = ToolHandler::from_async(|args: Value, _| async move {
        Ok(args["text"].as_str().unwrap_or_default().to_owned().into())
    });
    let reads = ToolOptions::new().read_only(true).idempotent(true).open_world(false);
    registry.register_with_schema("echo", "Echo text back.", schema, echo, reads).unwrap();
    registry
}

fn echo() -> CallToolRequestParams {
    CallToolRequestParams::new("echo").with_arguments(json!({"text": "hi"}).as_object().unwrap().clone())
}

fn serve(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let registry = registry();
    let (io_client, http_server, http_client) = rt.block_on(async {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(theirs);
        serve_mcp(registry.clone(), PermissionManager::default(), McpTransport::io(read, write))
            .await
            .unwrap();
        let io_client = ().serve(ours).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = serve_mcp(registry.clone(), PermissionManager::default(), McpTransport::http(listener))
            .await
            .unwrap();
        harnessx_infra::tls::install_default_provider();
        let http_client =
            ().serve(StreamableHttpClientTransport::from_uri(server.url().unwrap())).await.unwrap();
        (io_client, server, http_client)
    });

    let mut group = c.benchmark_group("serve_rmcp_client");
    group.throughput(Throughput::Elements(1));
    for (name, client) in [("io", &io_client), ("http", &http_client)] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let result = client.call_tool(echo()).await.unwrap();
                assert_eq!(result.is_error, Some(false));
            })
        });
    }
    group.finish();

    match python::ensure_venv("mcp-2.3.0", &python::MCP_PACKAGES) {
        None => eprintln!("skipping serve_python_client: no python3"),
        Some(venv) => {
            let url = http_server.url().unwrap();
            let mut group = c.benchmark_group("serve_python_client");
            group.throughput(Throughput::Elements(1));
            group
                .sample_size(10)
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(10));
            group.bench_function("http", |b| {
                b.iter_custom(|calls| {
                    python::time_calls(&venv, &["--http", &url], "echo", &json!({"text": "hi"}), calls, 50)
                })
            });
            group.finish();
        }
    }
    rt.block_on(async {
        let _ = io_client.cancel().await;
        let _ = http_client.cancel().await;
        http_server.stop();
        let _ = http_server.wait().await;
    });
}

criterion_group!(benches, serve);
criterion_main!(benches);
