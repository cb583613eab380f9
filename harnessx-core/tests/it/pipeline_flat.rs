//! Flat input schemas (an object of scalar arguments) are checked straight from the
//! argument text and decoded from it, without a `serde_json::Value`. That is a shortcut
//! only: whatever the text, a call must end exactly as on the general path (parse, schema
//! check, decode). These tests run the same typed handler behind a flat schema and behind
//! the same schema made non-flat (a `$comment`), on many texts, and compare.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx_core::__private::{Plain, context, or_default, required, shared, sync5};
use harnessx_core::{
    ApprovalDecision, PermissionLevel, PermissionManager, RunContext, ToolCall, ToolHandler, ToolOptions,
    ToolRegistry, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Args {
    n: u8,
    s: String,
    f: Option<f64>,
    t: bool,
}

fn schema(flat: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 0, "description": "A small number."},
            "s": {"type": "string"},
            "f": {"type": ["number", "null"]},
            "t": {"type": "boolean"}
        },
        "required": ["n", "s", "t"],
        "additionalProperties": false
    });
    if !flat {
        schema["$comment"] = json!("not flat: takes the general path");
    }
    schema
}

fn show(Args { n, s, f, t }: Args) -> String {
    format!("{n}|{s}|{f:?}|{t}")
}

/// What a `#[tool] fn` with these parameters registers (the context last, as `""`).
fn as_a_tool_fn(n: u8, s: String, f: Option<f64>, t: bool, ctx: harnessx_core::ToolContext) -> String {
    assert_eq!(ctx.tool_name(), "t");
    show(Args { n, s, f, t })
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Async,
    Blocking,
    /// The shared handler `#[tool]` generates for a sync function.
    ToolFn,
}

/// One registry with the tool `t` of that kind, behind a flat schema or not; the counter
/// counts runs (not kept for `ToolFn`, whose handler is a plain `fn`).
fn registry(flat: bool, kind: Kind) -> (ToolRegistry, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let handler = match kind {
        Kind::Blocking => ToolHandler::typed_blocking(move |args: Args| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(show(args))
        }),
        Kind::Async => ToolHandler::typed_async(move |args: Args| {
            counter.fetch_add(1, Ordering::SeqCst);
            let shown = show(args);
            async move { Ok::<_, String>(shown) }
        }),
        Kind::ToolFn => shared(
            const {
                &sync5::<_, _, _, _, _, _, Plain>(
                    &["n", "s", "f", "t", ""],
                    as_a_tool_fn,
                    required(),
                    required(),
                    or_default(),
                    required(),
                    context(),
                )
            },
        ),
    };
    let registry = ToolRegistry::new();
    registry.register_with_schema("t", "A tool.", schema(flat), handler, ToolOptions::new()).unwrap();
    (registry, runs)
}

