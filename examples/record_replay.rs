//! Record a model's exchanges once, then replay them offline: the way to test an agent of
//! your own in CI without a key or a network (docs/evals.md).
//!
//! `cargo run --example record_replay --features agent`

use harnessx::ToolCall;
use harnessx::agent::Agent;
use harnessx::agent::model::{Message, ModelResponse};
use harnessx::testing::{FunctionModel, RecordingModel, ReplayModel};

#[harnessx::tool]
/// Adds two numbers.
///
/// Args:
///     a: The first number.
///     b: The second number.
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tapes = tempfile::tempdir()?;

    // The "live" model: in real life a provider's (OpenAiModel, AnthropicModel, ...).
    let live = FunctionModel::new(|request| {
        Ok(match request.messages.last() {
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("2 + 3 = {content}")),
            _ => ModelResponse::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a":2,"b":3}"#)]),
        })
    });
    let agent = Agent::builder().model(RecordingModel::new(live, tapes.path())).tool(Add).build()?;
    let recorded = agent.run("What is 2 + 3?").await?;
    println!("recorded: {} ({} cassettes)", recorded.output, std::fs::read_dir(tapes.path())?.count());

    // Replayed: no model at all, the tool runs again, the answer is the same.
    let agent = Agent::builder().model(ReplayModel::from_dir(tapes.path())?).tool(Add).build()?;
    let replayed = agent.run("What is 2 + 3?").await?;
    println!("replayed: {}", replayed.output);
    assert_eq!(replayed.output, recorded.output);

    // A prompt no cassette holds fails, naming where it differs: never a live call.
    let error = agent.run("What is 2 + 4?").await.unwrap_err();
    println!("changed prompt: {error}");
    Ok(())
}
