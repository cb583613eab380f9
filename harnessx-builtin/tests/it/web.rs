//! `fetch_url` against a loopback HTTP(S) server: conversion, charsets, limits, timeouts,
//! redirects, and every refused address family with the opt-ins that open them.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use harnessx_builtin::web::guard::{Access, HostRule, classify};
use harnessx_builtin::web::{FetchUrl, WebOptions, register_web_tools};
use harnessx_core::catalog::CommonOptions;
use harnessx_core::{ReplayPolicy, ToolCall, ToolOptions, ToolPolicy, ToolRegistry, ToolResult};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One piece of a canned reply: bytes to write, or a pause.
#[derive(Clone)]
pub(crate) enum Part {
    Bytes(Vec<u8>),
    Sleep(Duration),
}

pub(crate) type Route = Arc<dyn Fn(&str, u16) -> Vec<Part> + Send + Sync>;

/// A loopback server on 127.0.0.1 answering each request (one per connection) with the
/// parts `route` gives for its path.
pub(crate) async fn serve(route: Route) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            let route = route.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                for part in route(&path, port) {
                    match part {
                        Part::Bytes(b) => {
                            if stream.write_all(&b).await.is_err() {
                                return;
                            }
                            let _ = stream.flush().await;
                        }
                        Part::Sleep(d) => tokio::time::sleep(d).await,
                    }
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    port
}

pub(crate) fn reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<Part> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    vec![Part::Bytes(bytes)]
}

fn redirect(location: &str) -> Vec<Part> {
    reply("302 Found", &[("Location", location)], b"")
}

const PAGE: &str = r#"<!DOCTYPE html><html><head><title>T</title><style>body{color:red}</style>
<script>var secret = "do not show";</script></head>
<body><h1>Heading</h1><p>Some <b>bold</b> text and <a href="https://example.com/docs">a link</a>.</p>
<ul><li>one</li><li>two</li></ul><noscript>enable js</noscript></body></html>"#;

