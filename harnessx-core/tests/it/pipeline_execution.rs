//! Running a call: timeouts in a direct run, sync handlers off the async runtime, panics,
//! retries (spec tools.md "Retry a tool", "Timeouts in a direct run") and "Calling a
//! function versus executing an agent tool".

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use harnessx_core::{
    MAX_JSON_DEPTH, PERMISSION_DENIED, Parts, PermissionLevel, ReplayPolicy, RunContext, ToolCall, ToolError,
    ToolHandler, ToolOptions, ToolOutput, ToolRegistry, ToolRetry, TransientToolError,
};
use serde_json::json;

fn assert_timeout_text(content: &str) {
    for phrase in ["timed out", "may have partly run", "effects", "before calling it again"] {
        assert!(content.contains(phrase), "{phrase:?} missing from {content:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_async_timeout_is_an_error_result_and_the_run_goes_on() {
    let registry = ToolRegistry::new();
    let finished = Counter::new();
    let f = finished.clone();
    registry
        .register_with_schema(
            "charge_card",
            "Charge.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                let f = f.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    f.hit();
                    Ok("charged".into())
                }
            }),
            ToolOptions::new().timeout_seconds(2.0),
        )
        .unwrap();
    let ok = register_counting(&registry, "status", ToolOptions::new());

    let result = registry.execute(&call("c1", "charge_card", "{}"), None).await;
    assert!(result.is_error);
    assert_eq!(result.call_id, "c1");
    assert_timeout_text(&result.content);
    assert!(result.content.contains("charge_card"), "{}", result.content);

    // The run goes on: the next calls, in a batch with another timeout, still work.
    let run = RunContext::new();
    let results =
        registry.execute_batch(&[call("c2", "charge_card", "{}"), call("c3", "status", "{}")], &run).await;
    assert_timeout_text(&results[0].content);
    assert_eq!(results[1].content, "ran status");
    assert_eq!(ok.get(), 1);
    assert_eq!(finished.get(), 0, "a timed-out async handler is stopped");
}

#[tokio::test]
async fn a_sync_timeout_stops_waiting_for_the_handler() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "slow_sync",
            "Blocks.",
            empty_schema(),
            ToolHandler::from_blocking(|_args, _ctx| {
                std::thread::sleep(Duration::from_millis(200));
                Ok("done".into())
            }),
            ToolOptions::new().timeout_seconds(0.03),
        )
        .unwrap();
    let started = std::time::Instant::now();
    let result = registry.execute(&call("c1", "slow_sync", "{}"), None).await;
    assert!(started.elapsed() < Duration::from_millis(150), "{:?}", started.elapsed());
    assert!(result.is_error);
    assert_timeout_text(&result.content);
}

#[tokio::test(flavor = "current_thread")]
async fn a_blocking_sync_handler_does_not_stall_a_concurrent_async_tool() {
    // The sync tool blocks its thread until the async tool has run. On a single-threaded
    // runtime that can only happen if the sync handler runs off the runtime.
    let registry = ToolRegistry::new();
    let (tx, rx) = mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    registry
        .register_with_schema(
            "wait_sync",
            "Waits for a signal.",
            empty_schema(),
            ToolHandler::from_blocking(move |_args, _ctx| {
                match rx.lock().unwrap().recv_timeout(Duration::from_secs(2)) {
                    Ok(()) => Ok("signalled".into()),
                    Err(_) => Err(ToolError::new("the async tool never ran: the runtime was blocked")),
                }
            }),
            ToolOptions::new(),
        )
        .unwrap();
    let tx = std::sync::Mutex::new(tx);
    registry
        .register_with_schema(
            "signal",
            "Sends the signal.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                let sent = tx.lock().unwrap().send(());
                async move {
                    tokio::task::yield_now().await;
                    sent.map(|()| "sent".into()).map_err(|e| ToolError::new(e.to_string()))
                }
            }),
            ToolOptions::new(),
        )
        .unwrap();
    let results = registry
        .execute_batch(&[call("c1", "wait_sync", "{}"), call("c2", "signal", "{}")], &RunContext::new())
        .await;
    assert_eq!(results[0].content, "signalled", "{:?}", results[0]);
    assert_eq!(results[1].content, "sent");
}

