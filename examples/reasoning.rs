//! An agent that thinks before it answers: Anthropic extended thinking with a token
//! budget. The thinking streams to stderr as it comes, apart from the answer on stdout,
//! and is sent back with the tool result on the next request (the API checks its
//! signature).
//!
//! ```text
//! ANTHROPIC_API_KEY=sk-ant-... cargo run --example reasoning
//! HARNESSX_MODEL=claude-opus-4-1 ANTHROPIC_API_KEY=... cargo run --example reasoning
//! ```
//!
//! Without a key it prints how to set one and exits.

use std::io::Write;

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent};
use harnessx::model::{AnthropicModel, ReasoningConfig};
use harnessx::{ToolDefinition, ToolHandler};
use serde_json::json;

#[tokio::main]
async fn main() {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if env("ANTHROPIC_API_KEY").is_none() {
        println!(
            "No Anthropic key configured. Set ANTHROPIC_API_KEY (and optionally HARNESSX_MODEL, \
             default claude-sonnet-4-5, a model with extended thinking) and run again: \
             ANTHROPIC_API_KEY=sk-ant-... cargo run --example reasoning"
        );
        return;
    }
    let name = env("HARNESSX_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".to_owned());

    let multiply = ToolDefinition::new(
        "multiply",
        "Multiply two numbers exactly.",
        json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }),
        ToolHandler::from_async(|args, _| async move {
            let product = args["a"].as_f64().unwrap_or_default() * args["b"].as_f64().unwrap_or_default();
            Ok(product.to_string().into())
        }),
    );
    let config = AgentConfig {
        planning: false,
        max_tokens: Some(2048),
        // 2,048 tokens of thinking; max_tokens is raised above the budget for the request.
        reasoning: Some(ReasoningConfig { effort: None, budget_tokens: Some(2048) }),
        ..AgentConfig::default()
    };
    let agent = Agent::builder()
        .model(AnthropicModel::new(&name))
        .system_prompt("Use the multiply tool for multiplication. Answer in one sentence.")
        .tool(multiply)
        .config(config)
        .build()
        .expect("agent");

    let mut events = agent.run_stream("A crate holds 37 boxes of 48 jars. How many jars in 12 crates?");
    let mut thinking = false;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::ReasoningDelta { text } => {
                if !thinking {
                    eprint!("\n[thinking] ");
                    thinking = true;
                }
                eprint!("{text}");
            }
            AgentEvent::TextDelta { text } => {
                if thinking {
                    eprintln!();
                    thinking = false;
                }
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ToolCallStart { name, arguments, .. } => {
                thinking = false;
                eprintln!("\n[tool] {name} {arguments}");
            }
            AgentEvent::ToolCallEnd { content, .. } => eprintln!("[tool] -> {content}"),
            AgentEvent::RunEnd { usage, .. } => {
                eprintln!("\n[usage] {} in, {} out", usage.input_tokens, usage.output_tokens)
            }
            AgentEvent::Error { message } => {
                eprintln!("\nThe run failed: {message}");
                std::process::exit(1);
            }
            _ => {}
        }
    }
    println!();
    agent.close().await;
}
