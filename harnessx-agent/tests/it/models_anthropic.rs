//! The Anthropic adapter against a loopback server replaying recorded Messages API
//! streams (whole and re-split at arbitrary byte boundaries) and non-streamed bodies;
//! HTTP errors; and the exact request bodies it sends.

use crate::common;

use common::{Reply, SPLITS, Server, assert_events_match, collect, dead_url, expected, fixture};
use harnessx_agent::model::{
    AnthropicModel, FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
};
use harnessx_core::registry::ToolSpec;
use harnessx_core::{Parts, ToolCall};
use serde_json::{Value, json};

fn model(server: &Server) -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test")
}

fn hello() -> ModelRequest {
    ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() }
}

/// Replays `path` with every split; checks each against the reference accumulation and
/// the whole-body replay, and returns that one.
async fn replay(path: &str) -> (Vec<ModelEvent>, ModelResponse) {
    let mut first: Option<(Vec<ModelEvent>, ModelResponse)> = None;
    for split in SPLITS {
        let server = Server::start(vec![Reply::sse(fixture(path), split)]);
        let (events, outcome) = collect(model(&server).stream(&hello())).await;
        let response = outcome.unwrap_or_else(|e| panic!("{path} split {split:?}: {e}"));
        assert_events_match(&events, &response);
        check_expected(path, &response);
        match &first {
            None => first = Some((events, response)),
            Some((_, whole)) => {
                assert_eq!(&response, whole, "{path} split {split:?} differs from the whole body")
            }
        }
    }
    first.unwrap()
}

fn check_expected(path: &str, response: &ModelResponse) {
    let want = expected(path);
    let finish = matches!(
        (&response.finish_reason, want["stop_reason"].as_str().unwrap()),
        (FinishReason::Stop, "end_turn")
            | (FinishReason::ToolCalls, "tool_use")
            | (FinishReason::Length, "max_tokens")
    );
    assert!(finish, "{path}: {:?} for {}", response.finish_reason, want["stop_reason"]);
    let blocks = want["blocks"].as_array().unwrap();
    let text: String = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
    assert_eq!(response.content, text, "{path}");
    let calls: Vec<ToolCall> = blocks
        .iter()
        .filter(|b| b.get("id").is_some())
        .map(|b| {
            let raw = b["input_json"].as_str().unwrap();
            // A tool without arguments streams no JSON at all: `{}`.
            ToolCall::new(
                b["id"].as_str().unwrap(),
                b["name"].as_str().unwrap(),
                if raw.is_empty() { "{}" } else { raw },
            )
        })
        .collect();
    assert_eq!(response.tool_calls, calls, "{path}");
    for (call, block) in response.tool_calls.iter().zip(blocks.iter().filter(|b| b.get("id").is_some())) {
        match block.get("input") {
            Some(input) => {
                assert_eq!(&serde_json::from_str::<Value>(&call.arguments).unwrap(), input, "{path}")
            }
            None => assert!(serde_json::from_str::<Value>(&call.arguments).is_err(), "{path}"),
        }
    }
}

#[tokio::test]
async fn every_recorded_stream_gives_the_reference_result_at_every_split() {
    for path in [
        "anthropic/messages_stream_text_only.sse",
        "anthropic/messages_stream_runner_555fb399_turn0.sse",
        "anthropic/messages_stream_runner_555fb399_turn1.sse",
        "anthropic/messages_stream_runner_771c64ff_turn0.sse",
        "anthropic/messages_stream_runner_771c64ff_turn1.sse",
        "vercel_ai/anthropic_stream_json_tool.derived.sse",
    ] {
        replay(path).await;
    }
}

#[tokio::test]
async fn text_then_tool_use() {
    let (events, response) = replay("anthropic/messages_stream_text_then_tool_use.sse").await;
    assert_eq!(response.content, "I'll check the current weather in Paris for you.");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", r#"{"location": "Paris"}"#)]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    // The block index on the wire is 1; the call is the response's first.
    assert!(events.contains(&ModelEvent::ToolCallStart {
        index: 0,
        id: "toolu_01NRLabsLyVHZPKxbKvkfSMn".into(),
        name: "get_weather".into()
    }));
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (377, 65));
}

#[tokio::test]
async fn tool_input_cut_off_by_max_tokens_stays_raw_so_the_tool_never_runs() {
    let (_, response) = replay("anthropic/messages_stream_tool_use_cut_off_max_tokens.sse").await;
    assert_eq!(response.finish_reason, FinishReason::Length);
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "make_file");
    assert!(call.arguments.ends_with("\n\"Filing taxes"), "{}", call.arguments);
    assert!(serde_json::from_str::<Value>(&call.arguments).unwrap_err().is_eof());
}

