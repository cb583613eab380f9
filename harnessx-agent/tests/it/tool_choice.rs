//! Tool choice: the request bodies each adapter sends for every mapping (pinned), the
//! reset to `auto` after a turn with tool calls (and without it), the unknown-tool error,
//! the test model following the choice, and a run against a loopback OpenAI-compatible
//! server under `required`.

use crate::common;

use std::sync::{Arc, Mutex};

use common::{Reply, Server};
use harnessx_agent::model::{
    AnthropicModel, FunctionModel, Message, Model, ModelRequest, ModelResponse, OpenAiModel, TestModel,
    collect_response,
};
use harnessx_agent::{Agent, AgentConfig, AgentError, RunLimits, ToolChoice};
use harnessx_core::registry::ToolSpec;
use harnessx_core::{ToolCall, ToolDefinition, ToolHandler};
use harnessx_test_support::sse::openai as openai_sse;
use serde_json::{Value, json};

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city.".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    }
}

fn request(tool_choice: ToolChoice, parallel_tool_calls: Option<bool>) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user("Weather in Paris?")],
        tools: vec![weather_tool()],
        tool_choice,
        parallel_tool_calls,
        ..ModelRequest::default()
    }
}

/// OpenAI's own API: `auto` goes as nothing (other servers get `"auto"`, see
/// `other_servers_get_auto_spelled_out`).
fn openai() -> OpenAiModel {
    OpenAiModel::new("gpt-4o").base_url("https://api.openai.com/v1").api_key("sk-test")
}

fn anthropic() -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5").base_url("http://localhost:1").api_key("sk-ant-test")
}

fn forced() -> ToolChoice {
    ToolChoice::Tool("get_weather".into())
}

/// The body's keys after `tools`, with their values.
fn after_tools(body: &Value) -> Vec<(String, Value)> {
    let object = body.as_object().unwrap();
    object.iter().skip_while(|(k, _)| *k != "tools").skip(1).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn pairs(expected: &[(&str, Value)]) -> Vec<(String, Value)> {
    expected.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

#[test]
fn openai_bodies_for_every_mapping_are_exact() {
    let function = json!({"type": "function", "function": {"name": "get_weather"}});
    let cases = [
        (ToolChoice::Auto, None, vec![]),
        (ToolChoice::Required, None, vec![("tool_choice", json!("required"))]),
        (ToolChoice::None, None, vec![("tool_choice", json!("none"))]),
        (forced(), None, vec![("tool_choice", function.clone())]),
        (ToolChoice::Auto, Some(false), vec![("parallel_tool_calls", json!(false))]),
        (ToolChoice::Auto, Some(true), vec![("parallel_tool_calls", json!(true))]),
        (
            ToolChoice::Required,
            Some(false),
            vec![("tool_choice", json!("required")), ("parallel_tool_calls", json!(false))],
        ),
        (forced(), Some(false), vec![("tool_choice", function), ("parallel_tool_calls", json!(false))]),
    ];
    for (choice, parallel, expected) in cases {
        let body = openai().request_body(&request(choice.clone(), parallel), false);
        assert_eq!(after_tools(&body), pairs(&expected), "{choice:?} {parallel:?}");
    }
}

#[test]
fn other_servers_get_auto_spelled_out() {
    let local = OpenAiModel::new("qwen").base_url("http://localhost:1/v1").without_api_key();
    for (choice, parallel) in [(ToolChoice::Auto, None), (ToolChoice::Auto, Some(false))] {
        let body = local.request_body(&request(choice, parallel), false);
        let mut expected = vec![("tool_choice", json!("auto"))];
        expected.extend(parallel.map(|p| ("parallel_tool_calls", json!(p))));
        assert_eq!(after_tools(&body), pairs(&expected), "{parallel:?}");
    }
    for choice in [ToolChoice::Required, ToolChoice::None, forced()] {
        let body = local.request_body(&request(choice.clone(), None), false);
        assert_eq!(
            body["tool_choice"],
            openai().request_body(&request(choice.clone(), None), false)["tool_choice"]
        );
    }
}

#[test]
fn anthropic_bodies_for_every_mapping_are_exact() {
    let cases = [
        (ToolChoice::Auto, None, None),
        (ToolChoice::Auto, Some(true), None),
        (ToolChoice::Required, None, Some(json!({"type": "any"}))),
        (ToolChoice::None, None, Some(json!({"type": "none"}))),
        (forced(), None, Some(json!({"type": "tool", "name": "get_weather"}))),
        (ToolChoice::Auto, Some(false), Some(json!({"type": "auto", "disable_parallel_tool_use": true}))),
        (ToolChoice::Required, Some(false), Some(json!({"type": "any", "disable_parallel_tool_use": true}))),
        (
            forced(),
            Some(false),
            Some(json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true})),
        ),
        // `none` calls no tool, so there is nothing to run in parallel.
        (ToolChoice::None, Some(false), Some(json!({"type": "none"}))),
    ];
    for (choice, parallel, expected) in cases {
        let body = anthropic().request_body(&request(choice.clone(), parallel), false);
        let expected: Vec<(&str, Value)> = expected.into_iter().map(|v| ("tool_choice", v)).collect();
        assert_eq!(after_tools(&body), pairs(&expected), "{choice:?} {parallel:?}");
    }
}

