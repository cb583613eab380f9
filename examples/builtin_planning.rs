//! The `planning` bundle: `write_todos` / `read_todos`, installed by an agent by default
//! and loadable by name like any bundle. The agent recognises the built-in `write_todos`
//! however it was registered, adds the planning line to the system prompt, and attaches
//! the current list to the newest message of each request. The tools follow the
//! permission manager like any tool registered without a permission of its own.
//!
//! `cargo run --example builtin_planning`

use harnessx::ToolCall;
use harnessx::ToolRegistry;
use harnessx::agent::{Agent, AgentConfig, PLANNING_PROMPT_LINE};
use harnessx::builtin::planning::planning_state;
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{PermissionLevel, PermissionManager};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // By name, into any registry: the same tools, with the common options.
    let registry = ToolRegistry::new();
    let names = registry.load_builtin("planning", json!({"permission": "allow"})).unwrap();
    println!("loaded: {}", names.join(", "));
    let def = registry.get_tool("write_todos").unwrap();
    println!(
        "write_todos: concurrent={}, replay={}, annotations={}",
        def.concurrent,
        def.replay_policy,
        serde_json::to_string(&def.annotations).unwrap()
    );

    // An agent whose model writes a plan on the first turn, then answers.
    let model = FunctionModel::new(|request| {
        Ok(match request.messages.last() {
            Some(Message::User { .. }) if request.messages.len() == 1 => {
                ModelResponse::tool_calls(vec![ToolCall::new(
                    "c1",
                    "write_todos",
                    json!({"todos": [
                        {"content": "Read the config", "status": "completed"},
                        {"content": "Fix the parser", "status": "in_progress"}
                    ]})
                    .to_string(),
                )])
            }
            _ => ModelResponse::text("Done."),
        })
    });
    // Planning off in the config, and the bundle asked for by name: the agent still knows
    // the built-in write_todos, so the line and the list follow it.
    let agent = Agent::builder()
        .model(model)
        .tool("planning")
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    assert_eq!(agent.effective_system_prompt().as_deref(), Some(PLANNING_PROMPT_LINE));
    let result = agent.run("Fix the parser.").await.unwrap();
    println!("answer: {}", result.output);
    let list = planning_state(&agent.tools().get_tool("write_todos").unwrap()).unwrap();
    println!("{}", list.render().unwrap());

    // Under a manager that defaults to DENY, the agent's own planning tools are refused
    // like any other tool without a permission of its own, unless allowed by name.
    let denying = |model| {
        Agent::builder()
            .model(model)
            .permissions(PermissionManager::new(PermissionLevel::Deny))
            .build()
            .unwrap()
    };
    let planner = || {
        FunctionModel::new(|request| {
            Ok(match request.messages.last() {
                Some(Message::User { .. }) => ModelResponse::tool_calls(vec![ToolCall::new(
                    "c1",
                    "write_todos",
                    json!({"todos": [{"content": "Plan", "status": "pending"}]}).to_string(),
                )]),
                _ => ModelResponse::text("Done."),
            })
        })
    };
    let agent = denying(planner());
    agent.run("Plan it.").await.unwrap();
    assert!(agent.planning().unwrap().todos().is_empty());
    println!("under DENY: the list stays empty");
    agent.permissions().set_override("write_todos", PermissionLevel::Allow);
    agent.run("Plan it.").await.unwrap();
    println!("with write_todos allowed: {} item(s)", agent.planning().unwrap().todos().len());
}
