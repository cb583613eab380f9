//! A run held to a budget: a model that would call tools forever is stopped at its
//! tool-call limit, the calls past it are not run, and the run reports what it used and
//! what that cost: `cargo run --example run_budget`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx::agent::model::{FunctionModel, ModelResponse, Usage};
use harnessx::agent::{Agent, AgentConfig, ModelPrice, RunLimits, RunOutcome};
use harnessx::{ToolCall, ToolDefinition, ToolHandler};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two searches per response, every response, each response reporting its tokens
    // (most of the prompt read from the provider's cache).
    let model = FunctionModel::new(|req| {
        let turn = req.messages.len();
        let mut response = ModelResponse::tool_calls(vec![
            ToolCall::new(format!("a{turn}"), "search", r#"{"q": "rust"}"#),
            ToolCall::new(format!("b{turn}"), "search", r#"{"q": "agents"}"#),
        ]);
        response.usage =
            Usage { input_tokens: 2_000, cached_input_tokens: 1_500, output_tokens: 60, ..Usage::default() };
        Ok(response)
    });
    let searches = Arc::new(AtomicUsize::new(0));
    let counter = searches.clone();
    let search = ToolDefinition::new(
        "search",
        "Search the web.",
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        ToolHandler::from_async(move |args, _ctx| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(format!("results for {}", args["q"]).into())
            }
        }),
    );
    let config = AgentConfig {
        planning: false,
        limits: RunLimits { max_tool_calls: Some(5), max_cost_usd: Some(1.0), ..RunLimits::default() },
        // US dollars per million tokens: input, output; cache reads at a tenth.
        price: Some(ModelPrice::new(3.0, 15.0).with_cached_input(0.3)),
        budget_note: true,
        ..AgentConfig::default()
    };
    let agent = Agent::builder().model(model).tool(search).config(config).build()?;

    let state = agent.run("Research Rust agents.").await?;
    match state.run_outcome() {
        RunOutcome::LimitReached { limit, usage } => {
            println!(
                "stopped at the {limit} limit after {} requests: {} tool calls ran ({} searches), \
                 {} input tokens ({} cached), {} output tokens, ${:.6}",
                usage.requests,
                usage.tool_calls,
                searches.load(Ordering::SeqCst),
                usage.input_tokens,
                usage.cached_input_tokens,
                usage.output_tokens,
                usage.cost_usd.unwrap_or_default(),
            );
            assert_eq!(searches.load(Ordering::SeqCst), 5, "no call past the limit ran");
        }
        other => println!("{other:?}"),
    }
    Ok(())
}
