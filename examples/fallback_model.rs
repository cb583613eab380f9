//! A fallback model: the first model's server is down, so each request goes on to the
//! next model of the list, and the run says so with a `model_fallback` event.
//!
//! ```text
//! cargo run --example fallback_model
//! ```
//!
//! It needs no key: the first model is an OpenAI-compatible server on a port nothing
//! listens on, the second the built-in test model. With real providers the list is,
//! for instance, `OpenAiModel::new("gpt-4o")` then `AnthropicModel::new("claude-sonnet-4-5")`
//! (`harnessx run --model openai:gpt-4o --fallback-model anthropic:claude-sonnet-4-5`).

use std::sync::Arc;

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent};
use harnessx::model::{FallbackModel, Model, ModelRetry, OpenAiModel, TestModel};

#[tokio::main]
async fn main() {
    // A port that was free a moment ago: connecting to it is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9);
    let down = OpenAiModel::new("gpt-4o").base_url(format!("http://127.0.0.1:{port}/v1")).api_key("unused");
    let backup = TestModel::new().final_text("The backup model answered.");
    let model = FallbackModel::new(vec![Arc::new(down) as Arc<dyn Model>, Arc::new(backup)])
        .expect("two models")
        // Two attempts on each model, a tenth of a second apart, before the next.
        .retry(ModelRetry { max_attempts: 2, initial_delay_seconds: 0.1, max_delay_seconds: 1.0 });
    let agent = Agent::builder()
        .model(model)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .expect("an agent");
    let mut events = agent.run_stream("Say hello.");
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::ModelFallback { from, to, reason } => {
                println!("{from} is down ({reason}); asking {to}")
            }
            AgentEvent::RunEnd { output, .. } => println!("answer: {output}"),
            AgentEvent::Error { message } => println!("failed: {message}"),
            _ => {}
        }
    }
}