#[test]
fn without_tools_neither_adapter_sends_a_tool_choice() {
    for choice in [ToolChoice::Required, ToolChoice::None, forced()] {
        let mut req = request(choice, Some(false));
        req.tools.clear();
        let body = openai().request_body(&req, false);
        assert_eq!(
            body,
            json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "Weather in Paris?"}]})
        );
        let body = anthropic().request_body(&req, false);
        let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["model", "max_tokens", "messages"]);
    }
}

#[tokio::test]
async fn the_wire_body_under_required_is_exact() {
    let server = Server::start(vec![Reply::event_stream(openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
    ]))]);
    let model = OpenAiModel::new("qwen").base_url(format!("{}/v1", server.url)).without_api_key();
    let required = request(ToolChoice::Required, Some(false));
    let response = collect_response(model.stream(&required)).await.unwrap();
    assert_eq!(response.content, "ok");
    assert_eq!(
        server.requests()[0].body,
        json!({
            "model": "qwen",
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
            }}],
            "tool_choice": "required",
            "parallel_tool_calls": false,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[test]
fn the_default_request_serializes_as_before_and_a_set_choice_shows() {
    let plain = serde_json::to_value(ModelRequest::default()).unwrap();
    assert_eq!(plain, json!({"messages": [], "tools": []}));
    let set = serde_json::to_value(request(forced(), Some(false))).unwrap();
    assert_eq!(set["tool_choice"], json!({"tool": "get_weather"}));
    assert_eq!(set["parallel_tool_calls"], false);
}

fn lookup() -> ToolDefinition {
    ToolDefinition::new(
        "lookup",
        "Look a word up.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
        ToolHandler::from_async(|args, _| async move { Ok(format!("found {}", args["word"]).into()) }),
    )
}

/// A model that calls `lookup` while the request requires a tool and answers otherwise,
/// as an obedient small model would; it records each request's choice.
fn obedient(log: Arc<Mutex<Vec<ToolChoice>>>) -> FunctionModel {
    FunctionModel::new(move |req| {
        log.lock().unwrap().push(req.tool_choice.clone());
        let turn = req.messages.iter().filter(|m| matches!(m, Message::Assistant { .. })).count();
        Ok(match req.tool_choice {
            ToolChoice::Required => ModelResponse::tool_calls(vec![ToolCall::new(
                format!("c{turn}"),
                "lookup",
                r#"{"word":"x"}"#,
            )]),
            _ => ModelResponse::text("the answer"),
        })
    })
}

fn config(tool_choice: ToolChoice, reset_tool_choice: bool) -> AgentConfig {
    AgentConfig {
        planning: false,
        tool_choice,
        reset_tool_choice,
        limits: RunLimits { max_turns: Some(4), ..RunLimits::default() },
        ..AgentConfig::default()
    }
}

