//! Fallback models: a request goes to the next model once a model is down (connection
//! failure, 5xx, 429, 529) and its own retries are spent, never on a request the
//! provider refused for what it is; the transcript is written in each provider's
//! format, so a run starts on OpenAI and finishes on Anthropic; each switch is an event.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Reply, Server, fixture};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use harnessx_agent::model::{
    AnthropicModel, FallbackModel, FunctionModel, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ModelRetry, OpenAiModel,
};
use harnessx_agent::{Agent, AgentConfig, AgentEvent};
use harnessx_core::{ToolDefinition, ToolHandler};
use serde_json::json;

/// Retries without waiting: `attempts` per model.
fn quick(attempts: u32) -> ModelRetry {
    ModelRetry { max_attempts: attempts, initial_delay_seconds: 0.0, max_delay_seconds: 0.0 }
}

/// A model that fails every request with `error()` and counts them.
fn failing(name: &str, asked: &Arc<AtomicUsize>, error: fn() -> ModelError) -> Arc<dyn Model> {
    let asked = asked.clone();
    Arc::new(
        FunctionModel::new(move |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            Err(error())
        })
        .with_name(name),
    )
}

fn answering(name: &str, asked: &Arc<AtomicUsize>) -> Arc<dyn Model> {
    let asked = asked.clone();
    Arc::new(
        FunctionModel::new(move |_| {
            asked.fetch_add(1, Ordering::SeqCst);
            Ok(ModelResponse::text("from the backup"))
        })
        .with_name(name),
    )
}

fn http(status: u16) -> ModelError {
    ModelError::Http { status, message: format!("status {status}") }
}

