//! `fetch_url` from the command line: refused on local addresses by default, opened by
//! `--web-allow` and `--web-allow-private`.

use std::path::Path;

use harnessx_test_support::bin::{Binary, stderr, stdout};
use harnessx_test_support::server::{Reply, Server};
use serde_json::Value;

/// A server on 127.0.0.1 answering `n` requests with one small HTML page each.
fn serve(n: usize) -> Server {
    let page = Reply {
        status: 200,
        content_type: "text/html",
        body: b"<h1>Local</h1><p>only with the opt-in</p>".to_vec(),
        split: None,
    };
    Server::start(vec![page; n])
}

fn port(server: &Server) -> u16 {
    server.url.rsplit(':').next().unwrap().parse().unwrap()
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
    let server = serve(3);
    let port = port(&server);
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
    assert_eq!(server.requests().len(), 3, "the refused call never reached the server");
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
