//! An agent with the built-in test model (no network, no key) and the filesystem tools
//! contained under a scratch directory. Writes are ASK and there is no one to ask, so
//! they are denied; reads run. Events stream as they happen.
//!
//! `cargo run --example agent_test_model`

use futures_util::StreamExt;
use harnessx::agent::{Agent, AgentEvent};
use harnessx::catalog::BuiltinOptions;
use harnessx::model::TestModel;
use harnessx::{PermissionLevel, PermissionManager};

#[tokio::main]
async fn main() {
    let root = std::env::temp_dir().join(format!("harnessx-example-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("scratch directory");
    std::fs::write(root.join("a"), "hello from the scratch directory\n").expect("seed file");

    let permissions = PermissionManager::new(PermissionLevel::Allow)
        .with_override("write_file", PermissionLevel::Ask)
        .with_override("edit_file", PermissionLevel::Ask)
        .with_override("delete", PermissionLevel::Ask)
        .with_override("generate_file", PermissionLevel::Ask);
    let agent = Agent::builder()
        .model(TestModel::new())
        .builtin("filesystem", BuiltinOptions::new().set("base_path", root.to_str().expect("utf-8 path")))
        .permissions(permissions)
        .build()
        .expect("agent");

    let mut events = agent.run_stream("Look at the scratch directory.");
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::ToolCallStart { index, name, arguments, .. } => {
                println!("start #{index} {name} {arguments}")
            }
            AgentEvent::ToolCallEnd { name, is_error, content, .. } => {
                println!(
                    "end   {name}{}: {}",
                    if is_error { " (error)" } else { "" },
                    content.lines().next().unwrap_or("")
                )
            }
            AgentEvent::RunEnd { output, turns, .. } => {
                println!("\nfinal answer after {turns} turns:\n{output}")
            }
            _ => {}
        }
    }
    agent.close().await;
    let _ = std::fs::remove_dir_all(&root);
}
