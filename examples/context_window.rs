//! A long run that fits a small context window: every tool result is capped (the whole
//! text saved for the file tools), and older turns are compacted when a request nears the
//! window. Runs offline on a scripted model; see docs/context.md.
//!
//! `cargo run --example context_window`

use futures_util::StreamExt;
use harnessx::ToolCall;
use harnessx::agent::model::{FunctionModel, Message, ModelResponse};
use harnessx::agent::{Agent, AgentConfig, AgentEvent, ContextPolicy};
use harnessx::{ResultDir, ToolPolicy};

#[harnessx::tool]
/// Fetches one page of a long report.
fn fetch_page(n: u32) -> String {
    (0..400).map(|line| format!("page {n}, line {line}: quarterly figures\n")).collect()
}

/// Stands in for a model: fetches pages 1 to 15, then answers; writes a summary when
/// asked to compact.
fn scripted_model() -> FunctionModel {
    FunctionModel::new(|request| {
        if request.system.as_deref().is_some_and(|s| s.starts_with("You compact")) {
            return Ok(ModelResponse::text("Pages fetched so far held quarterly figures, line by line."));
        }
        let last = request.messages.iter().rev().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.first().map(|c| c.id.clone()),
            _ => None,
        });
        let n: u32 = last.and_then(|id| id.strip_prefix('p')?.parse().ok()).unwrap_or(0);
        Ok(if n >= 15 {
            ModelResponse::text("All 15 pages read.")
        } else {
            let next = n + 1;
            ModelResponse::tool_calls(vec![ToolCall::new(
                format!("p{next}"),
                "fetch_page",
                format!("{{\"n\": {next}}}"),
            )])
        })
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let results = std::env::temp_dir().join("harnessx-context-example");
    let config = AgentConfig {
        planning: false,
        // A result of more than 4,000 characters keeps its head and tail.
        tools: ToolPolicy { max_result_chars: Some(4_000), ..Default::default() },
        result_dir: Some(ResultDir::new(&results)),
        // An 8,000-token window: compaction starts at 80 % of it.
        context: ContextPolicy { window: Some(8_000), keep_turns: 2, ..ContextPolicy::default() },
        ..AgentConfig::default()
    };
    let agent = Agent::builder().model(scripted_model()).tool(FetchPage).config(config).build()?;
    let mut stream = agent.run_stream("Read the whole report.");
    while let Some(event) = stream.next().await {
        if let AgentEvent::Compaction { tokens_before, tokens_after } = event {
            println!("compacted: about {tokens_before} -> {tokens_after} tokens");
        }
    }
    let result = stream.into_result().expect("the stream ended")?;
    println!("{} ({} turns; whole results in {})", result.output, result.turns, results.display());
    Ok(())
}