/// A named failure, made afresh for each use.
type Failure = (&'static str, fn() -> ModelError);

/// Each trigger, once the first model's two attempts are spent, goes to the next model;
/// each non-trigger fails at once (one attempt when it is not retryable) and the next
/// model is never asked. Streamed and not.
#[tokio::test]
async fn every_trigger_falls_back_after_the_retries_and_no_other_failure_does() {
    let triggers: [Failure; 5] = [
        ("connection", || ModelError::Transport("connection refused".into())),
        ("500", || http(500)),
        ("503", || http(503)),
        ("429", || http(429)),
        ("529", || http(529)),
    ];
    let others: [Failure; 7] = [
        ("400", || http(400)),
        ("401", || ModelError::Auth("invalid x-api-key".into())),
        ("403", || http(403)),
        ("404", || http(404)),
        ("408", || http(408)),
        ("window", || ModelError::ContextWindow { message: "too long".into(), limit: None, requested: None }),
        ("junk", || ModelError::Protocol("not JSON".into())),
    ];
    for stream in [false, true] {
        for (label, error) in triggers {
            let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let model = FallbackModel::new(vec![
                failing("openai:a", &first, error),
                answering("anthropic:b", &second),
            ])
            .unwrap()
            .retry(quick(2));
            let response = ask(&model, stream).await.unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(response.content, "from the backup", "{label}");
            assert_eq!(response.model.as_deref(), Some("anthropic:b"), "{label}");
            assert_eq!(
                (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
                (2, 1),
                "{label} {stream}"
            );
        }
        for (label, error) in others {
            let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let model = FallbackModel::new(vec![
                failing("openai:a", &first, error),
                answering("anthropic:b", &second),
            ])
            .unwrap()
            .retry(quick(2));
            let e = ask(&model, stream).await.unwrap_err();
            assert_eq!(e, error(), "{label}");
            let attempts = if error().is_retryable() { 2 } else { 1 };
            assert_eq!(
                (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
                (attempts, 0),
                "{label}"
            );
        }
    }
}

async fn ask(model: &FallbackModel, stream: bool) -> Result<ModelResponse, ModelError> {
    let request = ModelRequest::default();
    if stream {
        harnessx_agent::model::collect_response(model.stream(&request)).await
    } else {
        model.complete(&request).await
    }
}

/// When every model is down, the last one's error is the run's; the agent does not
/// retry the whole list again (each model was asked its own attempts, once).
#[tokio::test]
async fn all_down_fails_with_the_last_error_and_the_agent_does_not_retry_the_list() {
    let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let model = FallbackModel::new(vec![
        failing("openai:a", &first, || http(503)),
        failing("anthropic:b", &second, || http(529)),
    ])
    .unwrap()
    .retry(quick(2));
    let agent = Agent::builder()
        .model(model)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let e = agent.run("hi").await.unwrap_err().to_string();
    assert!(e.contains("HTTP 529"), "{e}");
    assert_eq!((first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)), (2, 2));
}

/// A model whose stream shows `shown` events, then fails with a connection error.
struct Cut {
    shown: Vec<ModelEvent>,
}

impl Model for Cut {
    fn name(&self) -> String {
        "openai:cut".into()
    }

    fn stream<'a>(&'a self, _: &'a ModelRequest) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let mut items: Vec<Result<ModelEvent, ModelError>> = self.shown.iter().cloned().map(Ok).collect();
        items.push(Err(ModelError::Transport("connection reset".into())));
        Box::pin(futures_util::stream::iter(items))
    }
}

/// A stream that fails before showing anything goes to the next model; one that has
/// shown text (or a call) fails as it is: the text would show twice.
#[tokio::test]
async fn a_stream_falls_back_only_before_it_showed_anything() {
    let second = Arc::new(AtomicUsize::new(0));
    let quiet = FallbackModel::new(vec![Arc::new(Cut { shown: vec![] }), answering("anthropic:b", &second)])
        .unwrap()
        .retry(quick(1));
    assert_eq!(ask(&quiet, true).await.unwrap().content, "from the backup");
    for shown in [
        ModelEvent::TextDelta("Hel".into()),
        ModelEvent::ToolCallStart { index: 0, id: "c1".into(), name: "f".into() },
    ] {
        let second = Arc::new(AtomicUsize::new(0));
        let model = FallbackModel::new(vec![
            Arc::new(Cut { shown: vec![shown.clone()] }),
            answering("anthropic:b", &second),
        ])
        .unwrap()
        .retry(quick(3));
        let request = ModelRequest::default();
        let mut stream = model.stream(&request);
        assert_eq!(stream.next().await.unwrap().unwrap(), shown);
        assert_eq!(
            stream.next().await.unwrap().unwrap_err(),
            ModelError::Transport("connection reset".into())
        );
        assert!(stream.next().await.is_none());
        drop(stream);
        assert_eq!(second.load(Ordering::SeqCst), 0);
    }
}

/// A non-streamed Messages API answer with only text (written for this test).
const ANTHROPIC_FINAL: &str = r#"{"id":"msg_final","type":"message","role":"assistant","content":[{"type":"text","text":"It is 12 degrees in Edinburgh."}],"stop_reason":"end_turn","usage":{"input_tokens":310,"output_tokens":11}}"#;

/// A run starts on OpenAI (a recorded tool call), OpenAI goes down (503 on every
/// attempt), and Anthropic finishes it: its request carries OpenAI's call as a
/// `tool_use` block and the result as a `tool_result` with the same id. The switch is
/// an event, and each model's usage is counted under its own name.
#[tokio::test]
async fn a_run_starts_on_openai_and_finishes_on_anthropic_with_the_transcript_in_its_format() {
    let down = r#"{"error":{"message":"The server is overloaded.","type":"server_error"}}"#;
    let openai = Server::start(vec![
        Reply::json(200, fixture("openai/chat_nonstream_single_tool_gpt4o.json")),
        Reply::json(503, down),
        Reply::json(503, down),
    ]);
    let anthropic = Server::start(vec![Reply::json(200, ANTHROPIC_FINAL)]);
    let model = FallbackModel::new(vec![
        Arc::new(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", openai.url)).api_key("sk-test")),
        Arc::new(AnthropicModel::new("claude-sonnet-4-5").base_url(&anthropic.url).api_key("sk-ant-test")),
    ])
    .unwrap()
    .retry(quick(2));
    let weather = ToolDefinition::new(
        "GetWeatherArgs",
        "The weather.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": true}),
        ToolHandler::from_async(|args, _| async move { Ok(format!("12C in {}", args["city"]).into()) }),
    );
    let agent = Agent::builder()
        .model(model)
        .tool(weather)
        .config(AgentConfig { planning: false, stream: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("Weather in Edinburgh?").collect().await;
    let fallbacks: Vec<&AgentEvent> =
        events.iter().filter(|e| matches!(e, AgentEvent::ModelFallback { .. })).collect();
    assert_eq!(fallbacks.len(), 1, "{events:?}");
    let AgentEvent::ModelFallback { from, to, reason } = fallbacks[0] else { unreachable!() };
    assert_eq!((from.as_str(), to.as_str()), ("openai:gpt-4o", "anthropic:claude-sonnet-4-5"));
    assert!(reason.starts_with("the model provider answered HTTP 503: "), "{reason}");
    assert!(!reason.contains('\n'));
    let json = serde_json::to_value(fallbacks[0]).unwrap();
    assert_eq!(json["type"], "model_fallback");
    let Some(AgentEvent::RunEnd { output, usage, .. }) = events.last() else { panic!("{:?}", events.last()) };
    assert_eq!(output, "It is 12 degrees in Edinburgh.");
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.requests), (76 + 310, 24 + 11, 2));

    assert_eq!(openai.requests().len(), 3, "one answer, then two attempts that found it down");
    let bodies = anthropic.bodies();
    assert_eq!(bodies.len(), 1);
    let messages = bodies[0]["messages"].as_array().unwrap();
    assert_eq!(messages[0], json!({"role": "user", "content": "Weather in Edinburgh?"}));
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"],
        // With the prompt-cache breakpoint on the last block before the newest turn.
        json!([{"type": "tool_use", "id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "name": "GetWeatherArgs",
                "input": {"city": "Edinburgh", "country": "UK", "units": "c"},
                "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "call_Y6qJ7ofLgOrBnMD5WbVAeiRV");
    assert_eq!(messages[2]["content"][0]["content"], "12C in \"Edinburgh\"");
}

// After a fallback answered, every later request of the run asked the dead primary again,
// with its retries: the switch is made once a run, and announced once.
#[tokio::test]
async fn a_model_that_fell_through_is_not_asked_again_in_the_run() {
    for stream in [false, true] {
        let (first, second) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let asked = second.clone();
        // The backup calls a tool twice, then answers: three requests.
        let backup = FunctionModel::new(move |request| {
            let n = asked.fetch_add(1, Ordering::SeqCst);
            let _ = request;
            Ok(if n < 2 {
                ModelResponse::tool_calls(vec![harnessx_core::ToolCall::new(format!("c{n}"), "noop", "{}")])
            } else {
                ModelResponse::text("done")
            })
        })
        .with_name("anthropic:backup");
        let model =
            FallbackModel::new(vec![failing("openai:primary", &first, || http(503)), Arc::new(backup)])
                .unwrap()
                .retry(quick(2));
        let noop = ToolDefinition::new(
            "noop",
            "Does nothing.",
            json!({"type": "object", "properties": {}}),
            ToolHandler::from_async(|_, _| async { Ok("ok".into()) }),
        );
        let config = AgentConfig { planning: false, stream, ..AgentConfig::default() };
        let agent = Agent::builder().model(model).tool(noop).config(config).build().unwrap();
        let events: Vec<AgentEvent> = agent.run_stream("Go.").collect().await;
        let switches = events.iter().filter(|e| matches!(e, AgentEvent::ModelFallback { .. })).count();
        assert_eq!(switches, 1, "stream {stream}: {events:?}");
        assert_eq!(first.load(Ordering::SeqCst), 2, "stream {stream}: the primary's two attempts, once");
        assert_eq!(second.load(Ordering::SeqCst), 3, "stream {stream}");
        // A new run starts on the primary again.
        let _ = agent.run("Again.").await;
        assert_eq!(first.load(Ordering::SeqCst), 4, "stream {stream}: a new run asks the primary first");
    }
}