fn texts() -> Vec<String> {
    let bases = [
        r#"{"n": 7, "s": "hi", "f": 1.5, "t": true}"#,
        r#"{"t":false,"s":"a\"b\\c\u00e9","n":0}"#,
        r#" { "n" : 255 , "s" : "" , "f" : null , "t" : true } "#,
    ];
    let mut texts: Vec<String> = bases.iter().map(|s| s.to_string()).collect();
    texts.extend(
        [
            r#"{"n": 256, "s": "x", "t": true}"#,
            r#"{"n": -1, "s": "x", "t": true}"#,
            r#"{"n": 7.0, "s": "x", "t": true}"#,
            r#"{"n": -0, "s": "x", "t": true}"#,
            r#"{"n": 0, "s": "x", "t": true, "f": -0}"#,
            r#"{"n": 0, "s": "x", "t": true, "f": 12345678901234567890}"#,
            r#"{"n": 1e2, "s": "x", "t": true}"#,
            r#"{"n": 99999999999999999999, "s": "x", "t": true}"#,
            r#"{"n": 7, "s": "x", "t": true, "n": 8}"#,
            r#"{"n": 7, "s": "x", "t": true, "extra": 1}"#,
            r#"{"n": 7, "s": 5, "t": true}"#,
            r#"{"n": 7, "s": "x", "t": "true"}"#,
            r#"{"n": 7, "s": "x"}"#,
            r#"{"n": 7, "s": "x", "t": null}"#,
            r#"{"n": 7, "s": ["x"], "t": true}"#,
            r#"{"n": 7, "s": "x", "t": true} trailing"#,
            r#"{"n": 7, "s": "x", "t": true"#,
            r#"{"\u006e": 7, "s": "x", "t": true}"#,
            r#"{"n": 7, "s": "\ud800", "t": true}"#,
            "",
            "null",
            "{}",
            "[1]",
        ]
        .map(String::from),
    );
    // Every base with one byte dropped, doubled, or replaced by one of JSON's own.
    for base in bases {
        let bytes = base.as_bytes();
        for i in 0..bytes.len() {
            let mut variants =
                vec![[&bytes[..i], &bytes[i + 1..]].concat(), [&bytes[..=i], &bytes[i..]].concat()];
            for &c in b"{}\",:-.e09tn \\" {
                variants.push([&bytes[..i], &[c][..], &bytes[i + 1..]].concat());
            }
            texts.extend(variants.into_iter().filter_map(|v| String::from_utf8(v).ok()));
        }
    }
    texts
}

fn same(a: &ToolResult, b: &ToolResult) -> bool {
    a.content == b.content && a.is_error == b.is_error && a.structured_content == b.structured_content
}

