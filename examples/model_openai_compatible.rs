//! An agent on an OpenAI-compatible server: OpenAI itself, or a local vLLM, llama.cpp
//! (`llama-server`) or Ollama. One tool (`add`), the answer streamed to the terminal.
//!
//! ```text
//! # Ollama (no key needed)
//! HARNESSX_BASE_URL=http://localhost:11434/v1 HARNESSX_MODEL=qwen3:8b \
//!     cargo run --example model_openai_compatible
//! # vLLM: http://localhost:8000/v1, llama-server: http://localhost:8080/v1
//! # OpenAI
//! OPENAI_API_KEY=sk-... HARNESSX_MODEL=gpt-4o-mini cargo run --example model_openai_compatible
//! ```
//!
//! With neither a base URL nor a key it prints how to configure one and exits.
//!
//! The first request requires a tool call (`tool_choice: "required"`): small local models
//! often call tools only when told to. Once the model has called `add`, later requests go
//! back to `auto`, so it can answer. `HARNESSX_TOOL_CHOICE=auto|required|none|add` picks
//! another choice (docs/agent.md, "Tool choice").

use std::io::Write;

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent, ToolChoice};
use harnessx::model::OpenAiModel;
use harnessx::{ToolDefinition, ToolHandler};
use serde_json::json;

#[tokio::main]
async fn main() {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let base_url = env("HARNESSX_BASE_URL");
    let key = env("OPENAI_API_KEY");
    if base_url.is_none() && key.is_none() {
        println!(
            "No model server configured. Set HARNESSX_BASE_URL to an OpenAI-compatible server \
             (e.g. http://localhost:11434/v1 for Ollama, http://localhost:8000/v1 for vLLM, \
             http://localhost:8080/v1 for llama-server) and HARNESSX_MODEL to a model it serves, \
             or set OPENAI_API_KEY to use OpenAI."
        );
        return;
    }
    let tool_choice = match env("HARNESSX_TOOL_CHOICE").map(|v| v.parse::<ToolChoice>()) {
        None => ToolChoice::Required,
        Some(Ok(choice)) => choice,
        Some(Err(e)) => {
            eprintln!("HARNESSX_TOOL_CHOICE: {e}");
            std::process::exit(2);
        }
    };
    let name = env("HARNESSX_MODEL").unwrap_or_else(|| "gpt-4o-mini".to_owned());
    let mut model = OpenAiModel::new(&name);
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
            max_tokens: Some(512),
            // Reset to `auto` after the first tool call (`reset_tool_choice`, on by default).
            tool_choice,
            ..AgentConfig::default()
        })
        .build()
        .expect("agent");
    // `HARNESSX_TOOL_CHOICE=ad` would fail the run before its first request; say so now.
    if let Err(e) = agent.check_tool_choice() {
        eprintln!("{e}");
        std::process::exit(2);
    }

    let mut events = agent.run_stream("What is 1234.5 + 8765.5? Use the tool.");
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
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
