//! Typed results: a run that answers with a Rust value. A `FunctionModel` stands in for a
//! real one: its first answer leaves out a field and is sent back with the error naming
//! it; its second fits, and `run_typed` returns a `Trip`. Then the same with each output
//! mode on the built-in test model (no network, no key). See docs/output.md.
//!
//! `cargo run --example typed_output`

use std::collections::BTreeMap;

use harnessx::ToolCall;
use harnessx::agent::{Agent, AgentConfig, Output, OutputMode};
use harnessx::model::{FunctionModel, Message, ModelResponse, TestModel};
use harnessx::schemars::{self, JsonSchema};
use serde::Deserialize;

/// How to travel.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Train,
    Plane { stops: u32 },
}

/// A trip plan.
#[derive(Debug, Deserialize, JsonSchema)]
struct Trip {
    /// Where to.
    destination: String,
    mode: Mode,
    /// Days spent in each city.
    days: BTreeMap<String, u32>,
    /// Anything worth knowing.
    note: Option<String>,
}

#[tokio::main]
async fn main() {
    // A model that forgets `mode` once, then gets it right; it prints what it was told.
    let model = FunctionModel::new(|request| {
        let told = request.messages.iter().rev().find_map(|m| match m {
            Message::Tool { content, is_error: true, .. } => Some(content.clone()),
            _ => None,
        });
        let arguments = match &told {
            None => r#"{"destination": "Lisbon", "days": {"Lisbon": 3}}"#,
            Some(error) => {
                println!("the model was told: {error}");
                r#"{"destination": "Lisbon", "mode": {"plane": {"stops": 0}}, "days": {"Lisbon": 3, "Porto": 2}, "note": null}"#
            }
        };
        Ok(ModelResponse::tool_calls(vec![ToolCall::new("c1", "final_result", arguments)]))
    });
    let agent = Agent::builder()
        .model(model)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .expect("agent");
    let trip: Trip = agent.run_typed("Plan a week in Portugal.").await.expect("a trip");
    let how = match trip.mode {
        Mode::Train => "by train".to_owned(),
        Mode::Plane { stops } => format!("by plane, {stops} stops"),
    };
    println!("{} {how}, days {:?}, note {:?}", trip.destination, trip.days, trip.note);

    // Each mode, with the test model (its answers are made from the schema).
    for mode in [OutputMode::Tool, OutputMode::Native, OutputMode::Prompted] {
        let agent = Agent::builder().model(TestModel::new()).build().expect("agent");
        let result =
            agent.run_with_output("Plan a trip.", Output::of::<Trip>().mode(mode)).await.expect("a run");
        println!("{mode}: {}", result.output);
        let _trip: Trip = result.value_as().expect("a Trip");
    }
}
