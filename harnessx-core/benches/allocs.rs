//! Heap allocations per tool call, counted with a counting global allocator: the whole
//! pipeline (as `dispatch` runs it) and the stages that must allocate nothing.
//!
//! `cargo bench -p harnessx-core --bench allocs`
//!
//! Prints one line per case: allocations (and bytes) per call on the calling thread,
//! averaged over many calls after a warm-up (`allocation_counter` counts per thread: an
//! async handler runs on the caller's thread here, a sync one on the pool's, whose
//! allocations are not counted). Figures are in `docs/performance.md`.

use harnessx_core::__private::{Plain, required, shared, sync2};
use harnessx_core::{
    AuthRequest, Authorization, Authorizer, Decision, PermissionLevel, PermissionManager, RunContext,
    ToolCall, ToolHandler, ToolOptions, ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn registry() -> ToolRegistry {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    });
    let registry = ToolRegistry::new();
    let async_add = ToolHandler::typed_async(|Add { a, b }| async move { Ok::<_, String>(a + b) });
    let sync_add = ToolHandler::typed_blocking(|Add { a, b }| Ok::<_, String>(a + b));
    let tool_add = shared(const { &sync2::<_, _, _, Plain>(&["a", "b"], add, required(), required()) });
    for (name, handler) in [("add", async_add), ("add_sync", sync_add), ("add_tool", tool_add)] {
        registry
            .register_with_schema(name, "Add two numbers.", schema.clone(), handler, ToolOptions::new())
            .unwrap();
    }
    registry
}

/// Allocations and bytes per run of `f` on this thread, over `n` runs after as many
/// warm-up runs.
fn count(n: u64, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..n {
        f();
    }
    let info = allocation_counter::measure(|| {
        for _ in 0..n {
            f();
        }
    });
    (info.count_total as f64 / n as f64, info.bytes_total as f64 / n as f64)
}

fn report(case: &str, (allocs, bytes): (f64, f64)) {
    println!("{case:<40} {allocs:>6.1} allocations {bytes:>8.0} bytes per call");
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument runs the matching cases only.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--")).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let registry = registry();
    let manager = PermissionManager::default();
    let n = 20_000;
    let case = |name: &str, f: &mut dyn FnMut()| {
        if name.contains(&filter) {
            report(name, count(n, f));
        }
    };

    for tool in ["add", "add_sync", "add_tool"] {
        let call = ToolCall::new("call_1", tool, r#"{"a": 2, "b": 3}"#);
        case(&format!("execute/{tool}"), &mut || {
            let r = rt.block_on(registry.execute(&call, Some(&manager)));
            assert!(!r.is_error);
        });
    }
    let batch: Vec<ToolCall> = (0..10)
        .map(|i| ToolCall::new(format!("call_{i}"), "add", format!(r#"{{"a": {i}, "b": 3}}"#)))
        .collect();
    let ctx = RunContext::new().with_permissions(manager.clone());
    case("execute_batch/add x10 (per batch)", &mut || {
        let r = rt.block_on(registry.execute_batch(&batch, &ctx));
        assert_eq!(r.len(), 10);
    });

    // The permission decision for an ALLOW must not allocate (a tool without a
    // permission of its own, the manager's default; and a tool's own ALLOW). The span
    // checks with no subscriber are pinned by a unit test in `engine::span`.
    let arguments = json!({"a": 2, "b": 3});
    let request = AuthRequest { tool: "add", permission: None, call_id: "call_1", arguments: &arguments };
    case("authorize/allow (manager default)", &mut || {
        let decision = Authorizer::authorize(&manager, request);
        assert!(matches!(decision, Decision::Now(Authorization::Allow)));
    });
    let explicit = AuthRequest { permission: Some(PermissionLevel::Allow), ..request };
    case("authorize/allow (tool's own ALLOW)", &mut || {
        assert!(matches!(Authorizer::authorize(&manager, explicit), Decision::Now(Authorization::Allow)));
    });
}