#[tokio::test]
async fn required_resets_to_auto_after_a_turn_with_tool_calls() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(obedient(log.clone()))
        .tool(lookup())
        .config(config(ToolChoice::Required, true))
        .build()
        .unwrap();
    let result = agent.run("Look x up.").await.unwrap();
    assert_eq!((result.output.as_str(), result.turns), ("the answer", 2));
    assert_eq!(*log.lock().unwrap(), [ToolChoice::Required, ToolChoice::Auto]);
    // The stream runs the same loop.
    log.lock().unwrap().clear();
    let events: Vec<_> = futures_util::StreamExt::collect::<Vec<_>>(agent.run_stream("Again.")).await;
    assert!(matches!(events.last(), Some(harnessx_agent::AgentEvent::RunEnd { .. })), "{events:?}");
    assert_eq!(*log.lock().unwrap(), [ToolChoice::Required, ToolChoice::Auto]);
}

#[tokio::test]
async fn without_the_reset_required_stays_until_max_turns() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(obedient(log.clone()))
        .tool(lookup())
        .config(config(ToolChoice::Required, false))
        .build()
        .unwrap();
    let state = agent.run("Look x up.").await.unwrap();
    assert_eq!(
        (state.status, state.limit),
        (harnessx_agent::RunStatus::LimitReached, Some(harnessx_agent::Limit::Turns))
    );
    assert_eq!(*log.lock().unwrap(), vec![ToolChoice::Required; 4]);
}

#[tokio::test]
async fn a_turn_without_tool_calls_keeps_the_choice_and_parallel_calls_stay_set() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    // Under `none` the model cannot call, so nothing resets it; the parallel setting is
    // not a choice and is never reset.
    let model = FunctionModel::new(move |req| {
        log.lock().unwrap().push((req.tool_choice.clone(), req.parallel_tool_calls));
        Ok(ModelResponse::text("no tools needed"))
    });
    let agent = Agent::builder()
        .model(model)
        .tool(lookup())
        .config(AgentConfig { parallel_tool_calls: Some(false), ..config(ToolChoice::None, true) })
        .build()
        .unwrap();
    agent.run("Hi.").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [(ToolChoice::None, Some(false))]);
}

#[tokio::test]
async fn forcing_an_unregistered_tool_fails_before_the_first_request_and_lists_the_tools() {
    let requests = Arc::new(Mutex::new(0));
    let count = requests.clone();
    let model = FunctionModel::new(move |_| {
        *count.lock().unwrap() += 1;
        Ok(ModelResponse::text("unreachable"))
    });
    let agent = Agent::builder()
        .model(model)
        .tool(lookup())
        .config(config(ToolChoice::Tool("lookpu".into()), true))
        .build()
        .unwrap();
    let e = agent.run("Hi.").await.unwrap_err();
    assert_eq!(e, AgentError::UnknownToolChoice { name: "lookpu".into(), registered: vec!["lookup".into()] });
    assert_eq!(
        e.to_string(),
        "tool_choice forces the tool \"lookpu\", which is not registered (did you mean \"lookup\"?); registered tools: lookup. Name one of them, or use auto, required or none"
    );
    assert_eq!(agent.check_tool_choice(), Err(e));
    assert_eq!(*requests.lock().unwrap(), 0);
}

