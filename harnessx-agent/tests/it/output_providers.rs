//! Typed results over the provider adapters: the request body of each mode pinned for
//! OpenAI-compatible servers and Anthropic, and whole runs against loopback servers
//! (OpenAI-compatible streamed and not, Anthropic streamed and not) whose first answer
//! is refused and second accepted.

use crate::common::{Reply, Server};

use harnessx_agent::model::{AnthropicModel, Message, Model, ModelRequest, OpenAiModel};
use harnessx_agent::output::{Output, OutputMode};
use harnessx_agent::{Agent, AgentConfig};
use harnessx_core::schemars::{self, JsonSchema};
use harnessx_test_support::sse;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Weather {
    city: String,
    celsius: i32,
    note: Option<String>,
}

const SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"},"celsius":{"type":"integer","format":"int32","minimum":-90,"maximum":60},"note":{"type":["string","null"]}},"required":["city","celsius"]}"#;

fn output() -> Output {
    Output::json_schema(serde_json::from_str(SCHEMA).unwrap()).unwrap()
}

/// The first request of a run of `mode`, as the run loop builds it (no tools of the
/// agent's own, no planning).
async fn first_request(mode: OutputMode) -> ModelRequest {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    let model = harnessx_agent::model::FunctionModel::new(move |request| {
        *keep.lock().unwrap() = Some(request.clone());
        Err(harnessx_agent::model::ModelError::Other("stop here".into()))
    });
    let config = AgentConfig { planning: false, model_retry: no_retry(), ..AgentConfig::default() };
    let agent = Agent::builder().model(model).system_prompt("Be brief.").config(config).build().unwrap();
    agent.run_with_output("Weather in Paris?", output().mode(mode)).await.unwrap_err();
    seen.lock().unwrap().take().unwrap()
}

fn no_retry() -> harnessx_agent::model::ModelRetry {
    harnessx_agent::model::ModelRetry { max_attempts: 1, ..Default::default() }
}

fn openai() -> OpenAiModel {
    OpenAiModel::new("gpt-4o").base_url("https://api.openai.com/v1").api_key("sk-test")
}

/// Without cache breakpoints: these bodies pin the output modes (`models_anthropic` pins
/// the breakpoints).
fn anthropic() -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5")
        .base_url("http://localhost:1")
        .api_key("sk-ant-test")
        .prompt_cache(false)
}

#[tokio::test]
async fn openai_bodies_of_each_mode_are_pinned() {
    let tool = openai().request_body(&first_request(OutputMode::Tool).await, false);
    assert_eq!(
        tool,
        json!({
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
            "tools": [{"type": "function", "function": {
                "name": "final_result",
                "description": "Give the final answer. Call it once the work is done: its arguments are the answer, and the run ends.",
                "parameters": serde_json::from_str::<Value>(SCHEMA).unwrap()
            }}]
        })
    );
    let native = openai().request_body(&first_request(OutputMode::Native).await, true);
    assert_eq!(
        native,
        json!({
            "model": "gpt-4o",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "final_result",
                // The strict dialect: every property required, the optional ones nullable.
                "schema": {"type": "object", "properties": {
                    "city": {"type": "string"},
                    "celsius": {"type": "integer", "format": "int32", "minimum": -90, "maximum": 60},
                    "note": {"type": ["string", "null"]}
                }, "required": ["city", "celsius", "note"], "additionalProperties": false},
                "strict": true
            }},
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    let prompted = openai().request_body(&first_request(OutputMode::Prompted).await, false);
    assert_eq!(
        prompted,
        json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": format!("Be brief.\n\nGive your final answer as one JSON value that matches the JSON Schema below, with nothing before or after it (a ```json fence around it is fine). Use tools first if you need them.\n\n{SCHEMA}")},
                {"role": "user", "content": "Weather in Paris?"}
            ]
        })
    );
}

#[tokio::test]
async fn anthropic_bodies_of_each_mode_are_pinned() {
    let tool = anthropic().request_body(&first_request(OutputMode::Tool).await, false);
    assert_eq!(
        tool,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [{
                "name": "final_result",
                "description": "Give the final answer. Call it once the work is done: its arguments are the answer, and the run ends.",
                "input_schema": serde_json::from_str::<Value>(SCHEMA).unwrap()
            }]
        })
    );
    let native = anthropic().request_body(&first_request(OutputMode::Native).await, true);
    assert_eq!(
        native,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            // Closed objects; the bounds Anthropic refuses are left out (and checked here).
            "output_config": {"format": {"type": "json_schema", "schema": {"type": "object", "properties": {
                "city": {"type": "string"},
                "celsius": {"type": "integer", "format": "int32"},
                "note": {"type": ["string", "null"]}
            }, "required": ["city", "celsius"], "additionalProperties": false}}},
            "stream": true
        })
    );
    let prompted = anthropic().request_body(&first_request(OutputMode::Prompted).await, false);
    assert_eq!(
        prompted["system"],
        json!(format!(
            "Be brief.\n\nGive your final answer as one JSON value that matches the JSON Schema below, with nothing before or after it (a ```json fence around it is fine). Use tools first if you need them.\n\n{SCHEMA}"
        ))
    );
    assert!(prompted.get("output_config").is_none() && prompted.get("tools").is_none(), "{prompted}");
}

