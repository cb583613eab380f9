//! Spec tools.md "Registry-wide tool policy": constructor values beat the agent's
//! `ToolPolicy`, which beats the built-in default (`DEFAULT_TOOL_TIMEOUT_SECONDS`, 25 s,
//! no deduplication, `ToolRetry()`); tools with their own limit keep it; `policy()` shows
//! the effective values; `dedupe_calls` returns the first result within one run; retry
//! precedence is tool > registry > agent > `ToolRetry::default()`.

use crate::common;

use std::time::Duration;

use common::*;
use harnessx_core::{
    DEFAULT_TOOL_TIMEOUT_SECONDS, EffectivePolicy, ReplayPolicy, RunContext, ToolCall, ToolHandler,
    ToolOptions, ToolPolicy, ToolRegistry, ToolRetry, TransientToolError,
};
use serde_json::json;
use tokio::time::Instant;

fn timeout_policy(seconds: f64) -> ToolPolicy {
    ToolPolicy { default_timeout_seconds: Some(seconds), ..Default::default() }
}

fn dedupe_policy(on: bool) -> ToolPolicy {
    ToolPolicy { dedupe_calls: Some(on), ..Default::default() }
}

fn retry_policy(retry: ToolRetry) -> ToolPolicy {
    ToolPolicy { retry: Some(retry), ..Default::default() }
}

/// Registers `sleep`: an async tool that sleeps `{"secs": f64}` and answers "woke".
fn register_sleeper(registry: &ToolRegistry, options: ToolOptions) {
    registry
        .register_with_schema(
            "sleep",
            "Sleep a while.",
            json!({"type": "object", "properties": {"secs": {"type": "number"}}, "required": ["secs"]}),
            ToolHandler::from_async(|args, _ctx| async move {
                tokio::time::sleep(Duration::from_secs_f64(args["secs"].as_f64().unwrap())).await;
                Ok("woke".into())
            }),
            options,
        )
        .unwrap();
}

/// Runs `sleep` for `secs` (virtual time); returns whether it timed out and how long it took.
async fn sleep_for(registry: &ToolRegistry, secs: f64) -> (bool, Duration) {
    let started = Instant::now();
    let result =
        registry.execute(&ToolCall::new("c", "sleep", json!({ "secs": secs }).to_string()), None).await;
    let timed_out = result.is_error && result.content.contains("timed out");
    assert!(timed_out || result.content == "woke", "{result:?}");
    (timed_out, started.elapsed())
}

#[test]
fn the_built_in_default_is_25_seconds_no_deduplication_and_tool_retry_default() {
    assert_eq!(DEFAULT_TOOL_TIMEOUT_SECONDS, 25.0);
    let expected = EffectivePolicy {
        default_timeout_seconds: 25.0,
        dedupe_calls: false,
        retry: ToolRetry::default(),
        max_result_chars: 40_000,
    };
    assert_eq!(ToolRegistry::new().policy(), expected);
    assert_eq!(ToolRegistry::default().policy(), expected);
    assert_eq!(ToolRegistry::with_policy(ToolPolicy::default()).policy(), expected);
}

#[test]
fn the_agent_policy_reaches_the_registry_it_adopts() {
    // The spec's example: ToolPolicy(default_timeout_seconds=60, dedupe_calls=True).
    let registry = ToolRegistry::new();
    register_counting(&registry, "fetch_url", ToolOptions::new());
    registry.adopt_policy(&ToolPolicy {
        default_timeout_seconds: Some(60.0),
        dedupe_calls: Some(true),
        retry: None,
        ..Default::default()
    });
    let policy = registry.policy();
    assert_eq!(policy.default_timeout_seconds, 60.0);
    assert!(policy.dedupe_calls);
    assert_eq!(policy.retry, ToolRetry::default());
    assert_eq!(registry.effective_timeout_seconds("fetch_url"), Some(60.0));
}

#[test]
fn constructor_values_beat_the_agent_policy() {
    let registry = ToolRegistry::with_policy(ToolPolicy {
        default_timeout_seconds: Some(10.0),
        dedupe_calls: Some(false),
        retry: Some(ToolRetry::immediate(2)),
        ..Default::default()
    });
    registry.adopt_policy(&ToolPolicy {
        default_timeout_seconds: Some(60.0),
        dedupe_calls: Some(true),
        retry: Some(ToolRetry::immediate(5)),
        ..Default::default()
    });
    assert_eq!(
        registry.policy(),
        EffectivePolicy {
            default_timeout_seconds: 10.0,
            dedupe_calls: false,
            retry: ToolRetry::immediate(2),
            max_result_chars: 40_000,
        }
    );
}

#[test]
fn precedence_applies_value_by_value() {
    // The constructor sets only the timeout; the agent sets only deduplication; the
    // retry falls through to the built-in default.
    let registry = ToolRegistry::with_policy(timeout_policy(10.0));
    registry.adopt_policy(&ToolPolicy {
        default_timeout_seconds: None,
        dedupe_calls: Some(true),
        retry: None,
        ..Default::default()
    });
    assert_eq!(
        registry.policy(),
        EffectivePolicy {
            default_timeout_seconds: 10.0,
            dedupe_calls: true,
            retry: ToolRetry::default(),
            max_result_chars: 40_000
        }
    );
}