#[tokio::test(flavor = "current_thread")]
async fn sync_handlers_run_outside_the_runtime_thread() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "where",
            "Reports its thread.",
            empty_schema(),
            ToolHandler::from_blocking(|_args, _ctx| Ok(format!("{:?}", std::thread::current().id()).into())),
            ToolOptions::new(),
        )
        .unwrap();
    let result = registry.execute(&call("c1", "where", "{}"), None).await;
    assert_ne!(result.content, format!("{:?}", std::thread::current().id()));
}

const SECRET: &str = "secret-token-0xdeadbeef at /home/alice/.ssh/id_rsa";

#[tokio::test]
async fn a_panicking_handler_becomes_an_error_result_and_the_other_calls_live_on() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "panic_sync",
            "Panics.",
            empty_schema(),
            ToolHandler::from_blocking(|_args, _ctx| panic!("{SECRET}")),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "panic_async",
            "Panics.",
            empty_schema(),
            ToolHandler::from_async(|_args, _ctx| async move {
                tokio::task::yield_now().await;
                panic!("{SECRET}")
            }),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "panic_any",
            "Panics with a non-string payload.",
            empty_schema(),
            ToolHandler::from_blocking(|_args, _ctx| std::panic::panic_any(42_u8)),
            ToolOptions::new(),
        )
        .unwrap();
    let ok = register_counting(&registry, "fine", ToolOptions::new());
    let calls = [
        call("c1", "panic_sync", "{}"),
        call("c2", "fine", "{}"),
        call("c3", "panic_async", "{}"),
        call("c4", "panic_any", "{}"),
        call("c5", "fine", "{}"),
    ];
    let results = registry.execute_batch(&calls, &RunContext::new()).await;
    for i in [0, 2, 3] {
        let r = &results[i];
        assert!(r.is_error, "{r:?}");
        assert_eq!(r.call_id, calls[i].id);
        for leak in ["secret", "deadbeef", "/home/", "id_rsa", "panicked", "42"] {
            assert!(!r.content.contains(leak), "{leak:?} leaked to the model: {:?}", r.content);
        }
    }
    assert_eq!((results[1].content.as_str(), results[4].content.as_str()), ("ran fine", "ran fine"));
    assert_eq!(ok.get(), 2);

    // The registry and the process live on.
    for name in ["panic_sync", "panic_async"] {
        assert!(registry.execute(&call("c6", name, "{}"), None).await.is_error);
    }
    assert_eq!(registry.execute(&call("c7", "fine", "{}"), None).await.content, "ran fine");
}

/// Registers `job`, which fails transiently `failures` times and then answers "done";
/// returns its attempt counter.
fn register_transient(registry: &ToolRegistry, failures: usize, options: ToolOptions) -> Counter {
    let counter = Counter::new();
    let c = counter.clone();
    registry
        .register_with_schema(
            "job",
            "A job.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                let n = c.hit();
                async move {
                    if n <= failures {
                        Err(TransientToolError::new("backend busy").into())
                    } else {
                        Ok("done".into())
                    }
                }
            }),
            options.retry(ToolRetry::immediate(3)),
        )
        .unwrap();
    counter
}

#[tokio::test]
async fn a_transient_error_is_retried_for_safe_and_idempotent_tools() {
    for policy in [ReplayPolicy::Safe, ReplayPolicy::Idempotent] {
        let registry = ToolRegistry::new();
        let attempts = register_transient(&registry, 2, ToolOptions::new().replay_policy(policy));
        let result = registry.execute(&call("c1", "job", "{}"), None).await;
        assert!(!result.is_error, "{policy}: {result:?}");
        assert_eq!(result.content, "done");
        assert_eq!(attempts.get(), 3, "{policy}");
    }
}

#[tokio::test]
async fn retries_stop_at_max_attempts_with_the_handlers_message() {
    let registry = ToolRegistry::new();
    let attempts = register_transient(&registry, 10, ToolOptions::new().replay_policy(ReplayPolicy::Safe));
    let result = registry.execute(&call("c1", "job", "{}"), None).await;
    assert!(result.is_error);
    assert!(result.content.contains("backend busy"), "{}", result.content);
    assert_eq!(attempts.get(), 3);
}

