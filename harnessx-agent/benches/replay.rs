//! Replay from cassettes through the agent loop (issue 46): 100 cases of 10 turns each
//! (9 turns of one `add` call, then the final answer), recorded once through a
//! `RecordingModel` into a temporary folder, 1,000 cassettes in all. Measured: loading
//! them (`ReplayModel::from_dir`), replaying the 100 cases in sequence through
//! `Agent::run` from the loaded model, and both together: the harness time of a replay,
//! without the eval's own work (a folder per case, its checks, the table).
//!
//! `cargo bench -p harnessx-agent --bench replay`

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_agent::model::{FunctionModel, Message, Model, ModelResponse};
use harnessx_agent::testing::{RecordingModel, ReplayModel};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use serde::Deserialize;
use serde_json::json;

const CASES: usize = 100;
const TURNS: usize = 10;

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn prompt(case: usize) -> String {
    format!("Case {case}: add the numbers up, one call a turn.")
}

fn agent(model: impl Model + 'static) -> Agent {
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
    let config = AgentConfig { planning: false, ..AgentConfig::default() };
    Agent::builder().model(model).registry(registry).config(config).build().unwrap()
}

/// The live model: one `add` call a turn (a provider's own call ids), the answer at the
/// last turn.
fn live() -> FunctionModel {
    FunctionModel::new(|req| {
        let done = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        Ok(if done + 1 < TURNS {
            ModelResponse::tool_calls(vec![ToolCall::new(
                format!("toolu_{}_{done}", req.messages.len()),
                "add",
                format!(r#"{{"a": {done}, "b": {}}}"#, req.messages.len()),
            )])
        } else {
            ModelResponse::text(format!("done after {done} calls"))
        })
    })
}

/// The cases, in sequence: the turns they took.
async fn run_all(agent: &Agent) -> usize {
    let mut turns = 0;
    for case in 0..CASES {
        let result = agent.run(prompt(case)).await.unwrap();
        assert_eq!(result.turns as usize, TURNS);
        turns += result.turns as usize;
    }
    turns
}

fn record(rt: &tokio::runtime::Runtime, dir: &Path) {
    let recording = agent(RecordingModel::new(live(), dir));
    rt.block_on(run_all(&recording));
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), CASES * TURNS);
}

fn replay(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let tapes = tempfile::tempdir().unwrap();
    record(&rt, tapes.path());

    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.bench_function("load_1000", |b| b.iter(|| ReplayModel::from_dir(tapes.path()).unwrap()));
    let replaying = agent(ReplayModel::from_dir(tapes.path()).unwrap());
    group.bench_function("run_100x10", |b| b.to_async(&rt).iter(|| run_all(&replaying)));
    group.bench_function("load_and_run_100x10", |b| {
        b.to_async(&rt).iter(|| async {
            let replaying = agent(ReplayModel::from_dir(tapes.path()).unwrap());
            run_all(&replaying).await
        })
    });
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
