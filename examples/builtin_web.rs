//! The `web` bundle: `fetch_url` registered three ways, a page fetched from a small server
//! on this machine (reachable only because the example opts in), and the refusals the
//! default gives for local addresses.
//!
//! `cargo run --example builtin_web`

use std::io::{Read, Write};
use std::net::TcpListener;

use harnessx::builtin::web::{FetchUrl, WebOptions, register_web_tools};
use harnessx::catalog::CommonOptions;
use harnessx::{ToolCall, ToolRegistry};
use serde_json::json;

/// A one-page HTTP server on 127.0.0.1, for the example only.
fn serve_one_page() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><head><script>track()</script></head><body><h1>Release notes</h1>\
                        <p>Version 2 adds <a href=\"https://example.com/web\">fetch_url</a>.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

#[tokio::main]
async fn main() {
    // 1. Directly: the model sees `url` and `max_length`.
    let direct = ToolRegistry::new();
    direct.register_tool(FetchUrl::new()).unwrap();
    let schema = &direct.get_tool("fetch_url").unwrap().input_schema;
    println!("direct: parameters {:?}", schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>());

    // 2. The helper with a fixed max_length: the model sees only `url`.
    let helper = ToolRegistry::new();
    let common = CommonOptions { include: Some(vec!["fetch_url".into()]), ..Default::default() };
    let registered =
        register_web_tools(&helper, WebOptions { common, max_length: Some(20_000), ..Default::default() })
            .unwrap();
    assert_eq!(registered, ["fetch_url"]);
    let schema = &helper.get_tool("fetch_url").unwrap().input_schema;
    println!("helper: parameters {:?}", schema["properties"].as_object().unwrap().keys().collect::<Vec<_>>());

    // 3. By name, opening 127.0.0.1 (and only it) to reach the local server.
    let port = serve_one_page();
    let registry = ToolRegistry::new();
    registry.load_builtin("web", json!({"allow_hosts": ["127.0.0.1"], "max_length": 2000})).unwrap();
    let fetch = |url: String| ToolCall::new("1", "fetch_url", json!({ "url": url }).to_string());
    let result = registry.execute(&fetch(format!("http://127.0.0.1:{port}/notes")), None).await;
    println!("\nfetched:\n{}\n", result.content);

    // The default reaches public addresses only: every local spelling is refused.
    let default = ToolRegistry::new();
    default.load_builtin("web", json!({})).unwrap();
    for url in ["http://169.254.169.254/latest/meta-data/", "http://0x7f000001/", "http://[::ffff:10.0.0.1]/"]
    {
        let result = default.execute(&fetch(url.into()), None).await;
        println!("{url}\n  -> {}", result.content);
    }
}
