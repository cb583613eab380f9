//! The spans of a run written to a file of JSON lines, one per finished span: an
//! `invoke_agent` span, a `chat test` span per model request and an `execute_tool` span
//! per call, with OpenTelemetry's GenAI attributes. No network, no key (the test model).
//! See `docs/observability.md`; `TraceTarget::Otlp` sends the same spans to a collector.
//!
//! `cargo run --example tracing_file --features otel -- trace.jsonl`

use harnessx::agent::Agent;
use harnessx::model::TestModel;
use harnessx::telemetry::{TraceTarget, init};

#[tokio::main]
async fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "trace.jsonl".to_owned());
    // Keep the guard until the end: dropping it flushes the last spans to the file.
    let guard = init(TraceTarget::File(path.clone().into())).expect("the trace file can be created");

    let agent = Agent::builder().name("planner").model(TestModel::new()).build().expect("agent");
    let result = agent.run("Make a plan.").await.expect("the run finishes");
    println!("{}", result.output);

    guard.shutdown().expect("every span is written");
    for line in std::fs::read_to_string(&path).expect("the trace file").lines() {
        let span: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        println!("{:<28} parent {}", span["name"].as_str().unwrap_or_default(), span["parent_span_id"]);
    }
}
