//! An [`Authorizer`] given to an agent decides its run's calls. (Regression: a run decided
//! with the permission manager's rules alone, and an authorizer given to it was never
//! asked.)

use std::sync::{Arc, Mutex};

use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, RunStatus};
use harnessx_core::{
    AuthRequest, Authorization, Authorizer, Decision, DenyReason, PermissionLevel, PermissionManager,
    ToolCall, ToolDefinition, ToolHandler,
};
use serde_json::{Value, json};

/// Allows `echo` unless its text says `secret`, refuses everything else with a reason,
/// and records what it was asked.
#[derive(Default)]
pub(crate) struct Policy {
    pub(crate) asked: Mutex<Vec<(String, Value)>>,
}

impl Authorizer for Policy {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        self.asked.lock().unwrap().push((request.tool.to_owned(), request.arguments.clone()));
        let refuse = |message: &'static str| Authorization::Deny {
            reason: DenyReason::Denied,
            message: message.into(),
        };
        Decision::Later(Box::pin(async move {
            match request.tool {
                "echo" if request.arguments["text"].as_str().is_some_and(|t| t.contains("secret")) => {
                    refuse("the policy keeps secrets")
                }
                "echo" => Authorization::Allow,
                "panics" => panic!("a policy bug"),
                _ => refuse("not on the policy's list"),
            }
        }))
    }
}

fn tool(name: &str, ran: Arc<Mutex<Vec<String>>>) -> ToolDefinition {
    let own = name.to_owned();
    ToolDefinition::new(
        name,
        "Echoes.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        ToolHandler::from_async(move |args: Value, _| {
            let (ran, own) = (ran.clone(), own.clone());
            async move {
                ran.lock().unwrap().push(own);
                Ok(args["text"].as_str().unwrap_or_default().to_owned().into())
            }
        }),
    )
}

fn calls() -> Vec<ToolCall> {
    vec![
        ToolCall::new("c1", "echo", r#"{"text": "hello"}"#),
        ToolCall::new("c2", "echo", r#"{"text": "the secret"}"#),
        ToolCall::new("c3", "other", r#"{"text": "x"}"#),
        ToolCall::new("c4", "panics", r#"{"text": "x"}"#),
    ]
}

/// An agent whose model makes [`calls`] once, then answers; its manager would allow
/// everything.
pub(crate) fn agent(policy: Arc<Policy>, ran: Arc<Mutex<Vec<String>>>) -> Agent {
    let script = Mutex::new(vec![ModelResponse::text("done"), ModelResponse::tool_calls(calls())]);
    let model = FunctionModel::new(move |_: &ModelRequest| Ok(script.lock().unwrap().pop().unwrap()));
    Agent::builder()
        .model(model)
        .tool(tool("echo", ran.clone()))
        .tool(tool("other", ran.clone()))
        .tool(tool("panics", ran))
        .permissions(PermissionManager::new(PermissionLevel::Allow))
        .authorizer_arc(policy)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap()
}

/// The tool results of a run, by call id.
pub(crate) fn results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, content, is_error, .. } => {
                Some((call_id.clone(), content.clone(), *is_error))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn expected() -> Vec<(String, String, bool)> {
    vec![
        ("c1".into(), "hello".into(), false),
        ("c2".into(), "the policy keeps secrets".into(), true),
        ("c3".into(), "not on the policy's list".into(), true),
        ("c4".into(), "Permission denied".into(), true),
    ]
}

#[tokio::test]
async fn an_authorizer_given_to_an_agent_decides_its_calls() {
    let policy = Arc::new(Policy::default());
    let ran = Arc::new(Mutex::new(Vec::new()));
    let state = agent(policy.clone(), ran.clone()).run("Go.").await.unwrap();
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(results(&state.messages), expected());
    assert_eq!(*ran.lock().unwrap(), ["echo"], "only the allowed call ran");
    let asked: Vec<String> = policy.asked.lock().unwrap().iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(asked, ["echo", "echo", "other", "panics"]);
    assert_eq!(policy.asked.lock().unwrap()[1].1, json!({"text": "the secret"}), "asked with the arguments");
}
