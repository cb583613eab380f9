//! Loop overhead of the agent with a `FunctionModel` (no network): one run of 20 turns
//! with 10 tool calls each, then the final answer; and the same with every run limit set
//! (none reached) and each response reporting usage that is priced, so the budget's
//! checks and sums are measured.
//!
//! `cargo bench -p harnessx-agent --bench agent_loop`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harnessx_agent::model::{FunctionModel, Message, ModelResponse, Usage};
use harnessx_agent::{Agent, AgentConfig, ModelPrice, RunLimits};
use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn agent(turns: usize, calls_per_turn: usize, limited: bool) -> Agent {
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
    Agent::builder().model(model).registry(registry).config(config).build().unwrap()
}

fn agent_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut group = c.benchmark_group("agent_loop");
    for (name, limited) in [("turns_x10_calls", false), ("limits_set_turns_x10_calls", true)] {
        for turns in [1usize, 20] {
            let agent = agent(turns, 10, limited);
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
