//! The runs API in an application of your own: `harnessx::serve::router(..)` is an axum
//! `Router`, mounted here under `/agents` beside the application's own routes. A run is
//! started with a POST, its events read back as server-sent events, and the server stops.
//! The agent's model is a local function (no key needed); use any model.
//!
//! `cargo run --example serve --features serve`

use std::io::{Read, Write};

use harnessx::agent::Agent;
use harnessx::model::{FunctionModel, ModelResponse};
use harnessx::serve::{ServeOptions, Server, router};

/// One HTTP request over a fresh connection; the answer's body.
fn http(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> std::io::Result<String> {
    let mut stream = std::net::TcpStream::connect(addr)?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = FunctionModel::new(|request| {
        Ok(ModelResponse::text(format!("You said: {}", request.messages[0].content())))
    });
    let agent = Agent::builder().model(model).build()?;
    let dir = tempfile::tempdir()?;
    let server =
        Server::new(agent, &dir.path().join("runs.db"), ServeOptions::default()).map_err(|e| e.message)?;
    // The application's routes, and the runs API under /agents.
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .nest("/agents", router(&server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });

    let started = tokio::task::spawn_blocking(move || {
        let started = http(addr, "POST", "/agents/v1/runs", r#"{"prompt": "hello", "run_id": "demo"}"#)?;
        let events = http(addr, "GET", "/agents/v1/runs/demo/events", "")?;
        std::io::Result::Ok((started, events))
    })
    .await??;
    println!("POST /agents/v1/runs -> {}", started.0.trim());
    for line in started.1.lines().filter(|l| l.starts_with("data:")) {
        println!("event {line}");
    }
    serving.abort();
    server.stop();
    Ok(())
}