#[tokio::test]
async fn forcing_a_registered_tool_sends_it_then_resets() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::builder()
        .model(FunctionModel::new({
            let log = log.clone();
            move |req| {
                log.lock().unwrap().push(req.tool_choice.clone());
                Ok(match req.messages.last() {
                    Some(Message::User { .. }) => {
                        ModelResponse::tool_calls(vec![ToolCall::new("c1", "lookup", r#"{"word":"y"}"#)])
                    }
                    _ => ModelResponse::text("done"),
                })
            }
        }))
        .tool(lookup())
        .config(config(ToolChoice::Tool("lookup".into()), true))
        .build()
        .unwrap();
    assert_eq!(agent.check_tool_choice(), Ok(()));
    agent.run("Hi.").await.unwrap();
    assert_eq!(*log.lock().unwrap(), [ToolChoice::Tool("lookup".into()), ToolChoice::Auto]);
}

#[tokio::test]
async fn the_test_model_follows_none_and_a_forced_tool() {
    let second = ToolDefinition::new(
        "other",
        "Another tool.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_async(|_, _| async { Ok("other ran".to_string().into()) }),
    );
    let agent = |choice| {
        Agent::builder()
            .model(TestModel::new())
            .tool(lookup())
            .tool(second.clone())
            .config(config(choice, true))
            .build()
            .unwrap()
    };
    let none = agent(ToolChoice::None).run("Hi.").await.unwrap();
    assert_eq!((none.output.as_str(), none.turns), ("success (no tool calls)", 1));
    let forced = agent(ToolChoice::Tool("other".into())).run("Hi.").await.unwrap();
    assert_eq!(forced.output, "Ran 1 tool call:\n- other: other ran");
    let every = agent(ToolChoice::Required).run("Hi.").await.unwrap();
    assert!(every.output.starts_with("Ran 2 tool calls:"), "{}", every.output);
}

#[tokio::test]
async fn a_loopback_server_gets_required_then_nothing_and_the_run_ends_with_an_answer() {
    let tool_turn = openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"word\": \"x\"}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let final_turn = openai_sse(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "x is found."}, "finish_reason": "stop"}]}),
    ]);
    let server = Server::start(vec![Reply::event_stream(tool_turn), Reply::event_stream(final_turn)]);
    let agent = Agent::builder()
        .model(OpenAiModel::new("llama").base_url(format!("{}/v1", server.url)).without_api_key())
        .tool(lookup())
        .config(config(ToolChoice::Required, true))
        .build()
        .unwrap();
    let result = agent.run("Look x up.").await.unwrap();
    assert_eq!((result.output.as_str(), result.turns), ("x is found.", 2));
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tool_choice"], "required");
    // After the call, `auto`: spelled out for a server that is not OpenAI.
    assert_eq!(bodies[1]["tool_choice"], "auto", "{}", bodies[1]);
    let tool = bodies[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["content"], "found \"x\"");
}

fn weather() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "Weather for a place.",
        json!({"type": "object"}),
        ToolHandler::from_async(|_, _| async move { Ok("Sunny, 21 °C.".into()) }),
    )
}

/// Recorded provider streams (a tool call, then text) replayed on loopback, at every
/// split: the forced choice goes on the first request only, and the run ends.
#[tokio::test]
async fn recorded_streams_under_a_forced_choice_reset_after_the_call() {
    for split in common::SPLITS {
        let server = Server::start(vec![
            Reply::sse(common::fixture("openai/chat_stream_single_tool_gpt4o.sse"), split),
            Reply::sse(common::fixture("openai/chat_stream_text_only_gpt4o.sse"), split),
        ]);
        let agent = Agent::builder()
            .model(OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).without_api_key())
            .tool(weather())
            .config(config(ToolChoice::Required, true))
            .build()
            .unwrap();
        let result = agent.run("Weather?").await.unwrap();
        assert_eq!(result.turns, 2, "split {split:?}");
        let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
        assert_eq!(bodies[0]["tool_choice"], "required", "split {split:?}");
        assert_eq!(bodies[1]["tool_choice"], "auto", "split {split:?}: {}", bodies[1]);

        let server = Server::start(vec![
            Reply::sse(common::fixture("anthropic/messages_stream_text_then_tool_use.sse"), split),
            Reply::sse(common::fixture("anthropic/messages_stream_text_only.sse"), split),
        ]);
        let agent = Agent::builder()
            .model(AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test"))
            .tool(weather())
            .config(AgentConfig { parallel_tool_calls: Some(false), ..config(forced(), true) })
            .build()
            .unwrap();
        let result = agent.run("Weather?").await.unwrap();
        assert_eq!(result.turns, 2, "split {split:?}");
        let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
        assert_eq!(
            bodies[0]["tool_choice"],
            json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}),
            "split {split:?}"
        );
        assert_eq!(
            bodies[1]["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true}),
            "split {split:?}: reset to auto, parallel calls still off"
        );
    }
}