#[tokio::test]
async fn a_manual_tool_is_never_retried() {
    for options in [ToolOptions::new(), ToolOptions::new().replay_policy(ReplayPolicy::Manual)] {
        let registry = ToolRegistry::new();
        let attempts = register_transient(&registry, 1, options);
        let result = registry.execute(&call("c1", "job", "{}"), None).await;
        assert!(result.is_error);
        assert!(result.content.contains("backend busy"), "{}", result.content);
        assert_eq!(attempts.get(), 1);
    }
}

#[tokio::test]
async fn an_ordinary_error_is_not_retried_even_for_a_safe_tool() {
    let registry = ToolRegistry::new();
    let attempts = Counter::new();
    let c = attempts.clone();
    registry
        .register_with_schema(
            "job",
            "A job.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                c.hit();
                async move { Err(ToolError::new("no such order")) }
            }),
            ToolOptions::new().replay_policy(ReplayPolicy::Safe).retry(ToolRetry::immediate(3)),
        )
        .unwrap();
    let result = registry.execute(&call("c1", "job", "{}"), None).await;
    assert_eq!((result.is_error, result.content.as_str()), (true, "no such order"));
    assert_eq!(attempts.get(), 1);
}

/// Registers `poll`, which answers "pending" twice and then "ready".
fn register_poll(registry: &ToolRegistry, policy: ReplayPolicy) -> Counter {
    let counter = Counter::new();
    let c = counter.clone();
    registry
        .register_with_schema(
            "poll",
            "Poll a job.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                let n = c.hit();
                async move { Ok(if n <= 2 { "pending" } else { "ready" }.into()) }
            }),
            ToolOptions::new()
                .replay_policy(policy)
                .retry(ToolRetry::immediate(5))
                .retry_if_result(|out: &ToolOutput| out.content == "pending"),
        )
        .unwrap();
    counter
}

#[tokio::test]
async fn retry_if_result_applies_only_to_safe_and_idempotent_tools() {
    for (policy, content, attempts) in [
        (ReplayPolicy::Safe, "ready", 3),
        (ReplayPolicy::Idempotent, "ready", 3),
        (ReplayPolicy::Manual, "pending", 1),
    ] {
        let registry = ToolRegistry::new();
        let counter = register_poll(&registry, policy);
        let result = registry.execute(&call("c1", "poll", "{}"), None).await;
        assert_eq!(result.content, content, "{policy}");
        assert_eq!(counter.get(), attempts, "{policy}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_safe_tool_that_times_out_in_a_direct_run_answers_the_timeout() {
    // A durable runtime would retry it; a direct run answers the timeout instead.
    let registry = ToolRegistry::new();
    let attempts = Counter::new();
    let c = attempts.clone();
    registry
        .register_with_schema(
            "slow",
            "Slow.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                c.hit();
                async move {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok("late".into())
                }
            }),
            ToolOptions::new()
                .replay_policy(ReplayPolicy::Safe)
                .retry(ToolRetry::immediate(3))
                .timeout_seconds(1.0),
        )
        .unwrap();
    let result = registry.execute(&call("c1", "slow", "{}"), None).await;
    assert_timeout_text(&result.content);
    assert_eq!(attempts.get(), 1);
}

/// An ordinary Rust function, as a `#[tool]` function stays.
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

