//! An agent on OpenAI's Responses API: one tool (`add`), low reasoning effort, the
//! model's reasoning summary and its answer streamed to the terminal. Between the tool
//! call and the answer the reasoning item goes back to the API unchanged (the requests
//! are stateless, `store: false`).
//!
//! ```text
//! OPENAI_API_KEY=sk-... cargo run --example openai_responses
//! HARNESSX_MODEL=o4-mini OPENAI_API_KEY=sk-... cargo run --example openai_responses
//! # a model that does not reason (it refuses encrypted reasoning content)
//! HARNESSX_MODEL=gpt-4.1-mini HARNESSX_NO_REASONING=1 OPENAI_API_KEY=sk-... cargo run --example openai_responses
//! ```
//!
//! Without a key it prints how to run it and exits.

use std::io::Write;

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentConfig, AgentEvent};
use harnessx::model::{OpenAiResponsesModel, ReasoningConfig, ReasoningEffort};
use harnessx::{ToolDefinition, ToolHandler};
use serde_json::json;

#[tokio::main]
async fn main() {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if env("OPENAI_API_KEY").is_none() {
        println!(
            "No OpenAI key configured. Run it as\n  OPENAI_API_KEY=sk-... cargo run --example openai_responses\n\
             (HARNESSX_MODEL picks the model, default gpt-5-mini; HARNESSX_NO_REASONING=1 for a model \
             that does not reason, such as gpt-4.1-mini)."
        );
        return;
    }
    let name = env("HARNESSX_MODEL").unwrap_or_else(|| "gpt-5-mini".to_owned());
    let reasons = env("HARNESSX_NO_REASONING").is_none();
    let model = OpenAiResponsesModel::new(&name).encrypted_reasoning(reasons);

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
    let reasoning =
        reasons.then_some(ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: None });
    let agent = Agent::builder()
        .model(model)
        .system_prompt("Use the add tool for arithmetic. Answer in one sentence.")
        .tool(add)
        .config(AgentConfig { planning: false, max_tokens: Some(2048), reasoning, ..AgentConfig::default() })
        .build()
        .expect("agent");

    let mut events = agent.run_stream("What is 1234.5 + 8765.5? Use the tool.");
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::ReasoningDelta { text } => eprint!("{text}"),
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