#[test]
fn adopting_again_replaces_the_earlier_agent_policy() {
    let registry = ToolRegistry::new();
    registry.adopt_policy(&ToolPolicy {
        default_timeout_seconds: Some(60.0),
        dedupe_calls: Some(true),
        retry: None,
        ..Default::default()
    });
    registry.adopt_policy(&timeout_policy(30.0));
    assert_eq!(registry.policy().default_timeout_seconds, 30.0);
    assert!(!registry.policy().dedupe_calls, "the earlier agent's dedupe_calls is gone");
}

#[test]
fn tools_with_their_own_timeout_are_never_changed() {
    let registry = ToolRegistry::with_policy(timeout_policy(10.0));
    register_counting(&registry, "query_postgres", ToolOptions::new().timeout_seconds(120.0));
    register_counting(&registry, "plain", ToolOptions::new());
    registry.adopt_policy(&timeout_policy(60.0));
    assert_eq!(registry.effective_timeout_seconds("query_postgres"), Some(120.0));
    assert_eq!(registry.get_tool("query_postgres").unwrap().timeout_seconds, Some(120.0));
    assert_eq!(registry.effective_timeout_seconds("plain"), Some(10.0));

    let agent_only = ToolRegistry::new();
    register_counting(&agent_only, "query_postgres", ToolOptions::new().timeout_seconds(120.0));
    agent_only.adopt_policy(&timeout_policy(5.0));
    assert_eq!(agent_only.effective_timeout_seconds("query_postgres"), Some(120.0));
}

#[tokio::test(start_paused = true)]
async fn calls_time_out_at_the_built_in_25_seconds() {
    let registry = ToolRegistry::new();
    register_sleeper(&registry, ToolOptions::new());
    assert_eq!(sleep_for(&registry, 24.5).await, (false, Duration::from_secs_f64(24.5)));
    assert_eq!(sleep_for(&registry, 26.0).await, (true, Duration::from_secs(25)));
}

#[tokio::test(start_paused = true)]
async fn calls_time_out_at_the_agent_policy_value_when_the_constructor_sets_none() {
    let registry = ToolRegistry::new();
    register_sleeper(&registry, ToolOptions::new());
    registry.adopt_policy(&timeout_policy(60.0));
    assert_eq!(sleep_for(&registry, 40.0).await, (false, Duration::from_secs(40)));
    assert_eq!(sleep_for(&registry, 70.0).await, (true, Duration::from_secs(60)));
}

#[tokio::test(start_paused = true)]
async fn calls_time_out_at_the_constructor_value_over_the_agent_policy() {
    let registry = ToolRegistry::with_policy(timeout_policy(10.0));
    register_sleeper(&registry, ToolOptions::new());
    registry.adopt_policy(&timeout_policy(60.0));
    assert_eq!(sleep_for(&registry, 20.0).await, (true, Duration::from_secs(10)));
}

#[tokio::test(start_paused = true)]
async fn a_tool_with_its_own_timeout_keeps_it_under_every_policy() {
    let registry = ToolRegistry::with_policy(timeout_policy(10.0));
    register_sleeper(&registry, ToolOptions::new().timeout_seconds(120.0));
    registry.adopt_policy(&timeout_policy(5.0));
    assert_eq!(sleep_for(&registry, 100.0).await, (false, Duration::from_secs(100)));
    assert_eq!(sleep_for(&registry, 130.0).await, (true, Duration::from_secs(120)));
}

/// Registers `next`, which answers how many times it has run.
fn register_numbering(registry: &ToolRegistry) -> Counter {
    let counter = Counter::new();
    let c = counter.clone();
    registry
        .register_with_schema(
            "next",
            "Number the call.",
            json!({"type": "object", "properties": {"q": {}, "r": {}}}),
            ToolHandler::from_async(move |_args, _ctx| {
                let n = c.hit();
                async move { Ok(format!("run {n}").into()) }
            }),
            ToolOptions::new(),
        )
        .unwrap();
    counter
}