#[tokio::test(start_paused = true)]
async fn execute_validates_checks_permission_and_applies_the_timeout_that_a_direct_call_bypasses() {
    // A direct call is just a function call.
    assert_eq!(calculate(6, 7), 42);

    let make = |permission: Option<PermissionLevel>, delay: u64| {
        let registry = ToolRegistry::new();
        let mut options = ToolOptions::new().timeout_seconds(5.0);
        if let Some(p) = permission {
            options = options.permission(p);
        }
        registry
            .register_with_schema(
                "calculate",
                "Multiply two numbers.",
                calc_schema(),
                ToolHandler::from_async(move |args, _ctx| async move {
                    tokio::time::sleep(Duration::from_secs(delay)).await;
                    Ok(calculate(args["a"].as_i64().unwrap(), args["b"].as_i64().unwrap()).to_string().into())
                }),
                options,
            )
            .unwrap();
        registry
    };
    let good = call("c1", "calculate", r#"{"a": 6, "b": 7}"#);
    assert_eq!(make(None, 0).execute(&good, None).await.content, "42");
    // Validation.
    let bad = make(None, 0).execute(&call("c2", "calculate", r#"{"a": 6, "b": "x"}"#), None).await;
    assert_eq!(bad.content, r#"invalid arguments for calculate: b: "x" is not of type "integer""#);
    // Permission.
    assert_eq!(make(Some(PermissionLevel::Deny), 0).execute(&good, None).await.content, PERMISSION_DENIED);
    // The registered timeout.
    assert_timeout_text(&make(None, 10).execute(&good, None).await.content);
}

#[tokio::test]
async fn handler_errors_become_error_results_and_structured_output_is_kept() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "lookup",
            "Look up.",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
            ToolHandler::from_async(|args, _ctx| async move {
                match args["id"].as_i64() {
                    Some(1) => Ok(ToolOutput::json(json!({"id": 1, "name": "Ada"}))),
                    _ => Err(ToolError::new("no user with that id")),
                }
            }),
            ToolOptions::new(),
        )
        .unwrap();
    let found = registry.execute(&ToolCall::from_value("c1", "lookup", &json!({"id": 1})), None).await;
    assert!(!found.is_error);
    assert_eq!(found.structured_content, Some(json!({"id": 1, "name": "Ada"})));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&found.content).unwrap(),
        json!({"id": 1, "name": "Ada"})
    );
    let missing = registry.execute(&ToolCall::from_value("c2", "lookup", &json!({"id": 2})), None).await;
    assert_eq!((missing.is_error, missing.content.as_str()), (true, "no user with that id"));
    assert_eq!(missing.name, "lookup");
}

/// Spec: no untrusted input recurses without bound. A tool whose structured result nests
/// 1 to 1,000,000 levels deep (a value a journal or an MCP client could not read back past
/// serde_json's 127 levels, and that serde_json's recursive `to_string` and drop took past
/// the stack, aborting the process before the fix): up to the limit it is the result, past
/// it an error result saying the tool ran but its result is too deep, for `ToolOutput::json`
/// and a hand-made `ToolOutput`, async and blocking handlers alike.
#[tokio::test]
async fn a_result_nested_too_deeply_is_an_error_result_and_nothing_overflows() {
    use harnessx_test_support::deep::{DEPTHS, nested_value};
    let registry = ToolRegistry::new();
    let schema =
        json!({"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]});
    let depth_of = |args: &serde_json::Value| args["depth"].as_u64().unwrap() as usize;
    registry
        .register_with_schema(
            "deep_json",
            "A deep result.",
            schema.clone(),
            ToolHandler::from_async(move |args, _ctx| {
                let depth = depth_of(&args);
                async move { Ok(ToolOutput::json(nested_value(depth))) }
            }),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "deep_blocking",
            "A deep result with its own text.",
            schema,
            ToolHandler::from_blocking(move |args, _ctx| {
                let value = nested_value(depth_of(&args));
                Ok(ToolOutput {
                    content: "a tree".into(),
                    structured_content: Some(value),
                    parts: Parts::new(),
                })
            }),
            ToolOptions::new(),
        )
        .unwrap();
    for depth in DEPTHS.into_iter().chain([MAX_JSON_DEPTH + 1]) {
        for tool in ["deep_json", "deep_blocking"] {
            let started = std::time::Instant::now();
            let call = ToolCall::from_value("c1", tool, &json!({"depth": depth}));
            let result = registry.execute(&call, None).await;
            assert!(started.elapsed() < Duration::from_secs(10), "{tool} {depth}: {:?}", started.elapsed());
            if depth <= MAX_JSON_DEPTH {
                assert!(!result.is_error, "{tool} {depth}: {}", result.content);
                let structured = result.structured_content.expect("kept");
                assert_eq!(structured, nested_value(depth));
                if tool == "deep_json" {
                    assert_eq!(result.content, structured.to_string());
                }
            } else {
                assert!(result.is_error, "{tool} {depth}");
                assert_eq!(
                    result.content,
                    format!(
                        "tool {tool} ran, but its result is nested too deeply to send back (more than {MAX_JSON_DEPTH} levels of arrays and objects)"
                    )
                );
                assert_eq!(result.structured_content, None);
            }
        }
    }
}