/// An OpenAI-compatible answer: `text`, or one call of `final_result` with `arguments`.
fn openai_reply(stream: bool, text: Option<&str>, arguments: Option<&str>) -> Reply {
    if stream {
        let mut events = Vec::new();
        if let Some(text) = text {
            // Split mid-token, as servers do.
            let (a, b) = text.split_at(text.len() / 2);
            events.push(json!({"choices": [{"index": 0, "delta": {"content": a}}]}));
            events.push(json!({"choices": [{"index": 0, "delta": {"content": b}}]}));
        }
        if let Some(arguments) = arguments {
            let (a, b) = arguments.split_at(arguments.len() / 2);
            events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "final_result", "arguments": a}}]}}]}));
            events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": b}}]}}]}));
        }
        let finish = if arguments.is_some() { "tool_calls" } else { "stop" };
        events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
        return Reply::event_stream(sse::openai(&events));
    }
    let mut message = json!({"role": "assistant", "content": text});
    if let Some(arguments) = arguments {
        message["tool_calls"] = json!([{"id": "call_1", "type": "function", "function": {"name": "final_result", "arguments": arguments}}]);
    }
    let finish = if arguments.is_some() { "tool_calls" } else { "stop" };
    Reply::json(200, json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}).to_string())
}

/// Runs `mode` against a loopback OpenAI-compatible server whose first answer is too
/// cold for the schema and second fits; returns the requests' bodies.
async fn openai_run(mode: OutputMode, stream: bool) -> Vec<Value> {
    let (bad, good) =
        (r#"{"city":"Paris","celsius":-200,"note":null}"#, r#"{"city":"Paris","celsius":21,"note":null}"#);
    let replies = match mode {
        OutputMode::Tool => {
            vec![openai_reply(stream, None, Some(bad)), openai_reply(stream, None, Some(good))]
        }
        OutputMode::Native => {
            vec![openai_reply(stream, Some(bad), None), openai_reply(stream, Some(good), None)]
        }
        _ => {
            let fenced = |s: &str| format!("Sure.\n```json\n{s}\n```");
            vec![
                openai_reply(stream, Some(&fenced(bad)), None),
                openai_reply(stream, Some(&fenced(good)), None),
            ]
        }
    };
    let server = Server::start(replies);
    let model = OpenAiModel::new("qwen3").base_url(format!("{}/v1", server.url));
    let config = AgentConfig { planning: false, stream, ..AgentConfig::default() };
    let agent = Agent::builder().model(model).config(config).build().unwrap();
    // The schema with bounds (`Weather`'s own has none).
    let output = output().mode(mode);
    let result = if stream {
        use futures_util::StreamExt;
        let mut events = agent.run_stream_with_output("Weather in Paris?", output);
        while events.next().await.is_some() {}
        events.into_result().unwrap().unwrap()
    } else {
        agent.run_with_output("Weather in Paris?", output).await.unwrap()
    };
    // OpenAI's strict `null` for the optional note is dropped in native mode; otherwise
    // the schema takes it.
    assert_eq!(
        result.value_as::<Weather>().unwrap(),
        Weather { city: "Paris".into(), celsius: 21, note: None }
    );
    assert_eq!(result.turns, 2);
    server.bodies()
}

#[tokio::test]
async fn openai_compatible_runs_streamed_and_not_retry_then_answer_in_every_mode() {
    for stream in [false, true] {
        for mode in [OutputMode::Tool, OutputMode::Native, OutputMode::Prompted] {
            let bodies = openai_run(mode, stream).await;
            assert_eq!(bodies.len(), 2, "{mode} {stream}");
            assert_eq!(bodies[0]["stream"].as_bool().unwrap_or(false), stream);
            let last = bodies[1]["messages"].as_array().unwrap().last().unwrap().clone();
            match mode {
                OutputMode::Tool => {
                    assert_eq!(last["role"], "tool");
                    assert_eq!(last["tool_call_id"], "call_1");
                    assert_eq!(
                        last["content"],
                        "invalid arguments for final_result: celsius: -200 is less than the minimum of -90"
                    );
                }
                _ => {
                    assert_eq!(last["role"], "user");
                    assert_eq!(
                        last["content"],
                        "invalid output: celsius: -200 is less than the minimum of -90\nAnswer again with only the corrected JSON."
                    );
                }
            }
            assert_eq!(bodies[1].get("response_format").is_some(), mode == OutputMode::Native, "{mode}");
        }
    }
}

/// An Anthropic answer: `text`, or one `tool_use` of `final_result` with `input`.
fn anthropic_reply(stream: bool, text: Option<&str>, input: Option<&str>) -> Reply {
    let stop = if input.is_some() { "tool_use" } else { "end_turn" };
    if stream {
        let mut events = vec![
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ];
        let mut index = 0;
        if let Some(text) = text {
            events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}));
            events.push(json!({"type": "content_block_stop", "index": index}));
            index += 1;
        }
        if let Some(input) = input {
            let (a, b) = input.split_at(input.len() / 2);
            events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "final_result", "input": {}}}));
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": a}}));
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": b}}));
            events.push(json!({"type": "content_block_stop", "index": index}));
        }
        events.push(
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 3}}),
        );
        events.push(json!({"type": "message_stop"}));
        return Reply::event_stream(sse::anthropic(&events));
    }
    let mut content = Vec::new();
    if let Some(text) = text {
        content.push(json!({"type": "text", "text": text}));
    }
    if let Some(input) = input {
        content.push(json!({"type": "tool_use", "id": "toolu_1", "name": "final_result", "input": serde_json::from_str::<Value>(input).unwrap()}));
    }
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content, "stop_reason": stop, "usage": {"input_tokens": 5, "output_tokens": 3}});
    Reply::json(200, body.to_string())
}

