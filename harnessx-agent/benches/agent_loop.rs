//! Loop overhead of the agent with a `FunctionModel` (no network): one run of 20 turns
//! with 10 tool calls each, then the final answer; and the same with every run limit set
//! (none reached) and each response reporting usage that is priced, so the budget's
//! checks and sums are measured; and the plain run with one Rust hook (pre and post, no
//! opinion on `add`), so the difference is what a hook costs 200 calls.
//!
//! `cargo bench -p harnessx-agent --bench agent_loop`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::future::BoxFuture;
use harnessx_agent::model::{FunctionModel, Message, ModelResponse, Usage};
use harnessx_agent::{Agent, AgentConfig, ModelPrice, RunLimits};
use harnessx_core::hooks::{HookError, PostDecision, PostToolUse, PreDecision, PreToolUse, ToolHook};
use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

/// A typical policy hook: refuses the shell, no opinion on the rest, keeps every result.
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

fn agent(turns: usize, calls_per_turn: usize, limited: bool, hooked: bool) -> Agent {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "add",
            "Add two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
            ToolHandler::typed_async(|Add { a, b }| async move { Ok::<_, String>(a + b) }),
            ToolOptions::new(),
        )
        .unwrap();
    let model = FunctionModel::new(move |req| {
        let done = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        let usage =
            Usage { input_tokens: 1000, cached_input_tokens: 800, output_tokens: 50, ..Usage::default() };
        let response = if done < turns {
            ModelResponse::tool_calls(
                (0..calls_per_turn)
                    .map(|i| {
                        ToolCall::new(format!("c{done}_{i}"), "add", format!(r#"{{"a": {i}, "b": {done}}}"#))
                    })
                    .collect(),
            )
        } else {
            ModelResponse::text("done")
        };
        Ok(ModelResponse { usage, ..response })
    });
    let mut config = AgentConfig { planning: false, ..AgentConfig::default() };
    if limited {
        let mut limits = RunLimits {
            max_turns: Some(1000),
            max_tool_calls: Some(1_000_000),
            max_tokens: Some(u64::MAX / 2),
            max_cost_usd: Some(1e9),
            ..RunLimits::default()
        };
        limits.max_calls_per_tool.insert("add".into(), 1_000_000);
        config.limits = limits;
        config.price = Some(ModelPrice::new(2.5, 10.0).with_cached_input(1.25));
    }
    let builder = Agent::builder().model(model).registry(registry).config(config);
    let builder = if hooked { builder.hook(Policy) } else { builder };
    builder.build().unwrap()
}

fn agent_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut group = c.benchmark_group("agent_loop");
    for (name, limited, hooked) in [
        ("turns_x10_calls", false, false),
        ("limits_set_turns_x10_calls", true, false),
        ("one_hook_turns_x10_calls", false, true),
    ] {
        for turns in [1usize, 20] {
            let agent = agent(turns, 10, limited, hooked);
            group.bench_with_input(BenchmarkId::new(name, turns), &agent, |b, agent| {
                b.to_async(&rt).iter(|| async {
                    let r = agent.run("go").await.unwrap();
                    assert_eq!(r.turns as usize, turns + 1);
                    r
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, agent_loop);
criterion_main!(benches);
