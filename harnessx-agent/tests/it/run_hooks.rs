//! Hooks on the run given to an agent: a blocked prompt makes no model request, added
//! context reaches the model, a stopped response ends the run blocked before its calls
//! run, and `run_end` hears every end once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use harnessx_agent::model::{FunctionModel, Message, ModelRequest, ModelResponse};
use harnessx_agent::{Agent, AgentConfig, AgentEvent, RunOutcome, RunStatus};
use harnessx_core::hooks::{
    Blocked, HookError, ModelTurn, PromptDecision, ResponseDecision, RunEnd, ToolHook, UserPrompt,
};
use harnessx_core::{ToolCall, ToolDefinition, ToolHandler};
use serde_json::json;

/// Answers the run points as told, and writes down what it saw.
#[derive(Clone)]
struct Scripted {
    name: &'static str,
    prompt: PromptDecision,
    /// Stops the run at the response of this turn.
    stop_at: Option<u32>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(name: &'static str, prompt: PromptDecision) -> Self {
        Self { name, prompt, stop_at: None, seen: Arc::default() }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl ToolHook for Scripted {
    fn name(&self) -> &str {
        self.name
    }
    fn user_prompt<'a>(&'a self, p: UserPrompt<'a>) -> BoxFuture<'a, Result<PromptDecision, HookError>> {
        self.seen.lock().unwrap().push(format!("prompt {}", p.prompt));
        Box::pin(std::future::ready(Ok(self.prompt.clone())))
    }
    fn model_response<'a>(&'a self, r: ModelTurn<'a>) -> BoxFuture<'a, Result<ResponseDecision, HookError>> {
        let calls: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
        let line = format!("response {} {:?} calls {calls:?} requests {}", r.turn, r.text, r.usage.requests);
        self.seen.lock().unwrap().push(line);
        let decision = match self.stop_at == Some(r.turn) {
            true => ResponseDecision::Stop { message: "the answer quotes a secret".into() },
            false => ResponseDecision::Continue,
        };
        Box::pin(std::future::ready(Ok(decision)))
    }
    fn run_end<'a>(&'a self, end: RunEnd<'a>) -> BoxFuture<'a, Result<(), HookError>> {
        let blocked = end.blocked.map(|b| b.hook.as_str()).unwrap_or("-");
        let line =
            format!("end {} turns {} blocked by {blocked} output {:?}", end.status, end.turns, end.output);
        self.seen.lock().unwrap().push(line);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A model that calls `echo` once, then answers with the last user message it saw;
/// counts its requests.
fn agent(requests: &Arc<AtomicUsize>, ran: &Arc<AtomicUsize>, hooks: Vec<Scripted>) -> Agent {
    let r = requests.clone();
    let model = FunctionModel::new(move |req: &ModelRequest| {
        r.fetch_add(1, Ordering::SeqCst);
        Ok(match req.messages.last() {
            Some(Message::User { .. }) => {
                ModelResponse::tool_calls(vec![ToolCall::new("c1", "echo", r#"{"text": "hi"}"#)])
            }
            _ => {
                let prompt = req.messages.iter().find_map(|m| match m {
                    Message::User { content, .. } => Some(content.clone()),
                    _ => None,
                });
                ModelResponse::text(format!("the prompt was {:?}", prompt.unwrap_or_default()))
            }
        })
    });
    let ran = ran.clone();
    let echo = ToolDefinition::new(
        "echo",
        "Echoes.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        ToolHandler::from_async(move |args: serde_json::Value, _| {
            let ran = ran.clone();
            async move {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(args["text"].as_str().unwrap_or_default().to_owned().into())
            }
        }),
    );
    let mut builder = Agent::builder()
        .model(model)
        .tool(echo)
        .config(AgentConfig { planning: false, ..AgentConfig::default() });
    for hook in hooks {
        builder = builder.hook(hook);
    }
    builder.build().unwrap()
}

#[tokio::test]
async fn a_blocked_prompt_makes_no_model_request_and_the_run_ends_blocked() {
    let (requests, ran) = (Arc::default(), Arc::default());
    let context = Scripted::new("context", PromptDecision::AddContext { text: "ignored".into() });
    let guard = Scripted::new("guard", PromptDecision::Block { message: "no deploys on fridays".into() });
    let after = Scripted::new("after", PromptDecision::Continue);
    let agent = agent(&requests, &ran, vec![context.clone(), guard.clone(), after.clone()]);
    let mut stream = agent.run_stream("deploy it");
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let state = stream.into_result().unwrap().unwrap();
    assert_eq!(requests.load(Ordering::SeqCst), 0, "no model request");
    assert_eq!(state.status, RunStatus::Blocked);
    let blocked = Blocked { hook: "guard".into(), message: "no deploys on fridays".into() };
    assert_eq!(state.blocked.as_ref(), Some(&blocked));
    assert_eq!(state.run_outcome(), RunOutcome::Blocked { hook: "guard", message: "no deploys on fridays" });
    assert_eq!((state.turns, state.output.as_str()), (0, ""));
    assert_eq!(after.seen(), ["end blocked turns 0 blocked by guard output \"\""], "not asked after a block");
    // Every decision is an event (`call_id` null), then the end.
    let hook = |hook: &str, decision: &str| AgentEvent::Hook {
        hook: hook.into(),
        call_id: None,
        decision: decision.into(),
    };
    assert_eq!(events[..2], [hook("context", "add_context"), hook("guard", "block")]);
    let Some(AgentEvent::RunEnd { status: RunStatus::Blocked, blocked: Some(b), turns: 0, .. }) =
        events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(b, &blocked);
    let end = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(end["blocked"], json!({"hook": "guard", "message": "no deploys on fridays"}));
    assert_eq!(serde_json::to_value(&events[1]).unwrap()["call_id"], serde_json::Value::Null);
}

#[tokio::test]
async fn context_added_by_hooks_reaches_the_model_after_the_prompt_in_order() {
    let (requests, ran) = (Arc::default(), Arc::default());
    let branch = Scripted::new("branch", PromptDecision::AddContext { text: "branch: main".into() });
    let quiet = Scripted::new("quiet", PromptDecision::Continue);
    let time = Scripted::new("time", PromptDecision::AddContext { text: "time: 09:00".into() });
    let agent = agent(&requests, &ran, vec![branch.clone(), quiet, time]);
    let state = agent.run("status?").await.unwrap();
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(state.output, r#"the prompt was "status?\n\nbranch: main\n\ntime: 09:00""#);
    assert_eq!(branch.seen()[0], "prompt status?", "a hook sees the prompt as sent");
}

#[tokio::test]
async fn a_stopped_response_ends_the_run_blocked_before_its_calls_run() {
    let (requests, ran) = (Arc::default(), Arc::default());
    let watch = Scripted { stop_at: Some(1), ..Scripted::new("watch", PromptDecision::Continue) };
    let agent = agent(&requests, &ran, vec![watch.clone()]);
    let state = agent.run("go").await.unwrap();
    assert_eq!(state.status, RunStatus::Blocked);
    assert_eq!(
        state.blocked,
        Some(Blocked { hook: "watch".into(), message: "the answer quotes a secret".into() })
    );
    assert_eq!((requests.load(Ordering::SeqCst), ran.load(Ordering::SeqCst)), (1, 0), "its call did not run");
    assert_eq!(state.turns, 1);
    assert!(
        !state.messages.iter().any(|m| matches!(m, Message::Assistant { .. })),
        "the stopped response is not kept: {:?}",
        state.messages
    );
    assert_eq!(
        watch.seen(),
        [
            "prompt go",
            r#"response 1 "" calls ["c1"] requests 1"#,
            "end blocked turns 1 blocked by watch output \"\""
        ]
    );
}

#[tokio::test]
async fn run_end_hears_the_final_state_once_and_the_response_hooks_each_turn() {
    let (requests, ran) = (Arc::default(), Arc::default());
    let watch = Scripted::new("watch", PromptDecision::Continue);
    let agent = agent(&requests, &ran, vec![watch.clone()]);
    let state = agent.run("go").await.unwrap();
    assert_eq!(state.status, RunStatus::Completed);
    assert_eq!(
        watch.seen(),
        [
            "prompt go",
            r#"response 1 "" calls ["c1"] requests 1"#,
            r#"response 2 "the prompt was \"go\"" calls [] requests 2"#,
            r#"end completed turns 2 blocked by - output "the prompt was \"go\"""#,
        ]
    );
    // A failed run is told too: the model fails.
    let failing =
        FunctionModel::new(|_: &ModelRequest| Err(harnessx_agent::model::ModelError::Other("down".into())));
    let watch = Scripted::new("watch", PromptDecision::Continue);
    let agent = Agent::builder().model(failing).hook(watch.clone()).build().unwrap();
    assert!(agent.run("go").await.is_err());
    let seen = watch.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[1].starts_with("end failed turns 0"), "{seen:?}");
}