#[tokio::test]
async fn a_flat_schema_ends_every_call_as_the_general_path_does() {
    for kind in [Kind::Async, Kind::Blocking, Kind::ToolFn] {
        let (flat, flat_runs) = registry(true, kind);
        let (general, general_runs) = registry(false, kind);
        let texts = texts();
        let mut ran = 0;
        for (i, text) in texts.iter().enumerate() {
            let call = ToolCall::new(format!("c{i}"), "t", text.as_str());
            let a = flat.execute(&call, None).await;
            let b = general.execute(&call, None).await;
            assert!(same(&a, &b), "{kind:?}, {text:?}:\nflat    {a:?}\ngeneral {b:?}");
            ran += usize::from(!a.is_error);
            assert_eq!(flat_runs.load(Ordering::SeqCst), general_runs.load(Ordering::SeqCst), "{text:?}");
        }
        assert!(ran > 50 && ran < texts.len() - 50, "{ran} of {} ran", texts.len());
        // A value the schema lets through and the Rust type refuses: the decoder's line.
        let call = ToolCall::new("c", "t", r#"{"n": 300, "s": "x", "t": true}"#);
        assert_eq!(
            flat.execute(&call, None).await.content,
            "invalid arguments for t: n: invalid value: integer `300`, expected u8"
        );
    }
}

#[tokio::test]
async fn rules_questions_and_edits_see_the_arguments_of_a_flat_call() {
    let (registry, runs) = registry(true, Kind::Async);
    let text = r#"{"n": 7, "s": "secret", "t": true}"#;

    // A rule on an argument.
    let manager = PermissionManager::new(PermissionLevel::Allow);
    manager.add_rule(PermissionLevel::Deny, "t(s=secret)").unwrap();
    let result = registry.execute(&ToolCall::new("c1", "t", text), Some(&manager)).await;
    assert!(result.is_error && result.content.contains("denied"), "{result:?}");
    let other = registry
        .execute(&ToolCall::new("c2", "t", r#"{"n": 7, "s": "public", "t": true}"#), Some(&manager))
        .await;
    assert_eq!(other.content, "7|public|None|true");

    // A question: the person sees the arguments, and edits them.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let manager = PermissionManager::new(PermissionLevel::Ask).with_approval_fn(move |request| {
        log.lock().unwrap().push(request.arguments.clone());
        async move {
            ApprovalDecision::ApproveEdited {
                arguments: json!({"n": 9, "s": "edited", "t": false}),
                for_session: false,
            }
        }
    });
    let ctx = RunContext::new().with_permissions(manager);
    let result = registry.execute_in(&ToolCall::new("c3", "t", text), &ctx).await;
    assert_eq!(*seen.lock().unwrap(), vec![json!({"n": 7, "s": "secret", "t": true})]);
    assert!(result.content.ends_with("9|edited|None|false"), "{result:?}");
    assert!(result.content.starts_with("[The user changed"), "{result:?}");

    // A DENY by name, and an ASK with nobody to answer: neither runs.
    let before = runs.load(Ordering::SeqCst);
    let manager = PermissionManager::new(PermissionLevel::Deny);
    assert!(registry.execute(&ToolCall::new("c4", "t", text), Some(&manager)).await.is_error);
    let manager = PermissionManager::new(PermissionLevel::Ask);
    assert!(registry.execute(&ToolCall::new("c5", "t", text), Some(&manager)).await.is_error);
    // A session grant answers the ASK by name.
    manager.grant_session("t");
    assert!(!registry.execute(&ToolCall::new("c6", "t", text), Some(&manager)).await.is_error);
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

/// A handler of one's own can take checked text too: `call_json` gets the text and the
/// call (borrowed), and answers `None` to be called with the value instead.
#[tokio::test]
async fn a_handler_of_ones_own_takes_the_text_or_the_value() {
    use harnessx_core::{AsyncToolHandler, BoxFuture, CallInfo, HandlerResult, ToolContext, ToolOutput};

    #[derive(Default)]
    struct Echo {
        texts: AtomicUsize,
        values: AtomicUsize,
    }

    impl AsyncToolHandler for Echo {
        fn call(&self, args: Value, ctx: ToolContext) -> BoxFuture<HandlerResult> {
            self.values.fetch_add(1, Ordering::SeqCst);
            let text = format!("{} {}: {}", ctx.tool_name(), ctx.call_id(), args["s"]);
            Box::pin(async move { Ok(ToolOutput::text(text)) })
        }

        fn takes_json(&self) -> bool {
            true
        }

        fn call_json(&self, args: &str, call: CallInfo<'_>) -> Option<BoxFuture<HandlerResult>> {
            let s: String = serde_json::from_str::<Value>(args).ok()?["s"].as_str()?.to_owned();
            if s == "refuse" {
                return None;
            }
            self.texts.fetch_add(1, Ordering::SeqCst);
            assert_eq!(call.to_context().call_id(), call.call_id());
            let text = format!("{} {}: \"{s}\"", call.tool_name(), call.call_id());
            Some(Box::pin(async move { Ok(ToolOutput::text(text)) }))
        }
    }

    let echo = Arc::new(Echo::default());
    let registry = ToolRegistry::new();
    let schema = json!({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]});
    let handler = ToolHandler::Async(echo.clone());
    registry.register_with_schema("echo", "Echo.", schema, handler, ToolOptions::new()).unwrap();
    let run = |id: &str, args: &str| ToolCall::new(id, "echo", args);
    assert_eq!(registry.execute(&run("c1", r#"{"s": "hi"}"#), None).await.content, r#"echo c1: "hi""#);
    // An escaped key is checked by serde_json's reading, and still passed as text.
    assert_eq!(registry.execute(&run("c2", r#"{"\u0073": "hi"}"#), None).await.content, r#"echo c2: "hi""#);
    // A repeated key is left to the general path: the value.
    assert_eq!(
        registry.execute(&run("c4", r#"{"s": "a", "s": "b"}"#), None).await.content,
        r#"echo c4: "b""#
    );
    // Refused by `call_json`: called with the value.
    assert_eq!(
        registry.execute(&run("c3", r#"{"s": "refuse"}"#), None).await.content,
        r#"echo c3: "refuse""#
    );
    assert_eq!((echo.texts.load(Ordering::SeqCst), echo.values.load(Ordering::SeqCst)), (2, 2));
}
