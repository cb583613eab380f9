//! Hooks given to an agent see its run's calls: a refusal, a rewrite the history shows, a
//! rewrite a deny rule still refuses, an answer from a cache and a redaction.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, RunStatus};
use harnessx_core::hooks::{HookError, PostDecision, PostToolUse, PreDecision, PreToolUse, ToolHook};
use harnessx_core::{PermissionLevel, PermissionManager, ToolCall, ToolOutput};
use serde_json::json;

use crate::authorizer::results;

struct Guard;

impl ToolHook for Guard {
    fn name(&self) -> &str {
        "guard"
    }
    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        let text = call.arguments["text"].as_str().unwrap_or_default();
        let decision = match text {
            "rm -rf /" => PreDecision::Deny { message: "not that".into() },
            "move me" => PreDecision::Rewrite { arguments: json!({"text": "moved"}) },
            "smuggle" => PreDecision::Rewrite { arguments: json!({"text": "secret plans"}) },
            "cached" => PreDecision::Answer { result: ToolOutput::text("from the cache") },
            _ => PreDecision::Continue,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        let decision = match call.content.contains("42") {
            true => {
                PostDecision::Replace { result: ToolOutput::text(call.content.replace("42", "[redacted]")) }
            }
            false => PostDecision::Keep,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
}

#[tokio::test]
async fn hooks_given_to_an_agent_decide_rewrite_answer_and_redact_its_calls() {
    let calls = vec![
        ToolCall::new("c1", "echo", r#"{"text": "rm -rf /"}"#),
        ToolCall::new("c2", "echo", r#"{"text": "move me"}"#),
        ToolCall::new("c3", "echo", r#"{"text": "smuggle"}"#),
        ToolCall::new("c4", "echo", r#"{"text": "cached"}"#),
        ToolCall::new("c5", "echo", r#"{"text": "the answer is 42"}"#),
    ];
    let script = Mutex::new(vec![ModelResponse::text("done"), ModelResponse::tool_calls(calls)]);
    let model = FunctionModel::new(move |_: &ModelRequest| Ok(script.lock().unwrap().pop().unwrap()));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let echo = harnessx_core::ToolDefinition::new(
        "echo",
        "Echoes.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        harnessx_core::ToolHandler::from_async(move |args: serde_json::Value, _| {
            let r = r.clone();
            async move {
                let text = args["text"].as_str().unwrap_or_default().to_owned();
                r.lock().unwrap().push(text.clone());
                Ok(text.into())
            }
        }),
    );
    let manager = PermissionManager::new(PermissionLevel::Allow);
    manager.add_rule(PermissionLevel::Deny, "echo(text=secret*)").unwrap();
    let agent = Agent::builder()
        .model(model)
        .tool(echo)
        .permissions(manager)
        .hook(Guard)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let state = agent.run("Go.").await.unwrap();
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(
        results(&state.messages),
        [
            ("c1".to_owned(), "not that".to_owned(), true),
            ("c2".into(), "moved".into(), false),
            ("c3".into(), "Permission denied".into(), true),
            ("c4".into(), "from the cache".into(), false),
            ("c5".into(), "the answer is [redacted]".into(), false),
        ]
    );
    assert_eq!(*ran.lock().unwrap(), ["moved", "the answer is 42"]);
    // The history shows the arguments that ran.
    let made = state.messages.iter().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => Some(tool_calls.clone()),
        _ => None,
    });
    assert_eq!(made.unwrap()[1].arguments, r#"{"text":"moved"}"#);
}