#[tokio::test]
async fn tool_with_no_arguments_gets_an_empty_object() {
    let (_, response) = replay("vercel_ai/anthropic_stream_tool_no_args.derived.sse").await;
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", "{}")]
    );
    assert_eq!(response.content, "I'll update the issue list for you.");
}

#[tokio::test]
async fn complete_uses_the_non_streaming_api_four_parallel_tool_uses() {
    let server = Server::start(vec![Reply::json(
        200,
        fixture("anthropic/messages_nonstream_four_parallel_tool_use.json"),
    )]);
    let response = model(&server).complete(&hello()).await.unwrap();
    assert!(response.content.starts_with("I'll help you find out who is the youngest"));
    let names: Vec<(&str, &str)> =
        response.tool_calls.iter().map(|c| (c.id.as_str(), c.arguments.as_str())).collect();
    assert_eq!(
        names,
        [
            ("toolu_0167cfEnoQaPviGdVXA95zcu", r#"{"name":"Alice"}"#),
            ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", r#"{"name":"Bob"}"#),
            ("toolu_01XFyAjstT3966qvRynZyVPo", r#"{"name":"Charlie"}"#),
            ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", r#"{"name":"Daisy"}"#),
        ]
    );
    assert!(response.tool_calls.iter().all(|c| c.name == "retrieve_entity_info"));
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (423, 202));
    let request = &server.requests()[0];
    assert_eq!(request.body.get("stream"), None);
}

#[tokio::test]
async fn non_streamed_tool_without_arguments() {
    let server =
        Server::start(vec![Reply::json(200, fixture("vercel_ai/anthropic_nonstream_tool_no_args.json"))]);
    let response = model(&server).complete(&hello()).await.unwrap();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("toolu_01LRmxn9vGM1d2DZSDBowdZ1", "updateIssueList", "{}")]
    );
}

#[tokio::test]
async fn in_stream_overloaded_error_is_retryable() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n\
                event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let server = Server::start(vec![Reply::sse(body.into(), Some(7))]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let e = outcome.unwrap_err();
    assert!(
        matches!(&e, ModelError::Http { status: 529, message } if message.contains("Overloaded")),
        "{e:?}"
    );
    assert!(e.is_retryable());
}

