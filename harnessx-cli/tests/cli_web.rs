//! `fetch_url` from the command line: refused on local addresses by default, opened by
//! `--web-allow` and `--web-allow-private`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use serde_json::Value;

/// A server on 127.0.0.1 answering every request with one small HTML page.
fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<h1>Local</h1><p>only with the opt-in</p>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn call(dir: &Path, port: u16, extra: &[&str]) -> (Value, i32) {
    let url = format!(r#"{{"url": "http://127.0.0.1:{port}/"}}"#);
    let mut args = vec!["tools", "call", "fetch_url", url.as_str(), "--json"];
    args.extend_from_slice(extra);
    let out = Binary::new(env!("CARGO_BIN_EXE_harnessx")).run(dir, &args);
    let v: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {} / {}", stdout(&out), stderr(&out)));
    (v, out.status.code().unwrap())
}

#[test]
fn local_addresses_need_the_web_flags() {
    let dir = tempfile::tempdir().unwrap();
    let port = serve();
    let (v, code) = call(dir.path(), port, &["--tools", "web"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["is_error"], true);
    assert!(v["content"].as_str().unwrap().starts_with("refused: 127.0.0.1 is a loopback address"), "{v}");

    for flags in [
        &["--tools", "web", "--web-allow", "127.0.0.1"][..],
        &["--web-allow-private"],
        &["--web-allow", "127.0.0.0/8"],
    ] {
        let (v, code) = call(dir.path(), port, flags);
        assert_eq!(code, 0, "{flags:?}: {v}");
        assert_eq!(v["content"], "# Local\n\nonly with the opt-in", "{flags:?}");
    }
}

#[test]
fn web_flags_without_fetch_url_or_with_a_bad_value_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bin = Binary::new(env!("CARGO_BIN_EXE_harnessx"));
    let out = bin.run(
        dir.path(),
        &["tools", "call", "read_todos", "{}", "--tools", "planning", "--web-allow-private"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--web-allow-private and --web-allow apply to fetch_url"),
        "{}",
        stderr(&out)
    );
    let out = bin.run(
        dir.path(),
        &["tools", "call", "fetch_url", "{}", "--tools", "web", "--web-allow", "not a host"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("allow_hosts"), "{}", stderr(&out));
}
