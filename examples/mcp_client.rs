//! An agent whose tools come from an MCP server started as a child process, with their
//! names prefixed, the test model calling one of them:
//!
//! ```text
//! cargo run --example mcp_client -- npx -y @modelcontextprotocol/server-everything
//! MCP_TRUST=1 cargo run --example mcp_client -- npx -y @modelcontextprotocol/server-everything
//! ```
//!
//! Any stdio MCP server works; the example calls the first tool it lists.

use harnessx::agent::{Agent, AgentConfig};
use harnessx::mcp::{McpOptions, McpServer};
use harnessx::model::TestModel;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("usage: cargo run --example mcp_client -- COMMAND [ARGS...]  (a stdio MCP server)");
        std::process::exit(2);
    };
    let server = McpServer::stdio(command, args, Vec::<(String, String)>::new());
    // The server's hints that relax something (readOnlyHint: run concurrently, no asking;
    // idempotentHint: re-run after a crash) count only for a server you trust
    // (`MCP_TRUST=1`); otherwise only the careful ones do (destructiveHint).
    let trust_hints = std::env::var_os("MCP_TRUST").is_some();
    let options = McpOptions { prefix: Some("mcp_".into()), trust_hints, ..McpOptions::default() };
    let agent = Agent::builder()
        .model(TestModel::new())
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .mcp_with(server, options)
        .connect()
        .await?;
    let names = agent.tools().tool_names();
    println!("tools from {:?}: {names:?}", agent.mcp_servers());
    for def in agent.tools().list_tools() {
        println!("  {}: concurrent={}, replay={}", def.name, def.concurrent, def.replay_policy);
    }
    // The test model calls each tool it is given; give it the first one, with arguments
    // it makes up from the schema.
    if let Some(first) = names.first() {
        let model = TestModel::new().call_tools([first.clone()]);
        let agent = Agent::builder()
            .model(model)
            .registry(agent.tools().clone())
            .config(AgentConfig { planning: false, ..AgentConfig::default() })
            .build()?;
        println!("{}", agent.run("Try the first tool.").await?.output);
    }
    // Stops the server's process.
    agent.close().await;
    Ok(())
}
