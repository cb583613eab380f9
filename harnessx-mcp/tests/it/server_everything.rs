//! The tools of `@modelcontextprotocol/server-everything` (from the npm registry, installed
//! by the test into a cache folder) registered in a registry and called through it.

use harnessx_core::{
    PermissionLevel, PermissionManager, ReplayPolicy, ToolAnnotations, ToolCall, ToolRegistry,
};
use harnessx_mcp::{MCP_TIMEOUT_SECONDS, McpError, McpOptions, McpServer, register_mcp};
use harnessx_test_support::npm::{ensure_npm_package, installed_file};

const PACKAGE: &str = "@modelcontextprotocol/server-everything";
const VERSION: &str = "2026.8.31";

/// The server as `node dist/index.js stdio` (not through `npx`, whose `node` child
/// would outlive a killed `npx`). `None` when npm is missing.
fn everything() -> Option<McpServer> {
    let prefix = ensure_npm_package(PACKAGE, VERSION)?;
    let script = installed_file(&prefix, "@modelcontextprotocol/server-everything/dist/index.js")
        .expect("the package has dist/index.js");
    Some(McpServer::stdio(
        "node",
        [script.display().to_string(), "stdio".into()],
        Vec::<(String, String)>::new(),
    ))
}

fn call(name: &str, args: &str) -> ToolCall {
    ToolCall::new("c1", name, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_tools_are_registered_with_their_annotations_and_run_through_the_pipeline() {
    let Some(server) = tokio::task::spawn_blocking(everything).await.unwrap() else { return };
    let registry = ToolRegistry::new();
    let options = McpOptions {
        prefix: Some("ev_".into()),
        exclude: vec!["toggle-simulated-logging".into()],
        ..McpOptions::default()
    };
    let connection = register_mcp(&registry, server, options).await.unwrap();
    let names = connection.tool_names();
    assert!(names.contains(&"ev_echo".to_owned()), "{names:?}");
    assert!(!names.contains(&"ev_toggle-simulated-logging".to_owned()), "excluded: {names:?}");

    // echo claims read-only, not destructive, idempotent, closed world: an untrusted
    // server's word for all of that is not taken.
    let echo = registry.get_tool("ev_echo").unwrap();
    assert_eq!(echo.annotations, ToolAnnotations::new(), "no relaxing hint kept");
    assert!(echo.annotations.may_modify(), "so a CLI run asks");
    assert!(!echo.concurrent, "runs alone");
    assert_eq!(echo.replay_policy, ReplayPolicy::Manual, "never re-run or retried");
    assert_eq!(echo.timeout_seconds, Some(MCP_TIMEOUT_SECONDS));
    assert_eq!(echo.permission, None, "follows the manager");
    assert_eq!(echo.input_schema["type"], "object");
    // toggle claims not read-only and not idempotent: careful hints, kept.
    let toggle = registry.get_tool("ev_toggle-subscriber-updates").unwrap();
    assert_eq!((toggle.annotations.read_only, toggle.annotations.idempotent), (Some(false), Some(false)));
    assert_eq!(toggle.annotations.destructive, None, "destructiveHint: false relaxes, not kept");
    assert_eq!(toggle.replay_policy, ReplayPolicy::Manual, "not idempotent");
    assert!(!toggle.concurrent);

    // The same server trusted: its hints are acted on.
    let trusting = McpOptions {
        prefix: Some("tr_".into()),
        include: Some(vec!["echo".into(), "toggle-subscriber-updates".into()]),
        trust_hints: true,
        ..McpOptions::default()
    };
    let server = tokio::task::spawn_blocking(everything).await.unwrap().unwrap();
    let trusted = register_mcp(&registry, server, trusting).await.unwrap();
    let echo = registry.get_tool("tr_echo").unwrap();
    assert_eq!(
        echo.annotations,
        ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false)
    );
    assert!(echo.concurrent, "read-only tools run concurrently");
    assert_eq!(echo.replay_policy, ReplayPolicy::Idempotent);
    let toggle = registry.get_tool("tr_toggle-subscriber-updates").unwrap();
    assert_eq!(toggle.replay_policy, ReplayPolicy::Manual, "not idempotent");
    assert!(!toggle.concurrent);
    trusted.close().await;

    let r = registry.execute(&call("ev_echo", r#"{"message": "hi"}"#), None).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.content, "Echo: hi");

    let r = registry.execute(&call("ev_get-sum", r#"{"a": 2, "b": 3}"#), None).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.content.contains('5'), "{r:?}");

    // Our own validation refuses what the schema forbids, before the server sees it.
    let r = registry.execute(&call("ev_get-sum", r#"{"a": "x", "b": 3}"#), None).await;
    assert!(r.is_error, "{r:?}");

    // Structured content is kept; an image passes through as an image part, with a line
    // naming it in the text.
    let r = registry.execute(&call("ev_get-structured-content", r#"{"location": "Chicago"}"#), None).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.structured_content.is_some(), "{r:?}");
    let r = registry.execute(&call("ev_get-tiny-image", "{}"), None).await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.content.contains("[image: image/png, "), "{}", r.content);
    let [image] = &r.parts[..] else { panic!("one image part: {:?}", r.parts) };
    assert_eq!(image.media_type(), Some("image/png"));
    let bytes = image.blob().and_then(harnessx_core::Blob::as_bytes).expect("bytes");
    assert_eq!(harnessx_core::content::sniff(bytes), Some("image/png"), "decoded once, from base64");
    assert!(r.content.contains(&format!("{} bytes]", bytes.len())), "{}", r.content);

    // The server's own error (`isError: true`) is an error result with its text.
    let r = registry
        .execute(&call("ev_get-resource-reference", r#"{"resourceType": "Text", "resourceId": -1}"#), None)
        .await;
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.content, "Invalid resourceId: -1. Must be a finite positive integer.");
    // An embedded text resource is kept, with its URI.
    let r = registry
        .execute(&call("ev_get-resource-reference", r#"{"resourceType": "Text", "resourceId": 3}"#), None)
        .await;
    assert!(!r.is_error && r.content.contains("[resource demo://resource/dynamic/text/3]"), "{r:?}");
    // An embedded blob resource passes through as a file part, named by its URI.
    let r = registry
        .execute(&call("ev_get-resource-reference", r#"{"resourceType": "Blob", "resourceId": 4}"#), None)
        .await;
    assert!(
        !r.is_error && r.content.contains("[resource demo://resource/dynamic/blob/4: text/plain, "),
        "{r:?}"
    );
    let [harnessx_core::Part::File { media_type, name, data }] = &r.parts[..] else {
        panic!("{:?}", r.parts)
    };
    assert_eq!((media_type.as_str(), name.as_deref()), ("text/plain", Some("4")));
    let text = String::from_utf8_lossy(data.as_bytes().expect("bytes"));
    assert!(text.starts_with("Resource 4: This is a base64 blob"), "{text}");
    // A long-running operation (the server reports progress as it goes) completes.
    let r = registry
        .execute(&call("ev_trigger-long-running-operation", r#"{"duration": 1, "steps": 2}"#), None)
        .await;
    assert_eq!(r.content, "Long running operation completed. Duration: 1 seconds, Steps: 2.", "{r:?}");

    // The permission manager holds for MCP tools as for any other.
    let deny = PermissionManager::new(PermissionLevel::Allow);
    deny.set_override("ev_echo", PermissionLevel::Deny);
    let r = registry.execute(&call("ev_echo", r#"{"message": "hi"}"#), Some(&deny)).await;
    assert!(r.is_error && r.content == "Permission denied", "{r:?}");

    // A second server whose names clash: the usual duplicate-name error, and nothing of
    // it registered.
    let again = tokio::task::spawn_blocking(everything).await.unwrap().unwrap();
    let before = registry.len();
    let clash = McpOptions { prefix: Some("ev_".into()), ..McpOptions::default() };
    let err = register_mcp(&registry, again, clash).await.map(|_| ()).unwrap_err();
    assert!(matches!(&err, McpError::Clash { name, .. } if name.starts_with("ev_")), "{err}");
    assert!(err.to_string().starts_with("the MCP server `node "), "names the server: {err}");
    assert_eq!(registry.len(), before);
    connection.close().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_one_line_error() {
    let server = McpServer::stdio("/nonexistent/mcp-server", ["--flag"], Vec::<(String, String)>::new());
    let err = register_mcp(&ToolRegistry::new(), server, McpOptions::default()).await.unwrap_err();
    assert!(
        err.to_string().starts_with("could not start the MCP server `/nonexistent/mcp-server --flag`: "),
        "{err}"
    );
    let server = McpServer::stdio("sh", ["-c", "exit 3"], Vec::<(String, String)>::new());
    let err = register_mcp(&ToolRegistry::new(), server, McpOptions::default()).await.unwrap_err();
    assert!(err.to_string().starts_with("the MCP server `sh -c exit 3` did not initialize: "), "{err}");
}

fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_gives_an_error_result_and_the_next_call_restarts_it() {
    let Some(server) = tokio::task::spawn_blocking(everything).await.unwrap() else { return };
    let registry = ToolRegistry::new();
    let options = McpOptions {
        include: Some(vec!["echo".into(), "trigger-long-running-operation".into()]),
        ..McpOptions::default()
    };
    let connection = register_mcp(&registry, server, options).await.unwrap();
    assert_eq!(connection.tool_names(), ["echo", "trigger-long-running-operation"]);
    let pid = connection.pid().await.expect("running");

    let slow = {
        let registry = registry.clone();
        tokio::spawn(async move {
            registry
                .execute(&call("trigger-long-running-operation", r#"{"duration": 30, "steps": 3}"#), None)
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    let r = slow.await.unwrap();
    assert!(r.is_error, "{r:?}");
    assert!(
        r.content.contains("stopped during trigger-long-running-operation; it is restarted on the next call"),
        "{}",
        r.content
    );

    // The next call starts it again.
    let r = registry.execute(&call("echo", r#"{"message": "again"}"#), None).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.content, "Echo: again");
    let restarted = connection.pid().await.expect("running again");
    assert_ne!(restarted, pid);

    // Closed: the process is gone and the tools say so.
    connection.close().await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(restarted) {
        assert!(std::time::Instant::now() < deadline, "the server outlived close()");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let r = registry.execute(&call("echo", r#"{"message": "x"}"#), None).await;
    assert!(r.is_error && r.content.ends_with("is closed"), "{r:?}");
}

/// server-everything over streamable HTTP on a free loopback port, stopped when dropped.
struct HttpEverything {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_everything() -> Option<HttpEverything> {
    let prefix = ensure_npm_package(PACKAGE, VERSION)?;
    let script = installed_file(&prefix, "@modelcontextprotocol/server-everything/dist/index.js")
        .expect("the package has dist/index.js");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = std::process::Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node runs");
    let server = HttpEverything { child, url: format!("http://127.0.0.1:{port}/mcp") };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "server-everything did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_s_tools_run_through_the_registry() {
    let Some(server) = tokio::task::spawn_blocking(http_everything).await.unwrap() else { return };
    let registry = ToolRegistry::new();
    let remote = McpServer::http(server.url.as_str(), [("Authorization", "Bearer test-token")]);
    let connection = register_mcp(&registry, remote, McpOptions::default()).await.unwrap();
    assert!(connection.tool_names().contains(&"echo".to_owned()));
    assert_eq!(connection.pid().await, None, "no process of ours");
    let r = registry.execute(&call("echo", r#"{"message": "over http"}"#), None).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.content, "Echo: over http");
    connection.close().await;

    // A header HTTP cannot carry, and a URL where nothing listens: one-line errors.
    let bad = McpServer::http(server.url.as_str(), [("Bad Header", "x")]);
    let err = register_mcp(&registry, bad, McpOptions::default()).await.unwrap_err();
    assert!(
        err.to_string().starts_with(&format!("the MCP server `{}`: header \"Bad Header\": ", server.url)),
        "{err}"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = McpServer::http(format!("http://127.0.0.1:{port}/mcp"), Vec::<(String, String)>::new());
    let err = register_mcp(&registry, dead, McpOptions::default()).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("the MCP server `http://127.0.0.1:{port}/mcp` did not initialize: ")),
        "{err}"
    );
}

/// Spec: no untrusted input recurses without bound, against a hostile server
/// (`fixtures/deep_server.py`, raw JSON-RPC): deep and self-referring input schemas, and
/// structured results nested 1 to 120 levels (deeper, rmcp's parser drops the message and
/// the call waits out its timeout; see the report of the depth work).
mod deep_server {
    use std::time::{Duration, Instant};

    use harnessx_core::{MAX_JSON_DEPTH, ToolCall, ToolRegistry};
    use harnessx_mcp::{McpOptions, McpServer, register_mcp};
    use serde_json::json;

    fn server(schema_depth: usize) -> McpServer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/deep_server.py");
        McpServer::stdio("python3", [script], [("HX_SCHEMA_DEPTH", schema_depth.to_string())])
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deep_results_and_schemas_end_in_a_result_or_a_one_line_error() {
        let registry = ToolRegistry::new();
        // 60 schema levels are 120 JSON levels (an object and its `properties`), the
        // deepest a tools/list answer rmcp can parse may hold.
        let _connection = register_mcp(&registry, server(60), McpOptions::default()).await.unwrap();
        for depth in [1, 10, 100, MAX_JSON_DEPTH + 1, 120] {
            let started = Instant::now();
            let result = registry
                .execute(&ToolCall::from_value("c1", "deep_result", &json!({"depth": depth})), None)
                .await;
            assert!(started.elapsed() < Duration::from_secs(10), "{depth}: {:?}", started.elapsed());
            if depth <= MAX_JSON_DEPTH {
                assert!(!result.is_error, "{depth}: {}", result.content);
                assert_eq!(result.content, "deep");
            } else {
                assert!(result.is_error, "{depth}");
                assert!(result.content.contains("its result is nested too deeply"), "{}", result.content);
                assert_eq!(result.structured_content, None);
            }
        }
        // A 60-deep schema validates and refuses; a self-referring one ends (jsonschema
        // finds the cycle, which consumes nothing and so constrains nothing: both run).
        let mut args = json!(1);
        for _ in 0..60 {
            args = json!({"a": args});
        }
        let result = registry.execute(&ToolCall::from_value("c2", "deep_schema", &args), None).await;
        assert_eq!((result.is_error, result.content.as_str()), (false, "ok"), "{}", result.content);
        let mut wrong = json!("x");
        for _ in 0..60 {
            wrong = json!({"a": wrong});
        }
        let result = registry.execute(&ToolCall::from_value("c3", "deep_schema", &wrong), None).await;
        assert!(result.is_error && result.content.starts_with("invalid arguments for deep_schema: a.a.a."));
        for args in [json!({"a": 1}), json!({"a": "x"})] {
            let started = Instant::now();
            let result = registry.execute(&ToolCall::from_value("c4", "cyclic_schema", &args), None).await;
            assert_eq!((result.is_error, result.content.as_str()), (false, "ok"), "{args}");
            assert!(started.elapsed() < Duration::from_secs(10), "{args}: {:?}", started.elapsed());
        }
    }

    /// A tools/list answer deeper than rmcp's parser takes (a schema 1,000,000 levels
    /// deep): rmcp drops it unread, and registering waited forever before the fix; now it
    /// fails after the listing's 30 s with a line saying why.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tool_list_too_deep_to_parse_fails_registration_instead_of_hanging() {
        let registry = ToolRegistry::new();
        let started = Instant::now();
        let registered = tokio::time::timeout(
            Duration::from_secs(60),
            register_mcp(&registry, server(1_000_000), McpOptions::default()),
        )
        .await
        .expect("register_mcp still waiting after 60 s");
        let Err(err) = registered else { panic!("the listing cannot be read") };
        let err = err.to_string();
        assert!(
            err.contains("could not list its tools: no answer within 30 s")
                && err.contains("nested too deeply"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(45), "{:?}", started.elapsed());
        assert!(registry.tool_names().is_empty());
    }
}

/// With `resources`, the server's resources are two tools: the list (one per line, the
/// URI first), and a resource read by its URI (text as text, a blob as a file part); a
/// URI the server does not have is an error result naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_resources_are_offered_as_two_tools() {
    let Some(server) = tokio::task::spawn_blocking(everything).await.unwrap() else { return };
    let registry = ToolRegistry::new();
    let options = McpOptions {
        include: Some(vec!["echo".into()]),
        resources: Some("ev_".into()),
        ..McpOptions::default()
    };
    let connection = register_mcp(&registry, server, options).await.unwrap();
    let list = registry.get_tool("ev_list_resources").unwrap();
    assert_eq!((list.annotations.read_only, list.replay_policy), (Some(true), ReplayPolicy::Safe));
    let listed = registry.execute(&call("ev_list_resources", "{}"), None).await;
    assert!(!listed.is_error, "{}", listed.content);
    let first = listed.content.lines().next().unwrap();
    assert!(first.starts_with("demo://resource/static/document/"), "{}", listed.content);
    assert!(
        listed.content.contains("features.md (text/markdown): Static document file"),
        "{}",
        listed.content
    );

    let uri = "demo://resource/static/document/features.md";
    let read = registry.execute(&call("ev_read_resource", &format!(r#"{{"uri": "{uri}"}}"#)), None).await;
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.starts_with(&format!("[resource {uri}]\n")), "{}", read.content);
    assert!(read.parts.is_empty());

    let blob = "demo://resource/dynamic/blob/7";
    let read = registry.execute(&call("ev_read_resource", &format!(r#"{{"uri": "{blob}"}}"#)), None).await;
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.starts_with(&format!("[resource {blob}: text/plain, ")), "{}", read.content);
    assert_eq!(read.parts.len(), 1);
    assert_eq!(read.parts[0].media_type(), Some("text/plain"));

    let missing =
        registry.execute(&call("ev_read_resource", r#"{"uri": "demo://nothing/here"}"#), None).await;
    assert!(missing.is_error);
    assert!(
        missing.content.contains("could not read the resource demo://nothing/here"),
        "{}",
        missing.content
    );
    let bad = registry.execute(&call("ev_read_resource", "{}"), None).await;
    assert!(bad.is_error && bad.content.contains("uri"), "{}", bad.content);
    connection.close().await;
}

/// A server's log messages (`notifications/message`) become `tracing` events with the
/// server's name: server-everything sends one at once when its simulated logging starts.
#[test]
fn its_log_messages_go_to_tracing() {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt as _;

    /// Keeps the messages of `harnessx_mcp::server_log` events.
    struct Logs(Arc<Mutex<Vec<String>>>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logs {
        fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            if event.metadata().target() != "harnessx_mcp::server_log" {
                return;
            }
            struct Fields(String);
            impl tracing::field::Visit for Fields {
                fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                    self.0.push_str(&format!("{}={value:?} ", field.name()));
                }
                fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                    self.0.push_str(&format!("{}={value} ", field.name()));
                }
            }
            let mut fields = Fields(String::new());
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
    }

    let Some(server) = everything() else { return };
    let logs = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Logs(logs.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    // On this thread only: the connection's tasks run here too.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let registry = ToolRegistry::new();
        let options =
            McpOptions { include: Some(vec!["toggle-simulated-logging".into()]), ..McpOptions::default() };
        let connection = register_mcp(&registry, server, options).await.unwrap();
        let started = registry.execute(&call("toggle-simulated-logging", "{}"), None).await;
        assert!(!started.is_error, "{}", started.content);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while logs.lock().unwrap().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        connection.close().await;
    });
    let logs = logs.lock().unwrap();
    let first = logs.first().expect("a log message reached tracing");
    assert!(first.contains("server=node "), "{first}");
    assert!(first.contains("message="), "{first}");
}

/// A server's question mid-call goes to the `elicit` callback: an answer is checked
/// against the requested schema and sent; a decline and a cancel are sent as such; with
/// no callback the question is declined at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn its_questions_mid_call_go_to_the_elicit_callback() {
    use harnessx_mcp::{ElicitAnswer, Elicitor};
    use serde_json::json;
    let Some(script) = tokio::task::spawn_blocking(everything).await.unwrap() else { return };
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let answers = std::sync::Arc::new(std::sync::Mutex::new(vec![
        ElicitAnswer::Accept(json!({"name": "Ada", "check": true, "integer": 7})),
        ElicitAnswer::Decline,
        ElicitAnswer::Cancel,
        ElicitAnswer::Accept(json!({"name": "Ada", "integer": 500})),
    ]));
    let (seen, next) = (asked.clone(), answers.clone());
    let elicit = Elicitor::new(move |question| {
        seen.lock().unwrap().push(question);
        let answer = next.lock().unwrap().remove(0);
        async move { answer }
    });
    let registry = ToolRegistry::new();
    let options = McpOptions {
        include: Some(vec!["trigger-elicitation-request".into()]),
        elicit: Some(elicit),
        ..McpOptions::default()
    };
    let connection = register_mcp(&registry, script.clone(), options).await.unwrap();
    let question = call("trigger-elicitation-request", "{}");
    let ask = || registry.execute(&question, None);
    let accepted = ask().await;
    assert!(!accepted.is_error, "{}", accepted.content);
    assert!(
        accepted.content.contains("- Name: Ada") && accepted.content.contains("- Favorite Integer: 7"),
        "{}",
        accepted.content
    );
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked[0].message, "Please provide inputs for the following fields:");
        assert_eq!(asked[0].schema["required"], json!(["name"]));
    }
    let declined = ask().await;
    assert!(declined.content.contains("User declined"), "{}", declined.content);
    let cancelled = ask().await;
    assert!(cancelled.content.contains("User cancelled"), "{}", cancelled.content);
    // An answer the schema refuses is not sent: the server's call fails, naming the field.
    let refused = ask().await;
    assert!(refused.is_error, "{}", refused.content);
    assert!(refused.content.contains("integer"), "{}", refused.content);
    connection.close().await;

    // Nobody to ask: declined at once.
    let registry = ToolRegistry::new();
    let options =
        McpOptions { include: Some(vec!["trigger-elicitation-request".into()]), ..McpOptions::default() };
    let connection = register_mcp(&registry, script, options).await.unwrap();
    let started = std::time::Instant::now();
    let declined = registry.execute(&call("trigger-elicitation-request", "{}"), None).await;
    assert!(declined.content.contains("User declined"), "{}", declined.content);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    connection.close().await;
}

/// A hostile question: a schema whose JSON nests over 100 levels (50 objects; MCP's form
/// is an object of primitive fields). The server's request is refused at once with one
/// line, nobody is asked, and the connection goes on. (A request nested past
/// serde_json's 128 levels is dropped unread by rmcp's decoder, as any message is: the
/// server's own timeout ends its wait; the client never parses it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_with_a_schema_100_levels_deep_is_refused() {
    use harnessx_mcp::{ElicitAnswer, Elicitor};
    let found = tokio::task::spawn_blocking(|| ensure_npm_package("@modelcontextprotocol/sdk", "1.32.2"));
    let Some(prefix) = found.await.unwrap() else { return };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/deep_elicitation.mjs");
    let node_path = prefix.join("node_modules").display().to_string();
    let server = McpServer::stdio("node", [script.to_owned()], [("NODE_PATH".to_owned(), node_path)]);
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = asked.clone();
    let elicit = Elicitor::new(move |_| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { ElicitAnswer::Accept(serde_json::json!({})) }
    });
    let registry = ToolRegistry::new();
    let options = McpOptions { elicit: Some(elicit), ..McpOptions::default() };
    let connection = register_mcp(&registry, server, options).await.unwrap();
    for _ in 0..2 {
        let result = registry.execute(&call("ask_deep", "{}"), None).await;
        assert!(result.is_error, "{}", result.content);
        assert!(result.content.starts_with("the question failed: "), "{}", result.content);
        assert!(!result.content.contains("timed out"), "answered at once: {}", result.content);
        assert!(!result.content.contains('\n'), "{}", result.content);
    }
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0, "never put to a person");
    connection.close().await;
}
