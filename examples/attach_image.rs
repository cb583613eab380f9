//! A run that sees a picture and returns a chart: the prompt carries a PNG (read from
//! `examples/assets/bars.png`, its type recognised by its bytes), a `#[tool]` returns a
//! chart as an image part, and the model is shown both. With `OPENAI_API_KEY` set the
//! model is `gpt-4o-mini` (pass another with `HARNESSX_MODEL`); without a key, a local
//! model that says what it was sent.
//!
//! `cargo run --example attach_image`
//!
//! The same from the command line:
//! `cargo run -p harnessx-cli -- run --attach examples/assets/bars.png "Which bar is tallest?"`

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent, Prompt};
use harnessx::content::{Content, Image, Part, sniff};
use harnessx::model::{FunctionModel, Message, Model, ModelResponse, OpenAiModel};
use harnessx::{ToolCall, tool};
use std::sync::Arc;

/// Draws the values as a bar chart and returns the picture.
///
/// Args:
///     values: The bars' heights, in order.
#[tool(permission = "allow", replay_policy = "safe")]
fn chart(values: Vec<u32>) -> Content {
    // A real renderer would draw `values`; the example returns the sample chart.
    let png = std::fs::read("examples/assets/bars.png").unwrap_or_default();
    Content::new().text(format!("a bar chart of {} values", values.len())).image(Image::png(png))
}

/// Without a key: a model that calls `chart` once, then says what media it was sent.
fn local_model() -> FunctionModel {
    FunctionModel::new(|request| {
        let seen: Vec<String> = request.messages.iter().flat_map(Message::parts).map(Part::label).collect();
        Ok(match request.messages.last() {
            Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new(
                "c1",
                "chart",
                r#"{"values": [10, 30, 22, 36, 16]}"#,
            )]),
            _ => ModelResponse::text(format!("I was shown: {}", seen.join(", "))),
        })
    })
    .with_name("local")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bytes = std::fs::read("examples/assets/bars.png")?;
    let media_type = sniff(&bytes).ok_or("examples/assets/bars.png is not an image")?;
    let prompt =
        Prompt::new("Which bar in this picture is tallest? Then draw the same values with the chart tool.")
            .with_part(Part::image(media_type, bytes));

    let model: Arc<dyn Model> = match std::env::var("OPENAI_API_KEY") {
        Ok(_) => Arc::new(OpenAiModel::new(std::env::var("HARNESSX_MODEL").unwrap_or("gpt-4o-mini".into()))),
        Err(_) => Arc::new(local_model()),
    };
    let config = AgentConfig { planning: false, ..AgentConfig::default() };
    let agent = Agent::builder().model_arc(model).tool(Chart).config(config).build()?;
    let mut events = agent.run_stream(prompt);
    while let Some(event) = events.next().await {
        match event {
            // What `--json` prints: media as summaries, never base64.
            AgentEvent::ModelRequest { turn, parts, .. } if !parts.is_empty() => {
                let shown: Vec<String> = parts.iter().map(|p| p.describe().to_string()).collect();
                eprintln!("[request {turn}] with {}", shown.join(", "));
            }
            AgentEvent::ToolCallEnd { name, content, .. } => eprintln!("[tool] {name}: {content}"),
            AgentEvent::RunEnd { output, .. } => println!("{output}"),
            _ => {}
        }
    }
    events.into_result().ok_or("the run ended without a result")??;
    Ok(())
}
