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
    let mut batch = registry.plan_batch(&calls);
    assert_eq!(batch.len(), 4);
    let planned: Vec<_> = batch.iter_mut().collect();
    assert_eq!(planned.iter().map(|c| c.position()).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(planned[0].tool(), Some("read"));
    assert_eq!(planned[1].tool(), Some("charge"), "names are repaired while planning");
    assert_eq!(planned[1].call().name, "Charge", "the call as the model made it");
    assert_eq!(planned[1].replay_policy(), Some(ReplayPolicy::Idempotent));
    assert_eq!(planned[3].replay_policy(), None, "bad arguments: it will not run");
    assert!(planned[0].is_concurrent() && !planned[1].is_concurrent());
    assert!(planned[2].result().unwrap().content.contains("nope"), "{:?}", planned[2].result());
    assert!(planned[3].result().unwrap().is_error);
    drop(planned);
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
    batch.get_mut("a").unwrap().settle(ToolResult::error("a", "read", "from the journal"));
    batch.get_mut("b").unwrap().set_idempotency_key("run-7/b");
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
    let mut read = batch.get_mut("a").unwrap();
    assert_eq!(read.permission(), None, "omitted: the manager decides");
    read.authorize_unasked();
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

#[tokio::test]
async fn a_batch_is_settled_against_an_authorizer_in_call_order() {
    let (registry, log) = registry();
    // `read` is ALLOW, `send` waits for a person, `charge` (ASK) is denied by a rule.
    let manager = PermissionManager::new(PermissionLevel::Ask).with_override("read", PermissionLevel::Allow);
    manager.add_rule(PermissionLevel::Deny, "charge").unwrap();
    let calls = [
        call("a", "read", "{}"),
        call("b", "send", "{}"),
        call("c", "charge", "{}"),
        call("d", "send", "{}"),
    ];
    let mut batch = registry.plan_batch(&calls);
    let done = batch.authorize(&manager.rules_only(), Some(&manager)).await;
    assert_eq!(done.questions.iter().map(|q| q.call_id.as_str()).collect::<Vec<_>>(), ["b", "d"]);
    assert_eq!(done.questions[0].tool, "send");
    assert_eq!(done.refused.len(), 1);
    assert_eq!((done.refused[0].call_id.as_str(), done.refused[0].is_error), ("c", true));
    assert!(done.edited.is_empty());

    // A person approves `b` for the session: asked again, `d` is covered by the grant.
    let mut b = batch.get_mut("b").unwrap();
    let decided = manager.apply("send", harnessx_core::ApprovalDecision::ApproveForSession);
    assert_eq!(b.decide(decided, Some(&manager)), harnessx_core::Permit::Runs);
    assert!(b.is_authorized());
    let mut d = batch.get_mut("d").unwrap();
    assert_eq!(d.authorize(&manager.rules_only(), Some(&manager)).await, harnessx_core::Permit::Runs);

    let outcomes = registry.run_planned(batch, &RunContext::new(), &RunHooks::new()).await;
    assert_eq!(outcomes.iter().map(|o| o.ran).collect::<Vec<_>>(), [true, true, false, true]);
    assert_eq!(outcomes[2].result.content, PERMISSION_DENIED);
    assert_eq!(log.entries().len(), 3);
}

#[tokio::test]
async fn an_edit_that_fails_the_schema_settles_the_call_with_why() {
    let registry = ToolRegistry::new();
    let schema =
        serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let ok = ToolHandler::from_async(|_, _| async { Ok("ran".into()) });
    registry.register_with_schema("count", "d", schema, ok, ToolOptions::new()).unwrap();
    let calls = [call("a", "count", r#"{"n": 1}"#)];
    let mut batch = registry.plan_batch(&calls);
    let mut a = batch.get_mut("a").unwrap();
    let edited = harnessx_core::Authorization::AllowEdited { arguments: serde_json::json!({"n": "two"}) };
    assert_eq!(a.decide(edited, None), harnessx_core::Permit::Settled);
    let result = a.result().unwrap();
    assert!(
        result.is_error && result.content.starts_with("the user changed the arguments of this count call"),
        "{}",
        result.content
    );
    // Asked again, a settled call stays settled.
    assert_eq!(
        a.authorize(&harnessx_core::permission::NoManager, None).await,
        harnessx_core::Permit::Settled
    );
    assert!(batch.get_mut("zz").is_none());
}