#[tokio::test]
async fn anthropic_runs_streamed_and_not_retry_then_answer_in_every_mode() {
    let (bad, good) = (r#"{"city":"Paris","celsius":"warm"}"#, r#"{"city":"Paris","celsius":21}"#);
    for stream in [false, true] {
        for mode in [OutputMode::Tool, OutputMode::Native, OutputMode::Prompted] {
            let replies = match mode {
                OutputMode::Tool => {
                    vec![anthropic_reply(stream, None, Some(bad)), anthropic_reply(stream, None, Some(good))]
                }
                _ => {
                    vec![anthropic_reply(stream, Some(bad), None), anthropic_reply(stream, Some(good), None)]
                }
            };
            let server = Server::start(replies);
            let model = AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test");
            let config = AgentConfig { planning: false, stream, output_mode: mode, ..AgentConfig::default() };
            let agent = Agent::builder().model(model).config(config).build().unwrap();
            let weather: Weather = if stream {
                use futures_util::StreamExt;
                let mut events = agent.run_stream_with_output("Weather?", Output::of::<Weather>());
                while events.next().await.is_some() {}
                events.into_result().unwrap().unwrap().value_as().unwrap()
            } else {
                agent.run_typed("Weather?").await.unwrap()
            };
            assert_eq!(weather, Weather { city: "Paris".into(), celsius: 21, note: None }, "{mode} {stream}");
            let bodies = server.bodies();
            assert_eq!(bodies.len(), 2);
            let last = bodies[1]["messages"].as_array().unwrap().last().unwrap().clone();
            let line = match mode {
                OutputMode::Tool => {
                    let block = &last["content"][0];
                    assert_eq!(
                        (block["type"].as_str(), block["tool_use_id"].as_str(), block["is_error"].as_bool()),
                        (Some("tool_result"), Some("toolu_1"), Some(true)),
                        "{last}"
                    );
                    block["content"].to_string()
                }
                _ => last["content"].to_string(),
            };
            assert!(line.contains(r#"celsius: \"warm\" is not of type \"integer\""#), "{mode}: {line}");
            assert_eq!(bodies[1].get("output_config").is_some(), mode == OutputMode::Native);
        }
    }
}

#[test]
fn a_request_without_output_is_unchanged() {
    let request = ModelRequest { messages: vec![Message::user("hi")], ..ModelRequest::default() };
    let body = openai().request_body(&request, false);
    assert!(body.get("response_format").is_none());
    assert!(anthropic().request_body(&request, false).get("output_config").is_none());
    assert_eq!(openai().name(), "openai:gpt-4o");
}