#[tokio::test]
async fn bad_key_is_an_auth_error_that_names_the_variable() {
    let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    for stream in [false, true] {
        let server = Server::start(vec![Reply::json(401, body)]);
        let e = if stream {
            collect(model(&server).stream(&hello())).await.1.unwrap_err()
        } else {
            model(&server).complete(&hello()).await.unwrap_err()
        };
        assert!(
            matches!(&e, ModelError::Auth(m) if m.contains("ANTHROPIC_API_KEY") && m.contains("invalid x-api-key")),
            "{e:?}"
        );
    }
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retryable_http_errors() {
    for status in [500, 429, 529] {
        let body = r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
        let server = Server::start(vec![Reply::json(status, body)]);
        let e = model(&server).complete(&hello()).await.unwrap_err();
        assert!(
            matches!(&e, ModelError::Http { status: s, .. } if *s == status) && e.is_retryable(),
            "{e:?}"
        );
    }
}

#[tokio::test]
async fn dead_server_is_a_retryable_transport_error() {
    let model = AnthropicModel::new("m").base_url(dead_url()).api_key("k");
    let (_, outcome) = collect(model.stream(&hello())).await;
    let e = outcome.unwrap_err();
    assert!(matches!(e, ModelError::Transport(_)) && e.is_retryable(), "{e:?}");
}

/// Parallel calls (one garbled, one with an array for arguments) and their results.
fn conversation() -> ModelRequest {
    ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![
            Message::user("Weather in Paris, Rome and Oslo?"),
            Message::assistant(
                "Checking.",
                vec![
                    ToolCall::new("toolu_1", "get_weather", r#"{"city": "Paris"}"#),
                    ToolCall::new("toolu_2", "get_weather", r#"{"city": "Ro"#),
                    ToolCall::new("toolu_3", "get_weather", "[1]"),
                ],
            ),
            Message::Tool {
                call_id: "toolu_1".into(),
                name: "get_weather".into(),
                content: "18C".into(),
                is_error: false,
                parts: Parts::new(),
            },
            Message::Tool {
                call_id: "toolu_2".into(),
                name: "get_weather".into(),
                content: "Error: the arguments look cut off".into(),
                is_error: true,
                parts: Parts::new(),
            },
            Message::Tool {
                call_id: "toolu_3".into(),
                name: "get_weather".into(),
                content: "Error: not an object".into(),
                is_error: true,
                parts: Parts::new(),
            },
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather for a city.".into(),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }],
        max_tokens: None,
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn request_body_merges_results_into_one_user_turn_and_sends_objects_as_input() {
    let server = Server::start(vec![Reply::sse(fixture("anthropic/messages_stream_text_only.sse"), None)]);
    let (_, outcome) = collect(model(&server).stream(&conversation())).await;
    outcome.unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(
        request.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            // Prompt-cache breakpoints (on by default): the system prompt, the last block
            // of the message before the newest turn, the last tool.
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "Weather in Paris, Rome and Oslo?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}},
                    {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {},
                        "cache_control": {"type": "ephemeral"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Error: the arguments look cut off", "is_error": true},
                    {"type": "tool_result", "tool_use_id": "toolu_3", "content": "Error: not an object", "is_error": true}
                ]}
            ],
            "tools": [{
                "name": "get_weather",
                "description": "Weather for a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "cache_control": {"type": "ephemeral"}
            }],
            "stream": true
        })
    );
    let raw = String::from_utf8(request.raw.clone()).unwrap();
    assert_eq!(raw.matches("cache_control").count(), 3, "at most four breakpoints; three are placed");
    // Off: no breakpoint at all, and the system prompt is a plain string again.
    let off = model(&server).prompt_cache(false).request_body(&conversation(), true);
    assert!(!off.to_string().contains("cache_control"), "{off}");
    assert_eq!(off["system"], "Be brief.");
    let keys: Vec<&str> = request.body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["model", "max_tokens", "system", "messages", "tools", "stream"]);
}

#[tokio::test]
async fn max_tokens_comes_from_the_request_then_the_model() {
    let mut request = hello();
    assert_eq!(AnthropicModel::new("m").max_tokens(1000).request_body(&request, false)["max_tokens"], 1000);
    request.max_tokens = Some(77);
    assert_eq!(AnthropicModel::new("m").max_tokens(1000).request_body(&request, false)["max_tokens"], 77);
}

#[tokio::test]
async fn base_url_with_or_without_v1() {
    assert_eq!(AnthropicModel::new("m").base_url("http://h:1/").endpoint(), "http://h:1/v1/messages");
    assert_eq!(AnthropicModel::new("m").base_url("http://h:1/v1").endpoint(), "http://h:1/v1/messages");
}

/// Spec: no untrusted input recurses without bound. A `tool_use` input nested 1 to
/// 1,000,000 levels deep, whole (a protocol error past serde_json's limit, the call when
/// within) and streamed as `input_json_delta` text (delivered as text, which the engine
/// refuses); the next request sends an input nested past the engine's limit as `{}`.
#[tokio::test]
async fn deeply_nested_tool_inputs_end_in_an_error_or_the_call() {
    use harnessx_core::MAX_JSON_DEPTH;
    use harnessx_test_support::deep::{DEPTHS, Shape, nested_json};
    for depth in DEPTHS.into_iter().chain([MAX_JSON_DEPTH + 1]) {
        for shape in Shape::ALL {
            let deep = nested_json(shape, depth);
            let case = format!("{shape:?} at depth {depth}");
            let started = std::time::Instant::now();
            // `{"content":[{"input": ...}]}`: three levels around the input.
            let parses = shape != Shape::Unclosed && depth + 3 < 128;
            let whole = format!(
                r#"{{"id":"msg_1","type":"message","role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"store","input":{deep}}}],"stop_reason":"tool_use","usage":{{"input_tokens":1,"output_tokens":1}}}}"#
            );
            let server = Server::start(vec![Reply::json(200, whole)]);
            match model(&server).complete(&hello()).await {
                Ok(response) => {
                    assert!(parses, "{case}");
                    let arguments: Value = serde_json::from_str(&response.tool_calls[0].arguments).unwrap();
                    assert_eq!(arguments, serde_json::from_str::<Value>(&deep).unwrap(), "{case}");
                }
                Err(ModelError::Protocol(m)) => {
                    assert!(
                        !parses && m.contains("something other than JSON") && m.len() < 600,
                        "{case}: {m}"
                    )
                }
                Err(e) => panic!("{case}: {e:?}"),
            }

            let events = [
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "store", "input": {}}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": deep}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}),
                json!({"type": "message_stop"}),
            ];
            let body = harnessx_test_support::sse::anthropic(&events);
            let server = Server::start(vec![Reply::sse(body.into_bytes(), Some(4096))]);
            let (_, outcome) = collect(model(&server).stream(&hello())).await;
            let response = outcome.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(response.tool_calls[0].arguments == deep, "{case}: the input arrives as sent");
            let next = ModelRequest {
                messages: vec![Message::user("hello"), Message::assistant("", response.tool_calls)],
                ..ModelRequest::default()
            };
            let body = model(&server).request_body(&next, true);
            let input = &body["messages"][1]["content"][0]["input"];
            if shape != Shape::Unclosed && depth <= MAX_JSON_DEPTH {
                assert_eq!(input, &serde_json::from_str::<Value>(&deep).unwrap(), "{case}");
            } else {
                assert_eq!(input, &json!({}), "{case}");
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "{case}: {:?}",
                started.elapsed()
            );
        }
    }
}
