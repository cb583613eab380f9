//! Loop overhead of the agent with a `FunctionModel` (no network): one run of 20 turns
//! with 10 tool calls each, then the final answer.
//!
//! `cargo bench -p harnessx-core --bench agent_loop`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harnessx_agent::model::{FunctionModel, Message, ModelResponse};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn agent(turns: usize, calls_per_turn: usize) -> Agent {
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
        Ok(if done < turns {
            ModelResponse::tool_calls(
                (0..calls_per_turn)
                    .map(|i| {
                        ToolCall::new(format!("c{done}_{i}"), "add", format!(r#"{{"a": {i}, "b": {done}}}"#))
                    })
                    .collect(),
            )
        } else {
            ModelResponse::text("done")
        })
    });
    Agent::builder()
        .model(model)
        .registry(registry)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

fn agent_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut group = c.benchmark_group("agent_loop");
    for turns in [1usize, 20] {
        let agent = agent(turns, 10);
        group.bench_with_input(BenchmarkId::new("turns_x10_calls", turns), &agent, |b, agent| {
            b.to_async(&rt).iter(|| async {
                let r = agent.run("go").await.unwrap();
                assert_eq!(r.turns as usize, turns + 1);
                r
            })
        });
    }
    group.finish();
}

criterion_group!(benches, agent_loop);
criterion_main!(benches);
