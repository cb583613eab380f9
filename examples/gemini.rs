//! An agent on the Gemini API (or a proxy that speaks it, via HARNESSX_BASE_URL). One tool
//! (`add`), the answer streamed to the terminal, the model's thoughts to stderr.
//!
//! ```text
//! GEMINI_API_KEY=... cargo run --example gemini
//! HARNESSX_MODEL=gemini-2.5-pro GEMINI_API_KEY=... cargo run --example gemini
//! # a Gemini-compatible proxy, key optional
//! HARNESSX_BASE_URL=http://localhost:4000 cargo run --example gemini
//! ```
//!
//! With neither a key nor a base URL it prints how to configure one and exits.

use std::io::Write;

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent};
use harnessx::model::GeminiModel;
use harnessx::model::ReasoningConfig;
use harnessx::{ToolDefinition, ToolHandler};
use serde_json::json;

#[tokio::main]
async fn main() {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let base_url = env("HARNESSX_BASE_URL");
    let key = env("GEMINI_API_KEY");
    if base_url.is_none() && key.is_none() {
        println!(
            "No Gemini key configured. Set GEMINI_API_KEY (and optionally HARNESSX_MODEL, \
             default gemini-2.5-flash), or HARNESSX_BASE_URL for a Gemini-compatible proxy."
        );
        return;
    }
    let name = env("HARNESSX_MODEL").unwrap_or_else(|| "gemini-2.5-flash".to_owned());
    let mut model = GeminiModel::new(&name);
    if let Some(url) = &base_url {
        model = model.base_url(url);
    }

    let add = ToolDefinition::new(
        "add",
        "Add two numbers.",
        json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }),
        ToolHandler::from_async(|args, _| async move {
            let sum = args["a"].as_f64().unwrap_or_default() + args["b"].as_f64().unwrap_or_default();
            Ok(sum.to_string().into())
        }),
    );
    let agent = Agent::builder()
        .model(model)
        .system_prompt("Use the add tool for arithmetic. Answer in one sentence.")
        .tool(add)
        .config(AgentConfig {
            planning: false,
            max_tokens: Some(2048),
            // A small thinking budget, with the thoughts shown (on stderr below).
            reasoning: Some(ReasoningConfig { budget_tokens: Some(1024), ..ReasoningConfig::default() }),
            ..AgentConfig::default()
        })
        .build()
        .expect("agent");

    let mut events = agent.run_stream("What is 1234.5 + 8765.5? Use the tool.");
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ReasoningDelta { text } => eprint!("{text}"),
            AgentEvent::ToolCallStart { name, arguments, .. } => eprintln!("\n[tool] {name} {arguments}"),
            AgentEvent::ToolCallEnd { content, is_error, .. } => {
                eprintln!("[tool] -> {}{content}", if is_error { "error: " } else { "" })
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