#[tokio::test]
async fn dedupe_returns_the_first_result_for_identical_calls_within_one_run() {
    let registry = ToolRegistry::with_policy(dedupe_policy(true));
    let counter = register_numbering(&registry);
    let run = RunContext::new();

    let first = registry.execute_in(&call("c1", "next", r#"{"q": 1, "r": [1, 2]}"#), &run).await;
    let repeat = registry.execute_in(&call("c2", "next", r#"{"q": 1, "r": [1, 2]}"#), &run).await;
    assert_eq!(first.content, "run 1");
    assert_eq!(repeat.content, "run 1", "the repeated call returns the first result");
    assert_eq!(repeat.call_id, "c2", "the repeated result still answers its own call");
    assert!(!repeat.is_error);
    assert_eq!(counter.get(), 1);

    let different = registry.execute_in(&call("c3", "next", r#"{"q": 2}"#), &run).await;
    assert_eq!(different.content, "run 2");
    assert_eq!(counter.get(), 2);
}

#[tokio::test]
async fn dedupe_applies_to_identical_calls_in_one_batch() {
    let registry = ToolRegistry::with_policy(dedupe_policy(true));
    let counter = register_numbering(&registry);
    let run = RunContext::new();
    let calls =
        [call("a", "next", r#"{"q": "x"}"#), call("b", "next", r#"{"q": "x"}"#), call("c", "next", "{}")];
    let results = registry.execute_batch(&calls, &run).await;
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(results[0].content, results[1].content);
    assert_ne!(results[0].content, results[2].content);
    assert_eq!(counter.get(), 2);
}

#[tokio::test]
async fn dedupe_does_not_reach_across_runs() {
    let registry = ToolRegistry::with_policy(dedupe_policy(true));
    let counter = register_numbering(&registry);
    let a = registry.execute_in(&call("c1", "next", r#"{"q": 1}"#), &RunContext::new()).await;
    let b = registry.execute_in(&call("c1", "next", r#"{"q": 1}"#), &RunContext::new()).await;
    assert_eq!((a.content.as_str(), b.content.as_str()), ("run 1", "run 2"));
    assert_eq!(counter.get(), 2);
}

#[tokio::test]
async fn without_dedupe_identical_calls_each_run() {
    for registry in [
        ToolRegistry::new(),
        // The constructor's explicit `false` beats an agent's `true`.
        {
            let r = ToolRegistry::with_policy(dedupe_policy(false));
            r.adopt_policy(&dedupe_policy(true));
            r
        },
    ] {
        let counter = register_numbering(&registry);
        let run = RunContext::new();
        let a = registry.execute_in(&call("c1", "next", r#"{"q": 1}"#), &run).await;
        let b = registry.execute_in(&call("c2", "next", r#"{"q": 1}"#), &run).await;
        assert_eq!((a.content.as_str(), b.content.as_str()), ("run 1", "run 2"));
        assert_eq!(counter.get(), 2);
    }
}

#[tokio::test]
async fn dedupe_from_the_agent_policy_applies() {
    let registry = ToolRegistry::new();
    let counter = register_numbering(&registry);
    registry.adopt_policy(&dedupe_policy(true));
    let run = RunContext::new();
    registry.execute_in(&call("c1", "next", r#"{"q": 1}"#), &run).await;
    let b = registry.execute_in(&call("c2", "next", r#"{"q": 1}"#), &run).await;
    assert_eq!(b.content, "run 1");
    assert_eq!(counter.get(), 1);
}

/// Registers a `safe` tool that always fails transiently; returns its attempt counter.
fn register_flaky(registry: &ToolRegistry, options: ToolOptions) -> Counter {
    let counter = Counter::new();
    let c = counter.clone();
    registry
        .register_with_schema(
            "flaky",
            "Always busy.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                c.hit();
                async move { Err(TransientToolError::new("service busy").into()) }
            }),
            options.replay_policy(ReplayPolicy::Safe),
        )
        .unwrap();
    counter
}

async fn attempts(registry: &ToolRegistry, counter: &Counter) -> usize {
    let result = registry.execute(&call("c1", "flaky", "{}"), None).await;
    assert!(result.is_error);
    assert!(result.content.contains("service busy"), "{result:?}");
    counter.get()
}

#[tokio::test(start_paused = true)]
async fn with_no_configured_retry_a_tool_uses_tool_retry_default() {
    let registry = ToolRegistry::new();
    let counter = register_flaky(&registry, ToolOptions::new());
    assert_eq!(attempts(&registry, &counter).await, ToolRetry::default().max_attempts as usize);
}

#[tokio::test]
async fn the_agent_retry_applies_to_tools_without_their_own() {
    let registry = ToolRegistry::new();
    let counter = register_flaky(&registry, ToolOptions::new());
    registry.adopt_policy(&retry_policy(ToolRetry::immediate(5)));
    assert_eq!(registry.policy().retry, ToolRetry::immediate(5));
    assert_eq!(attempts(&registry, &counter).await, 5);
}

#[tokio::test]
async fn an_explicit_registry_retry_beats_the_agent_retry() {
    let registry = ToolRegistry::with_policy(retry_policy(ToolRetry::immediate(2)));
    let counter = register_flaky(&registry, ToolOptions::new());
    registry.adopt_policy(&retry_policy(ToolRetry::immediate(5)));
    assert_eq!(attempts(&registry, &counter).await, 2);
}

#[tokio::test]
async fn an_explicit_per_tool_retry_stays_in_place() {
    let registry = ToolRegistry::with_policy(retry_policy(ToolRetry::immediate(2)));
    let counter = register_flaky(&registry, ToolOptions::new().retry(ToolRetry::immediate(4)));
    registry.adopt_policy(&retry_policy(ToolRetry::immediate(5)));
    assert_eq!(attempts(&registry, &counter).await, 4);
    assert_eq!(registry.get_tool("flaky").unwrap().retry, Some(ToolRetry::immediate(4)));
}
