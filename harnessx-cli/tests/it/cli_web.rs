//! `fetch_url` from the command line: refused on local addresses by default, opened by
//! `--web-allow` and `--web-allow-private`; hostile pages never abort the binary.

use std::path::Path;
use std::time::Duration;

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
        headers: Vec::new(),
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

/// A server on 127.0.0.1 answering one request with `body` as HTML.
fn serve_page(body: Vec<u8>) -> Server {
    Server::start(vec![Reply {
        status: 200,
        content_type: "text/html",
        body,
        split: None,
        headers: Vec::new(),
    }])
}

// Regression: 20,000 nested `<div>`s aborted `harnessx` ("thread 'main' has overflowed its
// stack", SIGABRT).
#[test]
fn twenty_thousand_nested_divs_do_not_abort_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let page = format!("{}deep text{}", "<div>".repeat(20_000), "</div>".repeat(20_000));
    let server = serve_page(page.into_bytes());
    let (v, code) = call(dir.path(), port(&server), &["--web-allow", "127.0.0.1"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["content"],
        "deep text\n\n[nested too deeply: 19748 elements deeper than 256 levels were left out, their text kept in the element around them]"
    );
}

// A page nested 1,000,000 levels deep (as deep as fits the default 5 MiB download) comes
// back said too deep, well inside fetch_url's 60 s timeout and in bounded memory.
#[test]
fn a_million_levels_deep_come_back_in_bounded_time_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = [
        ("<div>", "div"),
        ("<b>", "b"),
        ("<i><b>", "i-b"),
        ("<ul><li>", "ul-li"),
        ("<tr><td><table>", "table"),
    ];
    for (open, name) in shapes {
        // No closers: the opening tags alone are the whole page, cut to fit the byte cap.
        let levels = (5 * 1024 * 1024 - 100) / open.len();
        let levels = levels.min(1_000_000);
        let page = format!("{}deep text", open.repeat(levels));
        let server = serve_page(page.into_bytes());
        let url = format!(r#"{{"url": "http://127.0.0.1:{}/"}}"#, port(&server));
        let args = ["tools", "call", "fetch_url", &url, "--json", "--web-allow", "127.0.0.1"];
        let (out, measured) =
            Binary::new(env!("CARGO_BIN_EXE_harnessx")).run_measured(dir.path(), &args, b"");
        let (peak_kib, took) = (measured.peak_rss_kib, measured.elapsed);
        let v: Value = serde_json::from_str(stdout(&out).trim())
            .unwrap_or_else(|e| panic!("{name}: {e}: {:?} / {}", out.status, stderr(&out)));
        assert_eq!(out.status.code(), Some(0), "{name}: {v}");
        let content = v["content"].as_str().unwrap();
        assert!(content.contains("deep text"), "{name}: {content}");
        assert!(content.contains("\n\n[nested too deeply: "), "{name}: {content}");
        assert!(!content.contains("download stopped"), "{name}: the page was cut: {content}");
        eprintln!("{name} x {levels}: {took:?}, peak {peak_kib} KiB");
        assert!(took < Duration::from_secs(30), "{name} x {levels}: {took:?}");
        assert!(peak_kib > 0 && peak_kib < 512 * 1024, "{name} x {levels}: peak {peak_kib} KiB");
    }
}
