//! `#[tool(collect)]` submits tools to the global collection; `register_collected`
//! registers them all, sorted by name.

use harnessx::{CollectedTool, ToolCall, ToolRegistry, tool};

/// Echo the text back.
#[tool(collect)]
fn echo(text: String) -> String {
    text
}

/// Add one.
#[tool(collect, replay_policy = "safe")]
async fn add_one(n: i64) -> i64 {
    n + 1
}

/// Not collected: registered only by hand.
#[tool]
fn hidden() -> &'static str {
    "hidden"
}

#[tokio::test]
async fn collected_tools_register_together() {
    let registry = ToolRegistry::new();
    let names = registry.register_collected().unwrap();
    assert_eq!(names, ["add_one", "echo"]);
    assert!(!registry.contains("hidden"));
    let r = registry.execute(&ToolCall::new("c", "add_one", r#"{"n": 41}"#), None).await;
    assert_eq!(r.content, "42");
    // Registering the collection twice fails on the duplicate names rather than replacing.
    let err = registry.register_collected().unwrap_err();
    assert!(err.to_string().contains("already registered"), "{err}");
    registry.register_tool(Hidden).unwrap();
    assert_eq!(CollectedTool::all().len(), 2);
}