/// The test site.
fn site() -> Route {
    Arc::new(|path: &str, port: u16| {
        match path {
        "/html" => reply("200 OK", &[("Content-Type", "text/html; charset=utf-8")], PAGE.as_bytes()),
        "/latin1" => reply(
            "200 OK",
            &[("Content-Type", "text/html; charset=ISO-8859-1")],
            b"<p>caf\xe9 cr\xe8me br\xfbl\xe9e</p>",
        ),
        "/meta1252" => reply(
            "200 OK",
            &[("Content-Type", "text/html")],
            b"<html><head><meta charset=\"windows-1252\"></head><body><p>\x93quoted\x94 \x80 5</p></body></html>",
        ),
        "/json" => reply("200 OK", &[("Content-Type", "application/json")], br#"{"a": [1, 2], "b": "<p>"}"#),
        "/xml" => reply("200 OK", &[("Content-Type", "application/rss+xml")], b"<rss><item>x</item></rss>"),
        "/zip" => reply("200 OK", &[("Content-Type", "application/zip")], b"PK\x03\x04\x14\0\0\0\x08\0\0\0\0\0\0\0"),
        "/long" => {
            let body: String = (0..2000).map(|i| format!("Paragraph {i} has some words in it.\n\n")).collect();
            reply("200 OK", &[("Content-Type", "text/plain")], body.as_bytes())
        }
        "/big" => reply("200 OK", &[("Content-Type", "text/plain")], &vec![b'x'; 1024 * 1024]),
        "/bomb" => {
            // 64 MiB of zeros, gzip-compressed to about 64 KiB.
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            let block = vec![b'0'; 1024 * 1024];
            for _ in 0..64 {
                gz.write_all(&block).unwrap();
            }
            let body = gz.finish().unwrap();
            reply("200 OK", &[("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], &body)
        }
        "/slow" => {
            let mut parts = vec![Part::Bytes(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\nConnection: close\r\n\r\n".to_vec(),
            )];
            for _ in 0..100 {
                parts.push(Part::Bytes(b"x".to_vec()));
                parts.push(Part::Sleep(Duration::from_millis(200)));
            }
            parts
        }
        "/missing" => reply("404 Not Found", &[("Content-Type", "text/html")], b"<p>No such page</p>"),
        "/to-loopback" => redirect(&format!("http://127.0.0.1:{port}/html")),
        "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-file" => redirect("file:///etc/passwd"),
        p if p.starts_with("/hop/") => {
            let n: u32 = p[5..].parse().unwrap();
            if n == 0 { redirect("/html") } else { redirect(&format!("/hop/{}", n - 1)) }
        }
        _ => reply("404 Not Found", &[], b""),
    }
    })
}

pub(crate) fn registry_with(fetch: FetchUrl) -> ToolRegistry {
    // The central cap on results set far above the tool's own limits, which these tests
    // are about.
    let registry =
        ToolRegistry::with_policy(ToolPolicy { max_result_chars: Some(10_000_000), ..ToolPolicy::default() });
    registry.register_tool(fetch).unwrap();
    registry
}

pub(crate) async fn call(registry: &ToolRegistry, args: serde_json::Value) -> ToolResult {
    registry.execute(&ToolCall::new("c", "fetch_url", args.to_string()), None).await
}

pub(crate) fn local() -> FetchUrl {
    FetchUrl::new().allow_host("127.0.0.1".parse().unwrap())
}

#[tokio::test]
async fn html_becomes_markdown_with_links_and_without_scripts() {
    let port = serve(site()).await;
    let result = call(&registry_with(local()), json!({"url": format!("http://127.0.0.1:{port}/html")})).await;
    assert!(!result.is_error, "{}", result.content);
    let text = &result.content;
    assert!(text.starts_with("# Heading"), "{text}");
    assert!(text.contains("Some **bold** text and [a link](https://example.com/docs)."), "{text}");
    assert!(text.contains("one") && text.contains("two"), "{text}");
    for hidden in ["secret", "color:red", "enable js"] {
        assert!(!text.contains(hidden), "{hidden} leaked: {text}");
    }
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["content_type"], "text/html");
    assert_eq!(structured["status"], 200);
}

#[tokio::test]
async fn declared_charsets_are_decoded() {
    let port = serve(site()).await;
    let registry = registry_with(local());
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/latin1")})).await;
    assert_eq!(result.content, "café crème brûlée");
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/meta1252")})).await;
    assert_eq!(result.content, "\u{201c}quoted\u{201d} € 5");
    assert_eq!(result.structured_content.unwrap()["encoding"], "windows-1252");
}

#[tokio::test]
async fn text_json_and_xml_pass_through_and_other_types_get_one_line() {
    let port = serve(site()).await;
    let registry = registry_with(local());
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/json")})).await;
    assert_eq!(result.content, r#"{"a": [1, 2], "b": "<p>"}"#);
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/xml")})).await;
    assert_eq!(result.content, "<rss><item>x</item></rss>");
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/zip")})).await;
    assert!(!result.is_error);
    assert_eq!(
        result.content,
        format!(
            "http://127.0.0.1:{port}/zip is application/zip (16 bytes), which fetch_url does not read: it returns HTML, text, JSON, XML and images (PNG, JPEG, GIF, WebP)."
        )
    );
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/missing")})).await;
    assert!(result.is_error);
    assert!(
        result.content.contains("HTTP 404 Not Found") && result.content.contains("No such page"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn max_length_cuts_characters_at_a_paragraph_and_says_so() {
    let port = serve(site()).await;
    let registry = registry_with(local());
    let result =
        call(&registry, json!({"url": format!("http://127.0.0.1:{port}/long"), "max_length": 100})).await;
    let (shown, note) = result.content.split_once("\n\n[truncated").unwrap();
    assert!(shown.chars().count() <= 100);
    assert!(shown.ends_with("in it."), "cut mid-paragraph: {shown:?}");
    assert!(note.contains("of 74890 characters (max_length 100)"), "{note}");
    assert_eq!(result.structured_content.unwrap()["truncated"], true);
}

#[tokio::test]
async fn the_byte_cap_stops_the_download_separately_from_max_length() {
    let port = serve(site()).await;
    let registry = registry_with(local().max_bytes(64 * 1024));
    let result =
        call(&registry, json!({"url": format!("http://127.0.0.1:{port}/big"), "max_length": 1_000_000}))
            .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("[download stopped at the 65536 byte limit; the page is longer]"));
    assert!(!result.content.contains("[truncated"));
    assert_eq!(result.content.matches('x').count(), 64 * 1024);
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["byte_limit_reached"], true);
    assert_eq!(structured["truncated"], false);
}

#[tokio::test]
async fn a_gzip_bomb_stops_at_the_byte_cap() {
    let port = serve(site()).await;
    let registry = registry_with(local().max_bytes(1024 * 1024));
    let started = Instant::now();
    let result =
        call(&registry, json!({"url": format!("http://127.0.0.1:{port}/bomb"), "max_length": 10})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("download stopped at the 1048576 byte limit"), "{}", result.content);
    assert_eq!(result.structured_content.unwrap()["characters"], 1024 * 1024);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_slow_body_hits_the_timeout() {
    let port = serve(site()).await;
    let registry = ToolRegistry::new();
    registry.register_tool_with(local(), ToolOptions::new().timeout_seconds(1.0)).unwrap();
    let started = Instant::now();
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/slow")})).await;
    assert!(result.is_error);
    assert!(result.content.contains("timed out"), "{}", result.content);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn redirect_chains_are_followed_up_to_the_hop_limit() {
    let port = serve(site()).await;
    let registry = registry_with(local().max_redirects(5));
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/hop/4")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.starts_with("# Heading"));
    assert!(
        result.content.ends_with(&format!("[redirected to http://127.0.0.1:{port}/html]")),
        "{}",
        result.content
    );
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/hop/5")})).await;
    assert!(result.is_error);
    assert!(result.content.contains("stopped after 5 redirects"), "{}", result.content);
}

#[tokio::test]
async fn each_redirect_hop_is_checked_again() {
    let port = serve(site()).await;
    // Only the name `localhost` is allowed: its redirect to the literal 127.0.0.1 is not.
    let registry = registry_with(FetchUrl::new().allow_host("localhost".parse().unwrap()));
    let result = call(&registry, json!({"url": format!("http://localhost:{port}/html")})).await;
    assert!(!result.is_error, "{}", result.content);
    let result = call(&registry, json!({"url": format!("http://localhost:{port}/to-loopback")})).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "refused: 127.0.0.1 is a loopback address; fetch_url only reaches public addresses (allow_private or allow_hosts opens local ones)"
    );
    let result = call(&registry, json!({"url": format!("http://localhost:{port}/to-metadata")})).await;
    assert!(
        result.content.starts_with("refused: 169.254.169.254 is a link-local address"),
        "{}",
        result.content
    );
    let result = call(&registry, json!({"url": format!("http://localhost:{port}/to-file")})).await;
    assert!(result.content.contains("uses the `file` scheme"), "{}", result.content);
}

#[tokio::test]
async fn every_local_spelling_is_refused_by_default() {
    let registry = registry_with(FetchUrl::new());
    let cases = [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://127.1/", "127.0.0.1 is a loopback address"),
        ("http://0x7f000001/", "127.0.0.1 is a loopback address"),
        ("http://2130706433/", "127.0.0.1 is a loopback address"),
        ("http://0177.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://[::1]:8080/", "[::1] is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1] is a loopback address"),
        ("http://[::127.0.0.1]/", "[::7f00:1] is a loopback address"),
        ("http://[64:ff9b::127.0.0.1]/", "[64:ff9b::7f00:1] is a loopback address"),
        ("http://0.0.0.0/", "0.0.0.0 is an unspecified"),
        ("http://[::]/", "[::] is the unspecified address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[::ffff:169.254.169.254]/", "is a link-local address"),
        ("http://10.1.2.3/", "10.1.2.3 is a private address"),
        ("http://172.16.0.1/", "172.16.0.1 is a private address"),
        ("http://192.168.1.1/", "192.168.1.1 is a private address"),
        ("http://100.64.0.1/", "100.64.0.1 is a shared (carrier-grade NAT) address"),
        ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
        ("http://255.255.255.255/", "255.255.255.255 is the broadcast address"),
        ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
        ("http://192.0.2.1/", "192.0.2.1 is a documentation address"),
        ("http://[fc00::1]/", "[fc00::1] is a unique-local (private) address"),
        ("http://[fd12:3456::1]/", "is a unique-local (private) address"),
        ("http://[fe80::1]/", "[fe80::1] is a link-local address"),
        ("http://[ff02::1]/", "is a multicast address"),
        ("http://[2002:7f00:1::]/", "is a loopback address"),
        ("ftp://example.com/file", "uses the `ftp` scheme"),
        ("file:///etc/passwd", "uses the `file` scheme"),
    ];
    for (url, expected) in cases {
        let result = call(&registry, json!({ "url": url })).await;
        assert!(result.is_error, "{url}: {}", result.content);
        assert!(result.content.starts_with("refused: "), "{url}: {}", result.content);
        assert!(result.content.contains(expected), "{url}: {}", result.content);
        assert!(!result.content.contains('\n'), "one line: {}", result.content);
    }
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_in_the_resolver() {
    let port = serve(site()).await;
    let registry = registry_with(FetchUrl::new());
    let result = call(&registry, json!({"url": format!("http://localhost:{port}/html")})).await;
    assert!(result.is_error);
    assert!(
        result.content.starts_with("refused: localhost resolves to ")
            && result.content.contains("a loopback address"),
        "{}",
        result.content
    );
}

#[test]
fn the_resolver_check_keeps_only_public_addresses() {
    let access = Access::default();
    let ip = |s: &str| s.parse().unwrap();
    let err = access.filter_resolved("evil.example", vec![ip("127.0.0.1")]).unwrap_err();
    assert_eq!(
        err.0,
        "refused: evil.example resolves to 127.0.0.1, a loopback address; fetch_url only reaches public addresses (allow_private or allow_hosts opens local ones)"
    );
    // A name with a public and a private address connects only to the public one.
    let kept = access.filter_resolved("mixed.example", vec![ip("10.0.0.1"), ip("93.184.216.34")]).unwrap();
    assert_eq!(kept, vec![ip("93.184.216.34")]);
    let err = access.filter_resolved("meta.example", vec![ip("::ffff:169.254.169.254")]).unwrap_err();
    assert!(err.0.contains("a link-local address"), "{}", err.0);
    // Allowed by name, by range, or wholesale.
    let by_name = Access { allow_hosts: vec!["meta.example".parse().unwrap()], ..Default::default() };
    assert!(by_name.filter_resolved("meta.example", vec![ip("169.254.169.254")]).is_ok());
    let by_range = Access { allow_hosts: vec!["10.0.0.0/8".parse().unwrap()], ..Default::default() };
    assert!(by_range.filter_resolved("x.example", vec![ip("10.9.9.9")]).is_ok());
    assert!(by_range.filter_resolved("x.example", vec![ip("192.168.0.1")]).is_err());
    let subdomains = Access { allow_hosts: vec![".corp.example".parse().unwrap()], ..Default::default() };
    assert!(subdomains.filter_resolved("wiki.corp.example", vec![ip("10.0.0.1")]).is_ok());
    assert!(subdomains.filter_resolved("corp.example.evil", vec![ip("10.0.0.1")]).is_err());
    let all = Access { allow_private: true, ..Default::default() };
    assert!(all.filter_resolved("x", vec![ip("::1")]).is_ok());
}

#[test]
fn classification_covers_the_special_ranges() {
    let c = |s: &str| classify(s.parse().unwrap());
    for public in
        ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::808:808"]
    {
        assert_eq!(c(public), None, "{public}");
    }
    assert_eq!(c("::ffff:10.0.0.1"), Some("a private address"));
    assert_eq!(c("64:ff9b:1::1"), Some("a local-use NAT64 address"));
    assert_eq!(c("2001:db8::1"), Some("a documentation address"));
    assert_eq!(c("198.18.0.1"), Some("a benchmarking address"));
    for bad in ["", "10.0.0.0/33", "a b", "::1/129"] {
        assert!(bad.parse::<HostRule>().is_err(), "{bad}");
    }
    assert_eq!("[::1]".parse::<HostRule>().unwrap().to_string(), "::1/128");
}

#[tokio::test]
async fn the_opt_ins_open_local_addresses() {
    let port = serve(site()).await;
    let url = format!("http://127.0.0.1:{port}/json");
    for fetch in [
        FetchUrl::new().allow_private(true),
        FetchUrl::new().allow_host("127.0.0.0/8".parse().unwrap()),
        FetchUrl::new().allow_host("127.0.0.1".parse().unwrap()),
    ] {
        let result = call(&registry_with(fetch), json!({ "url": url })).await;
        assert!(!result.is_error, "{}", result.content);
    }
    // Through the bundle's options, as `load_builtin` and the CLI pass them.
    let registry = ToolRegistry::new();
    registry.load_builtin("web", json!({"allow_hosts": ["127.0.0.1"]})).unwrap();
    assert!(!call(&registry, json!({ "url": url })).await.is_error);
    let registry = ToolRegistry::new();
    registry.load_builtin("web", json!({"allow_private": true})).unwrap();
    assert!(!call(&registry, json!({ "url": url })).await.is_error);
    // ... and without them, refused.
    let registry = ToolRegistry::new();
    registry.load_builtin("web", json!({})).unwrap();
    assert!(
        call(&registry, json!({ "url": url }))
            .await
            .content
            .starts_with("refused: 127.0.0.1 is a loopback address")
    );
}

#[test]
fn the_helper_hides_a_fixed_max_length() {
    let registry = ToolRegistry::new();
    let common = CommonOptions { include: Some(vec!["fetch_url".into()]), ..Default::default() };
    let registered =
        register_web_tools(&registry, WebOptions { common, max_length: Some(20_000), ..Default::default() })
            .unwrap();
    assert_eq!(registered, ["fetch_url"]);
    let keys = |r: &ToolRegistry| {
        let schema = r.get_tool("fetch_url").unwrap().input_schema;
        schema["properties"].as_object().unwrap().keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(keys(&registry), ["url"]);

    let by_name = ToolRegistry::new();
    assert_eq!(by_name.load_builtin("web", json!({"max_length": 20000})).unwrap(), ["fetch_url"]);
    assert_eq!(keys(&by_name), ["url"]);

    // Registered directly, the model sees both.
    let direct = registry_with(FetchUrl::new());
    assert_eq!(keys(&direct), ["url", "max_length"]);
    let by_tool_name = ToolRegistry::new();
    by_tool_name.load_builtin("fetch_url", json!({})).unwrap();
    assert_eq!(keys(&by_tool_name), ["url", "max_length"]);
    let def = direct.get_tool("fetch_url").unwrap();
    assert_eq!(def.timeout_seconds, Some(60.0));
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert!(def.concurrent);
    assert_eq!(def.annotations.read_only, Some(true));
    assert_eq!(def.annotations.open_world, Some(true));
}

#[tokio::test]
async fn a_fixed_max_length_applies_and_the_model_cannot_pass_one() {
    let port = serve(site()).await;
    let registry = ToolRegistry::new();
    registry.load_builtin("web", json!({"max_length": 50, "allow_hosts": ["127.0.0.1"]})).unwrap();
    let url = format!("http://127.0.0.1:{port}/long");
    let result = call(&registry, json!({ "url": url })).await;
    assert!(result.content.contains("(max_length 50)"), "{}", result.content);
    let result = call(&registry, json!({ "url": url, "max_length": 10_000 })).await;
    assert!(result.is_error, "the schema has no max_length: {}", result.content);
}

#[tokio::test]
async fn a_self_signed_certificate_is_an_error_result_naming_it() {
    use tokio_rustls::rustls;
    harnessx_infra::tls::install_default_provider();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(stream).await {
                    let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
                }
            });
        }
    });
    let registry = registry_with(local());
    let result = call(&registry, json!({"url": format!("https://127.0.0.1:{port}/")})).await;
    assert!(result.is_error, "{}", result.content);
    assert!(result.content.contains("certificate"), "{}", result.content);
    assert!(!result.content.contains('\n'), "{}", result.content);
}

/// The text at the bottom of every nested page.
const DEEP_TEXT: &str = "deep text";

/// The shapes of nesting a page can take, each through a different part of the HTML tree
/// builder.
const SHAPES: [&str; 7] = ["div", "formatting", "reopened", "list", "table", "unclosed", "mixed"];

/// The nesting depths every shape is tried at.
const DEPTHS: [usize; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];

/// A page nested `depth` levels deep in `shape`, with [`DEEP_TEXT`] at the bottom.
fn nested(shape: &str, depth: usize) -> String {
    let mut html = String::with_capacity(depth * 24);
    let mut closers = Vec::new();
    for level in 0..depth {
        match shape {
            // Plain blocks, closed at the end.
            "div" => {
                html.push_str("<div>");
                closers.push("</div>");
            }
            // Formatting elements, closed misnested (`<b><i><b><i>..</b></i></b></i>`):
            // the adoption agency runs on every closer.
            "formatting" => {
                html.push_str(if level % 2 == 0 { "<b>" } else { "<i>" });
                closers.push(if level % 2 == 0 { "</i>" } else { "</b>" });
            }
            // Formatting elements, each with its own attributes (so the "Noah's Ark" clause
            // does not merge them), that every closed block reopens, nested, in the next.
            "reopened" => html.push_str(&format!("<div><b class=c{level}>x</div>")),
            "list" => html.push_str("<ul><li>"),
            "table" => html.push_str("<table><tr><td>"),
            "unclosed" => html.push_str("<section><span><em>"),
            // A bit of everything malformed: implied closes, stray closers, comments,
            // CDATA, a script full of tags, formatting and tables.
            "mixed" => html.push_str(
                [
                    "<div>",
                    "<p><b>",
                    "</span><!-- <div> -->",
                    "<table><td>",
                    "<ul><li><i class=m>",
                    "<![CDATA[<div>]]><font size=3>",
                    "<script>var hidden = '<div><div><div>';</script><article>",
                    "<dl><dd><a href=#a>",
                    "</p><blockquote>",
                    "<svg><g/></svg><span>",
                ][level % 10],
            ),
            other => panic!("no shape {other}"),
        }
    }
    html.push_str(DEEP_TEXT);
    for closer in closers.iter().rev() {
        html.push_str(closer);
    }
    html
}

/// The Markdown of `html` as it was before the depth bound: htmd on the whole tree, blank
/// lines squeezed.
fn unbounded_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "iframe", "head", "object", "canvas",
        ])
        .build();
    let md = converter.convert(html).unwrap();
    let mut out = String::new();
    let mut blank = 0;
    for line in md.trim().lines() {
        let line = line.trim_end();
        blank = if line.is_empty() { blank + 1 } else { 0 };
        if blank < 2 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim_end().to_owned()
}

/// What every nested page must come back as: the deep text kept, scripts not shown, and
/// the note when (and only when) the page was deep.
fn check_nested(shape: &str, depth: usize, text: &str) {
    let head = |t: &str| t.chars().take(300).collect::<String>();
    let tail = |t: &str| t.chars().rev().take(300).collect::<Vec<_>>().into_iter().rev().collect::<String>();
    assert!(text.contains(DEEP_TEXT), "{shape} x {depth}: the deep text was lost: ...{}", tail(text));
    assert!(!text.contains("hidden"), "{shape} x {depth}: script content shown: {}", head(text));
    let notes = text.matches("\n\n[nested too deeply: ").count()
        + usize::from(text.starts_with("[nested too deeply: "));
    if depth >= 1_000 {
        assert_eq!(notes, 1, "{shape} x {depth}: not said to be too deep: ...{}", tail(text));
        let note = &text[text.find("[nested too deeply: ").unwrap()..];
        assert!(
            note.contains("levels were left out, their text kept in the element around them]"),
            "{shape} x {depth}: {note}"
        );
    }
    if depth <= 10 {
        assert_eq!(notes, 0, "{shape} x {depth}: a shallow page said to be too deep: {text}");
    }
}

// Regression: 20,000 nested `<div>`s overflowed the stack of the thread running fetch_url
// (the process aborted with SIGABRT); 100,000 ran past the 60 s timeout.
#[tokio::test]
async fn twenty_thousand_nested_divs_come_back_said_too_deep() {
    let page = nested("div", 20_000);
    let port =
        serve(Arc::new(move |_: &str, _| reply("200 OK", &[("Content-Type", "text/html")], page.as_bytes())))
            .await;
    let started = Instant::now();
    let result = call(&registry_with(local()), json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.starts_with(DEEP_TEXT), "{}", result.content);
    assert!(
        result.content.ends_with(
            "\n\n[nested too deeply: 19748 elements deeper than 256 levels were left out, their text kept in the element around them]"
        ),
        "{}",
        result.content
    );
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

// Every shape at every depth up to 1,000,000 converts (no overflow, no abort), keeps the
// deep text, says when it was too deep, and takes bounded time.
#[test]
fn every_nesting_shape_converts_at_every_depth() {
    for shape in SHAPES {
        for depth in DEPTHS {
            let html = nested(shape, depth);
            let started = Instant::now();
            let md = harnessx_builtin::web::html_to_markdown(&html);
            let took = started.elapsed();
            check_nested(shape, depth, &md);
            assert!(took < Duration::from_secs(40), "{shape} x {depth}: {took:?}");
            if depth <= 10 {
                assert_eq!(
                    md,
                    unbounded_markdown(&html),
                    "{shape} x {depth}: a shallow page converts as before"
                );
            }
        }
    }
}

// The same pages end to end through fetch_url, the whole page reaching the converter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_nesting_shape_comes_back_from_fetch_url_at_every_depth() {
    let route: Route = Arc::new(|path: &str, _| {
        let mut parts = path.trim_start_matches('/').split('/');
        let (shape, depth) = (parts.next().unwrap().to_owned(), parts.next().unwrap().parse().unwrap());
        reply("200 OK", &[("Content-Type", "text/html; charset=utf-8")], nested(&shape, depth).as_bytes())
    });
    let port = serve(route).await;
    let registry = registry_with(local().max_bytes(64 * 1024 * 1024));
    for shape in SHAPES {
        for depth in DEPTHS {
            if depth == 1_000_000 && shape != "div" {
                // The test above converts every shape a million levels deep, and the CLI's
                // test fetches the deepest pages a download holds through the binary; here
                // one such page is enough to show the whole way holds (the rest only add
                // half a minute to every CI run).
                continue;
            }
            let started = Instant::now();
            let url = format!("http://127.0.0.1:{port}/{shape}/{depth}");
            let result = call(&registry, json!({"url": url, "max_length": 100_000_000})).await;
            let took = started.elapsed();
            assert!(
                !result.is_error,
                "{shape} x {depth}: {}",
                result.content.chars().take(300).collect::<String>()
            );
            assert_eq!(result.structured_content.unwrap()["byte_limit_reached"], false, "{shape} x {depth}");
            check_nested(shape, depth, &result.content);
            assert!(took < Duration::from_secs(40), "{shape} x {depth}: {took:?}");
        }
    }
}

// The conversion runs off the async threads: while a big page converts, a
// single-threaded runtime still runs its other tasks.
#[tokio::test]
async fn a_page_converting_does_not_stall_the_runtime() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let page = nested("mixed", 1_000_000);
    let port =
        serve(Arc::new(move |_: &str, _| reply("200 OK", &[("Content-Type", "text/html")], page.as_bytes())))
            .await;
    let registry = registry_with(local().max_bytes(64 * 1024 * 1024));
    let longest_gap = Arc::new(AtomicU64::new(0));
    let gap = longest_gap.clone();
    let ticker = tokio::spawn(async move {
        loop {
            let before = Instant::now();
            tokio::time::sleep(Duration::from_millis(5)).await;
            gap.fetch_max(before.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
    });
    let started = Instant::now();
    let result =
        call(&registry, json!({"url": format!("http://127.0.0.1:{port}/"), "max_length": 100})).await;
    let took = started.elapsed();
    ticker.abort();
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("[nested too deeply: "), "{}", result.content);
    let longest = Duration::from_millis(longest_gap.load(Ordering::Relaxed));
    assert!(took > Duration::from_millis(500), "the page converted too fast to tell: {took:?}");
    assert!(longest < took / 3, "the runtime stalled for {longest:?} of the {took:?} call");
}

// fetch_url's own timeout ends the call even while a conversion is still running.
#[tokio::test]
async fn the_timeout_ends_the_call_during_a_conversion() {
    let page = nested("reopened", 1_000_000);
    let port =
        serve(Arc::new(move |_: &str, _| reply("200 OK", &[("Content-Type", "text/html")], page.as_bytes())))
            .await;
    let registry = ToolRegistry::new();
    let fetch = local().max_bytes(64 * 1024 * 1024);
    registry.register_tool_with(fetch, ToolOptions::new().timeout_seconds(0.3)).unwrap();
    let started = Instant::now();
    let result = call(&registry, json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    assert!(result.is_error, "{}", result.content);
    assert!(result.content.contains("timed out"), "{}", result.content);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

// Normal pages (the test site's and the benchmark's, shallow markup of every kind)
// convert exactly as before the depth bound.
#[test]
fn normal_pages_convert_exactly_as_before() {
    let mut pages = vec![PAGE.to_owned()];
    pages.push(
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table><pre><code>x &lt; y</code></pre>\
         <ol><li>one<li>two<ul><li>nested</ul></ol><blockquote><p>quoted <em>em</em> <strong>strong</strong></p></blockquote>\
         <p>unclosed <b>bold <i>both</b> italic</i> <a href=\"/x\">link</a><img src=\"i.png\" alt=\"pic\"><br>after"
            .to_owned(),
    );
    pages.push("<select><option>a</option><option selected>b</option></select><p>x</p>".repeat(50));
    pages.push("<b>a</b><b>b</b><span>c</span><span>d</span><em>e</em><i>f</i>".repeat(50));
    pages.push(format!("{}{}", "<div><section><span>".repeat(60), "text"));
    for html in &pages {
        assert_eq!(harnessx_builtin::web::html_to_markdown(html), unbounded_markdown(html), "{html}");
    }
}
