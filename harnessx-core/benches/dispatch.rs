//! Dispatch cost of one tool call through the whole pipeline: name lookup, JSON argument
//! parsing, schema validation, permission, timeout, handler, result.
//!
//! `cargo bench -p harnessx-core --bench dispatch`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::future::BoxFuture;
use harnessx_core::__private::{Plain, required, shared, sync2};
use harnessx_core::hooks::{
    HookError, PostDecision, PostToolUse, PreDecision, PreToolUse, ToolHook, ToolHooks,
};
use harnessx_core::{
    PermissionManager, RunContext, ToolCall, ToolContext, ToolHandler, ToolOptions, ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn add_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// What `#[tool] fn add(a: i64, b: i64) -> i64` registers: the shared handler.
fn tool_add() -> ToolHandler {
    shared(const { &sync2::<_, _, _, Plain>(&["a", "b"], add, required(), required()) })
}

fn typed_add() -> ToolHandler {
    ToolHandler::typed_blocking(|Add { a, b }| Ok::<_, String>(a + b))
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "add",
            "Add two numbers.",
            add_schema(),
            ToolHandler::typed_async(|Add { a, b }| async move { Ok::<_, String>(a + b) }),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "add_sync",
            "Add two numbers.",
            add_schema(),
            ToolHandler::typed_blocking(|Add { a, b }| Ok::<_, String>(a + b)),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema("add_tool", "Add two numbers.", add_schema(), tool_add(), ToolOptions::new())
        .unwrap();
    registry
}

/// A typical policy hook, in Rust: refuses one tool by name, has no opinion on the rest,
/// and keeps every result.
struct Policy;

impl ToolHook for Policy {
    fn name(&self) -> &str {
        "policy"
    }
    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        let decision = if call.tool == "run_bash" {
            PreDecision::Deny { message: "no shell here".into() }
        } else {
            PreDecision::Continue
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn post_tool_use<'a>(&'a self, _: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        Box::pin(std::future::ready(Ok(PostDecision::Keep)))
    }
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let registry = registry();
    let manager = PermissionManager::default();
    let mut group = c.benchmark_group("dispatch");

    let call = ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#);
    group.bench_function("async_add", |b| {
        b.to_async(&rt).iter(|| async {
            let r = registry.execute(&call, Some(&manager)).await;
            assert!(!r.is_error);
            r
        })
    });

    let sync_call = ToolCall::new("call_1", "add_sync", r#"{"a": 2, "b": 3}"#);
    group.bench_function("sync_add", |b| {
        b.to_async(&rt).iter(|| async {
            let r = registry.execute(&sync_call, Some(&manager)).await;
            assert!(!r.is_error);
            r
        })
    });

    let tool_call = ToolCall::new("call_1", "add_tool", r#"{"a": 2, "b": 3}"#);
    group.bench_function("tool_add", |b| {
        b.to_async(&rt).iter(|| async {
            let r = registry.execute(&tool_call, Some(&manager)).await;
            assert!(!r.is_error);
            r
        })
    });

    let batch: Vec<ToolCall> = (0..10)
        .map(|i| ToolCall::new(format!("call_{i}"), "add", format!(r#"{{"a": {i}, "b": 3}}"#)))
        .collect();
    group.bench_with_input(BenchmarkId::new("async_add_batch", 10), &batch, |b, batch| {
        b.to_async(&rt).iter(|| async {
            let ctx = RunContext::new().with_permissions(manager.clone());
            let results = registry.execute_batch(batch, &ctx).await;
            assert_eq!(results.len(), 10);
            results
        })
    });
    let sync_batch: Vec<ToolCall> = (0..10)
        .map(|i| ToolCall::new(format!("call_{i}"), "add_sync", format!(r#"{{"a": {i}, "b": 3}}"#)))
        .collect();
    group.bench_with_input(BenchmarkId::new("sync_add_batch", 10), &sync_batch, |b, batch| {
        b.to_async(&rt).iter(|| async {
            let ctx = RunContext::new().with_permissions(manager.clone());
            let results = registry.execute_batch(batch, &ctx).await;
            assert_eq!(results.len(), 10);
            results
        })
    });
    group.finish();

    // One call with and without one Rust hook (pre and post), in the same context
    // otherwise: the difference is what a hook costs a call.
    let mut group = c.benchmark_group("dispatch_hooks");
    let plain = RunContext::new().with_permissions(manager.clone());
    let hooked =
        RunContext::new().with_permissions(manager.clone()).with_hooks(ToolHooks::new().with(Policy));
    for (name, ctx) in [("no_hook", &plain), ("one_rust_hook", &hooked)] {
        let (registry, call) = (&registry, &call);
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_custom(|iters| async move {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    let r = registry.execute_in(call, ctx).await;
                    assert!(!r.is_error);
                }
                start.elapsed()
            })
        });
    }
    group.finish();

    // The same calls awaited one after another inside one task, the shape of the peers'
    // harness (`../shared/bench/peer_dispatch.py` awaits its call n times in one
    // coroutine): no runtime entry (`block_on`) per call.
    let mut group = c.benchmark_group("dispatch_in_task");
    let (registry, manager) = (&registry, &manager);
    for (name, call) in [("async_add", &call), ("sync_add", &sync_call), ("tool_add", &tool_call)] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter_custom(|iters| async move {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    let r = registry.execute(call, Some(manager)).await;
                    assert!(!r.is_error);
                }
                start.elapsed()
            })
        });
    }
    group.finish();
}

/// The handler alone, called directly on its thread: decoding the arguments, the call,
/// the result (or the error text), without the pipeline's threads and spinning.
fn handler(c: &mut Criterion) {
    let ctx = ToolContext::new("call_1", "add");
    let mut group = c.benchmark_group("handler");
    for (name, handler) in [("tool_add", tool_add()), ("typed_add", typed_add())] {
        let ToolHandler::Blocking(h) = handler else { unreachable!("both are blocking") };
        let good = json!({"a": 2, "b": 3});
        group.bench_function(name, |b| b.iter(|| h.call(good.clone(), &ctx).unwrap()));
        let bad = json!({"a": 2, "b": "3"});
        group.bench_function(format!("{name}_bad_argument"), |b| {
            b.iter(|| h.call(bad.clone(), &ctx).unwrap_err())
        });
    }
    group.finish();
}

criterion_group!(benches, dispatch, handler);
criterion_main!(benches);
