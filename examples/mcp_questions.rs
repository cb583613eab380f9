//! An MCP server's question mid-call (elicitation), answered two ways: by a Rust callback
//! in a plain run, and, in a durable run with nobody to ask, by a pause that `answer`
//! settles and `resume` continues (the call runs again and the server gets the answer):
//!
//! ```text
//! cargo run --example mcp_questions -- npx -y @modelcontextprotocol/server-everything
//! ```
//!
//! server-everything's `trigger-elicitation-request` asks for a name and more.

use std::sync::Arc;

use harnessx::agent::{Agent, AgentConfig};
use harnessx::durable::{AgentRuntime, SqliteJournal};
use harnessx::mcp::{ElicitAnswer, Elicitor, McpOptions, McpServer};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{PermissionLevel, PermissionManager, ToolCall};
use serde_json::json;

const TOOL: &str = "trigger-elicitation-request";

/// An agent over the server's elicitation tool; its model calls it, then repeats its result.
async fn agent(server: McpServer, elicit: Option<Elicitor>) -> Result<Agent, Box<dyn std::error::Error>> {
    let model = FunctionModel::new(|req| {
        Ok(match req.messages.last() {
            Some(Message::Tool { content, .. }) => ModelResponse::text(format!("The server said: {content}")),
            _ => ModelResponse::tool_calls(vec![ToolCall::new("q1", TOOL, "{}")]),
        })
    });
    let options = McpOptions { include: Some(vec![TOOL.into()]), elicit, ..McpOptions::default() };
    Ok(Agent::builder()
        .model(model)
        .mcp_with(server, options)
        // The server's tools would ask; this example approves them.
        .permissions(PermissionManager::new(PermissionLevel::Allow))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .connect()
        .await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("usage: cargo run --example mcp_questions -- COMMAND [ARGS...]  (server-everything)");
        std::process::exit(2);
    };
    let args: Vec<String> = args.collect();
    let server = || McpServer::stdio(command.clone(), args.clone(), Vec::<(String, String)>::new());

    // 1. A callback answers: the question and its schema in, the answer out (checked
    //    against the schema before it is sent).
    let elicit = Elicitor::new(|question| async move {
        let fields: Vec<&String> =
            question.schema["properties"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
        println!("asked: {} (fields: {fields:?})", question.message);
        ElicitAnswer::Accept(json!({"name": "Ada", "integer": 7}))
    });
    let direct = agent(server(), Some(elicit)).await?;
    println!("{}", direct.run("Ask me.").await?.output);
    direct.close().await;

    // 2. A durable run with nobody to ask pauses at the question; the answer is recorded,
    //    and the resumed run runs the call again, handing the server the answer.
    let dir = tempfile::tempdir()?;
    let journal = Arc::new(SqliteJournal::open(dir.path().join("runs.db"))?);
    let runtime = AgentRuntime::new(agent(server(), None).await?, journal);
    let paused = runtime.start("q", "Ask me.").await?;
    let need = paused.needs_input.first().expect("the run waits for the server's question");
    println!(
        "paused: {:?}: {} (schema requires {})",
        need.kind,
        need.reason,
        json!(need.schema.as_ref().map(|s| &s["required"]))
    );
    runtime.answer("q", &need.call_id, r#"{"name": "Grace", "integer": 9}"#)?;
    let done = runtime.resume("q").await?;
    println!("{}", done.output);
    Ok(())
}
