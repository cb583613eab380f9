//! Hooks on a registry's calls: one refuses absolute paths, one moves every write into a
//! `sandbox/` folder (a deny rule still refuses what it moves into `secrets/`), one
//! answers from a cache, and a post hook redacts what results say. Then an agent's run
//! hooks: a prompt that holds a key is blocked before any model request, another gets
//! context added, and a guardrail stops a run whose model asks to delete something.
//!
//! `cargo run --example hooks`

use futures_util::future::BoxFuture;
use harnessx::agent::{Agent, AgentConfig};
use harnessx::hooks::{
    HookError, ModelTurn, PostDecision, PostToolUse, PreDecision, PreToolUse, PromptDecision,
    ResponseDecision, ToolHook, ToolHooks, UserPrompt,
};
use harnessx::model::{FunctionModel, Message, ModelResponse};
use harnessx::{
    PermissionLevel, PermissionManager, RunContext, ToolCall, ToolHandler, ToolOptions, ToolOutput,
    ToolRegistry,
};
use serde_json::json;

struct Steer;

impl ToolHook for Steer {
    fn name(&self) -> &str {
        "steer"
    }

    fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
        let path = call.arguments["path"].as_str().unwrap_or_default().to_owned();
        Box::pin(async move {
            Ok(if path.starts_with('/') {
                PreDecision::Deny { message: format!("{path} is absolute: use a path inside the project") }
            } else if path == "cached.md" {
                PreDecision::Answer { result: ToolOutput::text("wrote cached.md (from the cache)") }
            } else {
                PreDecision::Rewrite { arguments: json!({"path": format!("sandbox/{path}")}) }
            })
        })
    }

    fn post_tool_use<'a>(&'a self, call: PostToolUse<'a>) -> BoxFuture<'a, Result<PostDecision, HookError>> {
        let redacted = call.content.replace("token-123", "[redacted]");
        Box::pin(async move { Ok(PostDecision::Replace { result: ToolOutput::text(redacted) }) })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new();
    let write = ToolHandler::from_async(|args, _| async move {
        Ok(format!("wrote {} with token-123", args["path"].as_str().unwrap_or_default()).into())
    });
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    registry.register_with_schema("write_file", "Write a file.", schema, write, ToolOptions::new())?;

    let manager = PermissionManager::default();
    manager.add_rule(PermissionLevel::Deny, "write_file(path=sandbox/secrets/**)")?;
    let ctx = RunContext::new().with_permissions(manager).with_hooks(ToolHooks::new().with(Steer));
    for path in ["notes.md", "/etc/passwd", "secrets/key.txt", "cached.md"] {
        let call = ToolCall::new("c1", "write_file", json!({"path": path}).to_string());
        let result = registry.execute_batch(&[call], &ctx).await.pop().ok_or("no result")?;
        println!("{path}: {}{}", if result.is_error { "refused: " } else { "" }, result.content);
    }

    // The run points: on an agent, before its first request and after each response.
    let model = FunctionModel::new(|req| {
        let Some(Message::User { content, .. }) = req.messages.last() else {
            return Ok(ModelResponse::text("?"));
        };
        Ok(if content.contains("clean up") {
            ModelResponse::tool_calls(vec![ToolCall::new("c1", "delete_file", r#"{"path": "."}"#)])
        } else {
            ModelResponse::text(format!("I read: {content:?}"))
        })
    });
    let agent = Agent::builder()
        .model(model)
        .hook(Gate)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()?;
    for prompt in ["Deploy with sk-live-123", "What changed?", "Please clean up"] {
        let state = agent.run(prompt).await?;
        match &state.blocked {
            Some(blocked) => println!("{prompt:?}: blocked by {}: {}", blocked.hook, blocked.message),
            None => println!("{prompt:?}: {}", state.output),
        }
    }
    Ok(())
}

/// Screens prompts (no keys; every prompt gets the release branch's name) and responses
/// (no deleting).
struct Gate;

impl ToolHook for Gate {
    fn name(&self) -> &str {
        "gate"
    }

    fn user_prompt<'a>(&'a self, prompt: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
        let decision = if prompt.prompt.contains("sk-") {
            PromptDecision::Block { message: "the prompt holds a key: remove it and send again".into() }
        } else {
            PromptDecision::AddContext { text: "The release branch is release/2.1.".into() }
        };
        Box::pin(std::future::ready(Ok(decision)))
    }

    fn model_response<'a>(
        &'a self,
        turn: ModelTurn<'a>,
    ) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
        let deletes = turn.tool_calls.iter().any(|c| c.name.starts_with("delete"));
        let decision = match deletes {
            true => ResponseDecision::Stop { message: "the model asked to delete files".into() },
            false => ResponseDecision::Continue,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
}
