//! Registration style "later registration": create the registry (or agent) first, then
//! register tools before starting a run, optionally overriding their metadata.
//!
//! Spec: `agent.tools.register_tool(fetch_url)`. Run with `cargo run --example registration_later`.

use harnessx::{PermissionLevel, ReplayPolicy, ToolCall, ToolOptions, ToolRegistry, tool};

/// Look up a word in a tiny dictionary.
///
/// Args:
///     word: The word to define.
#[tool(replay_policy = "safe")]
fn define(word: String) -> Result<String, String> {
    match word.as_str() {
        "harness" => Ok("a set of straps for controlling an animal, or a program".into()),
        other => Err(format!("no definition for {other:?}")),
    }
}

/// Count the characters of a text.
#[tool]
async fn count_chars(text: String) -> usize {
    text.chars().count()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `agent.tools()` is a `ToolRegistry`; a plain one works the same way.
    let registry = ToolRegistry::new();
    registry.register_tool(Define)?;
    // Registration options override only what they set; the rest stays as declared.
    let def = registry.register_tool_with(
        CountChars,
        ToolOptions::new().timeout_seconds(120.0).permission(PermissionLevel::Allow),
    )?;
    assert_eq!(def.timeout_seconds, Some(120.0));
    assert_eq!(registry.get_tool("define").map(|d| d.replay_policy), Some(ReplayPolicy::Safe));
    println!("tools: {:?}", registry.tool_names());

    let ok = registry.execute(&ToolCall::new("c1", "define", r#"{"word": "harness"}"#), None).await;
    println!("define(harness) -> {}", ok.content);
    let err = registry.execute(&ToolCall::new("c2", "define", r#"{"word": "zebra"}"#), None).await;
    println!("define(zebra) -> error={} {}", err.is_error, err.content);
    let n = registry.execute(&ToolCall::new("c3", "countChars", r#"{"text": "héllo"}"#), None).await;
    println!("countChars (name repaired to count_chars) -> {}", n.content);
    assert_eq!(n.content, "5");
    Ok(())
}
