//! The agent builder through the facade: `#[tool]` structs, built-in names and
//! definitions mix in one builder (the spec's `Agent(tools=[fetch_url, "web", definition])`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use harnessx::agent::{Agent, AgentConfig};
use harnessx::model::TestModel;
use harnessx::{ToolCall, ToolDefinition, ToolHandler};
use serde_json::json;

fn echo_tool(runs: Arc<AtomicUsize>) -> ToolDefinition {
    ToolDefinition::new(
        "echo",
        "Echo v.",
        json!({"type": "object", "properties": {"v": {"type": "string"}}}),
        ToolHandler::from_async(move |args, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("echo:{}", args["v"].as_str().unwrap_or_default()).into()) }
        }),
    )
}

fn no_planning() -> AgentConfig {
    AgentConfig { planning: false, ..AgentConfig::default() }
}

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[harnessx::tool(permission = "allow", replay_policy = "safe")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

#[tokio::test]
async fn tool_structs_built_in_names_and_definitions_mix_in_one_builder() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder()
        .model(TestModel::new().call_tools(["calculate"]))
        .tool(Calculate)
        .tool("read_file")
        .tool(echo_tool(runs))
        .config(no_planning())
        .build()
        .unwrap();
    assert_eq!(agent.tools().tool_names(), ["calculate", "read_file", "echo"]);
    let def = agent.tools().get_tool("calculate").unwrap();
    assert_eq!(def.permission, Some(harnessx::PermissionLevel::Allow));
    let result = agent.run("multiply").await.unwrap();
    assert_eq!(result.output, "Ran 1 tool call:\n- calculate: 0");
}

#[tokio::test]
async fn an_agent_binds_the_sandbox_it_is_given_and_bash_runs_there() {
    use harnessx::builtin::sandbox::LocalSandbox;

    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::builder()
        .tool("bash")
        .sandbox(LocalSandbox::new().working_dir(dir.path()))
        .config(no_planning())
        .build()
        .unwrap();
    let sandbox = agent.tools().sandbox().expect("the agent's registry exposes the binding");
    assert_eq!(sandbox.name(), "local");
    let result = agent.tools().execute(&ToolCall::new("c", "run_bash", r#"{"command": "pwd"}"#), None).await;
    let canonical = dir.path().canonicalize().unwrap();
    assert!(result.content.contains(canonical.to_str().unwrap()), "{}", result.content);

    // Without one, loading `bash` binds a local sandbox.
    let agent = Agent::builder().tool("bash").config(no_planning()).build().unwrap();
    assert_eq!(agent.tools().sandbox().unwrap().name(), "local");
    // And a ToolPolicy default does not change run_bash's own timeout.
    let policy = harnessx::ToolPolicy { default_timeout_seconds: Some(5.0), ..Default::default() };
    let agent =
        Agent::builder().tool("bash").config(AgentConfig { tools: policy, ..no_planning() }).build().unwrap();
    assert_eq!(agent.tools().effective_timeout_seconds("run_bash"), Some(300.0));
}
