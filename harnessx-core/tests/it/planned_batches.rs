//! `plan_batch` / `run_planned`: the seam a durable runtime uses to record each step
//! (spec tools.md "Replacement, timeouts, and replay": in a durable runtime `safe` and
//! `idempotent` tools that time out are retried under their `ToolRetry`).

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use harnessx_core::{
    PERMISSION_DENIED, PermissionLevel, PermissionManager, ReplayPolicy, RunContext, RunHooks, ToolHandler,
    ToolOptions, ToolRegistry, ToolResult, ToolRetry,
};

fn registry() -> (ToolRegistry, Log) {
    let registry = ToolRegistry::new();
    let log = Log::new();
    for (name, options) in [
        ("read", ToolOptions::new().replay_policy(ReplayPolicy::Safe).concurrent(true)),
        ("charge", ToolOptions::new().replay_policy(ReplayPolicy::Idempotent).concurrent(false)),
        ("send", ToolOptions::new().concurrent(false)),
    ] {
        let log = log.clone();
        registry
            .register_with_schema(
                name,
                "A tool.",
                empty_schema(),
                ToolHandler::from_async(move |_args, ctx| {
                    let log = log.clone();
                    async move {
                        log.push(format!("{} key={:?}", ctx.tool_name(), ctx.idempotency_key()));
                        Ok(format!("ran {}", ctx.tool_name()).into())
                    }
                }),
                options,
            )
            .unwrap();
    }
    (registry, log)
}

#[tokio::test]
async fn a_plan_shows_each_call_and_runs_like_execute_batch() {
    let (registry, log) = registry();
    let calls = [
        call("a", "read", "{}"),
        call("b", "Charge", "{}"),
        call("c", "nope", "{}"),
        call("d", "send", "[1]"),
    ];
    let batch = registry.plan_batch(&calls);
    assert_eq!(batch.len(), 4);
    assert_eq!(batch.tool(0), Some("read"));
    assert_eq!(batch.tool(1), Some("charge"), "names are repaired while planning");
    assert_eq!(batch.replay_policy(1), Some(ReplayPolicy::Idempotent));
    assert_eq!(batch.replay_policy(3), None, "bad arguments: it will not run");
    assert!(batch.is_concurrent(0) && !batch.is_concurrent(1));
    assert!(batch.result(2).unwrap().content.contains("nope"), "{:?}", batch.result(2));
    assert!(batch.result(3).unwrap().is_error);
    let outcomes = registry.run_planned(batch, &RunContext::new(), &RunHooks::new()).await;
    let direct = registry.execute_batch(&calls, &RunContext::new()).await;
    assert_eq!(outcomes.iter().map(|o| o.result.clone()).collect::<Vec<_>>(), direct);
    assert_eq!(outcomes.iter().map(|o| o.ran).collect::<Vec<_>>(), [true, true, false, false]);
    assert_eq!(log.entries().len(), 4, "two calls, planned and direct");
}

#[tokio::test]
async fn settled_calls_do_not_run_and_keys_reach_the_handler() {
    let (registry, log) = registry();
    let calls = [call("a", "read", "{}"), call("b", "charge", "{}"), call("c", "send", "{}")];
    let mut batch = registry.plan_batch(&calls);
    batch.settle(0, ToolResult::error("a", "read", "from the journal"));
    batch.set_idempotency_key(1, "run-7/b");
    let starts = Arc::new(Mutex::new(Vec::new()));
    let ends = Arc::new(Mutex::new(Vec::new()));
    let (s, e) = (starts.clone(), ends.clone());
    let hooks = RunHooks::new()
        .on_start(move |i| s.lock().unwrap().push(i))
        .on_end(move |i, o| e.lock().unwrap().push((i, o.ran, o.timed_out)));
    let outcomes = registry.run_planned(batch, &RunContext::new(), &hooks).await;
    assert_eq!(outcomes[0].result.content, "from the journal");
    assert!(!outcomes[0].ran);
    assert_eq!(log.entries(), ["charge key=Some(\"run-7/b\")", "send key=None"]);
    assert_eq!(*starts.lock().unwrap(), [1, 2], "serial calls start in call order");
    let mut ends = ends.lock().unwrap().clone();
    ends.sort();
    assert_eq!(ends, [(0, false, false), (1, true, false), (2, true, false)]);
}

#[tokio::test]
async fn authorized_calls_skip_the_manager_and_the_others_are_asked() {
    let (registry, log) = registry();
    let calls = [call("a", "read", "{}"), call("b", "send", "{}")];
    // No approver: ASK would be denied.
    let ctx = RunContext::new().with_permissions(PermissionManager::new(PermissionLevel::Ask));
    let mut batch = registry.plan_batch(&calls);
    assert_eq!(batch.permission(0), None, "omitted: the manager decides");
    batch.authorize(0);
    let outcomes = registry.run_planned(batch, &ctx, &RunHooks::new()).await;
    assert_eq!(outcomes[0].result.content, "ran read");
    assert_eq!(outcomes[1].result.content, PERMISSION_DENIED);
    assert!(!outcomes[1].ran);
    assert_eq!(log.entries().len(), 1);
}

fn slow(registry: &ToolRegistry, name: &str, policy: ReplayPolicy, hits: Counter) {
    registry
        .register_with_schema(
            name,
            "Slow the first time.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                let hits = hits.clone();
                async move {
                    if hits.hit() == 1 {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                    Ok("done".into())
                }
            }),
            ToolOptions::new().replay_policy(policy).timeout_seconds(1.0).retry(ToolRetry::immediate(3)),
        )
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn timeouts_are_retried_only_when_asked_and_only_for_safe_and_idempotent_tools() {
    let registry = ToolRegistry::new();
    let (safe, idem, manual) = (Counter::new(), Counter::new(), Counter::new());
    slow(&registry, "safe_tool", ReplayPolicy::Safe, safe.clone());
    slow(&registry, "idem_tool", ReplayPolicy::Idempotent, idem.clone());
    slow(&registry, "manual_tool", ReplayPolicy::Manual, manual.clone());
    let calls = [call("a", "safe_tool", "{}"), call("b", "idem_tool", "{}"), call("c", "manual_tool", "{}")];
    let durable = RunHooks::new().retry_timeouts(true);
    let outcomes = registry.run_planned(registry.plan_batch(&calls), &RunContext::new(), &durable).await;
    assert_eq!(outcomes[0].result.content, "done");
    assert_eq!(outcomes[1].result.content, "done");
    assert!(!outcomes[0].timed_out && !outcomes[1].timed_out);
    assert!(outcomes[2].timed_out, "manual: never repeated, reported as timed out");
    assert!(outcomes[2].result.content.contains("timed out"), "{}", outcomes[2].result.content);
    assert_eq!((safe.get(), idem.get(), manual.get()), (2, 2, 1));

    // A direct run answers the timeout, even for a safe tool.
    let direct = registry.execute_batch(&calls[..1], &RunContext::new()).await;
    assert_eq!(direct[0].content, "done", "second call of the counter is quick");
    let fresh = ToolRegistry::new();
    let again = Counter::new();
    slow(&fresh, "safe_tool", ReplayPolicy::Safe, again.clone());
    let outcomes =
        fresh.run_planned(fresh.plan_batch(&calls[..1]), &RunContext::new(), &RunHooks::new()).await;
    assert!(outcomes[0].timed_out);
    assert_eq!(again.get(), 1);
}
