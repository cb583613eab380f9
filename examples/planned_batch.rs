//! A runtime of one's own over a planned batch: one call answered from a record, the
//! others settled against the manager's rules in one go, a question answered by a person
//! (approved for the session, which covers the next call of the tool), then the rest run
//! in call order.
//!
//! `cargo run --example planned_batch`

use harnessx::{
    ApprovalDecision, PermissionLevel, PermissionManager, Permit, RunContext, RunHooks, ToolCall,
    ToolHandler, ToolOptions, ToolRegistry, ToolResult,
};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new();
    let echo = |what: &'static str| {
        ToolHandler::from_async(move |args, _| async move { Ok(format!("{what} {args}").into()) })
    };
    let schema = json!({"type": "object", "properties": {"to": {"type": "string"}}});
    let ask = ToolOptions::new().permission(PermissionLevel::Ask);
    registry.register_with_schema("send", "Send a message.", schema.clone(), echo("sent"), ask)?;
    registry.register_with_schema(
        "look",
        "Look something up.",
        schema,
        echo("looked"),
        ToolOptions::new(),
    )?;

    let calls = [
        ToolCall::new("c1", "look", r#"{"to": "docs"}"#),
        ToolCall::new("c2", "send", r#"{"to": "ana"}"#),
        ToolCall::new("c3", "send", r#"{"to": "bo"}"#),
        ToolCall::new("c4", "nope", "{}"),
    ];
    let mut batch = registry.plan_batch(&calls);
    for planned in batch.iter_mut() {
        let state = match (planned.tool(), planned.result()) {
            (Some(tool), _) => format!("runs {tool}"),
            (None, Some(result)) => format!("settled: {}", result.content.lines().next().unwrap_or("")),
            (None, None) => unreachable!("a call either runs or has a result"),
        };
        println!("#{} {}: {state}", planned.position(), planned.call().id);
    }
    // A result this runtime already recorded: the call does not run again.
    batch.get_mut("c1").ok_or("no c1")?.settle_replayed(ToolResult::success(
        "c1",
        "look",
        "looked (recorded)".into(),
    ));

    let manager = PermissionManager::default();
    let done = batch.authorize(&manager.rules_only(), Some(&manager)).await;
    for question in &done.questions {
        println!("question for {} ({}): {}", question.call_id, question.tool, question.question);
    }
    // A person answers the first question, for the session; the second is covered.
    let first = &done.questions[0];
    let mut call = batch.get_mut(&first.call_id).ok_or("no such call")?;
    let decided = manager.apply(&first.tool, ApprovalDecision::ApproveForSession);
    assert_eq!(call.decide(decided, Some(&manager)), Permit::Runs);
    let mut next = batch.get_mut(&done.questions[1].call_id).ok_or("no such call")?;
    assert_eq!(next.authorize(&manager.rules_only(), Some(&manager)).await, Permit::Runs);

    let hooks = RunHooks::new().on_start(|position| println!("call #{position} starts"));
    for outcome in registry.run_planned(batch, &RunContext::new(), &hooks).await {
        println!("{} ran={}: {}", outcome.result.call_id, outcome.ran, outcome.result.content);
    }
    Ok(())
}
