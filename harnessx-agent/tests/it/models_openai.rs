//! The OpenAI-compatible adapter against a loopback server replaying recorded streams
//! (OpenAI, Groq, DeepSeek, GLM, an Anthropic-backed compatible server), whole and re-split
//! at arbitrary byte boundaries; HTTP errors; and the exact request bodies it sends.

use crate::common;

use common::{Reply, SPLITS, Server, assert_events_match, collect, dead_url, expected, fixture};
use harnessx_agent::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, OpenAiModel,
};
use harnessx_core::ToolCall;
use harnessx_core::registry::ToolSpec;
use serde_json::{Value, json};

fn model(server: &Server) -> OpenAiModel {
    OpenAiModel::new("gpt-4o").base_url(format!("{}/v1", server.url)).api_key("sk-test")
}

fn hello() -> ModelRequest {
    ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() }
}

/// Replays `path` with every split; checks each against the reference accumulation and
/// the first (whole) replay, and returns that one.
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
    let finish = match &response.finish_reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        other => panic!("{path}: unexpected finish {other:?}"),
    };
    assert_eq!(finish, want["finish_reason"], "{path}");
    let calls: Vec<Value> = response
        .tool_calls
        .iter()
        .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
        .collect();
    let want_calls: Vec<Value> = want["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({"id": c["id"], "name": c["name"], "arguments": c["arguments"]}))
        .collect();
    assert_eq!(calls, want_calls, "{path}");
    for (call, want) in response.tool_calls.iter().zip(want["tool_calls"].as_array().unwrap()) {
        assert_eq!(
            serde_json::from_str::<Value>(&call.arguments).unwrap(),
            want["arguments_parsed"],
            "{path}"
        );
    }
}

#[tokio::test]
async fn every_recorded_stream_gives_the_reference_result_at_every_split() {
    for path in [
        "openai/chat_stream_single_tool_gpt4o.sse",
        "openai/chat_stream_strict_tool_gpt4o.sse",
        "openai/chat_stream_nonstrict_tool_gpt4o.sse",
        "openai/chat_stream_text_only_gpt4o.sse",
        "groq/chat_stream_turn1_retry_ok.sse",
        "groq/chat_stream_turn2_retry_ok.sse",
    ] {
        replay(path).await;
    }
}

#[tokio::test]
async fn parallel_two_tools_are_assembled_per_index_with_usage_from_the_last_chunk() {
    let (events, response) = replay("openai/chat_stream_parallel_two_tools_gpt4o.sse").await;
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#
            ),
            ToolCall::new(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#
            ),
        ]
    );
    // The usage chunk has `choices: []`.
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (149, 60));
    // The first call is complete before the second starts, as the wire had it.
    let second_start =
        events.iter().position(|e| matches!(e, ModelEvent::ToolCallStart { index: 1, .. })).unwrap();
    assert!(!events[second_start..].iter().any(|e| matches!(e, ModelEvent::ToolCallDelta { index: 0, .. })));
}

#[tokio::test]
async fn interleaved_parallel_deltas_are_assembled_per_index() {
    let (events, response) =
        replay("openai/chat_stream_parallel_two_tools_gpt4o.INTERLEAVED_DERIVED.sse").await;
    let (whole_events, whole) = replay("openai/chat_stream_parallel_two_tools_gpt4o.sse").await;
    assert_eq!(response, whole);
    assert_ne!(events, whole_events, "the derived stream really interleaves");
}

#[tokio::test]
async fn tool_index_starting_at_1_is_the_first_call() {
    let (events, response) = replay("vercel_ai/openai_compat_stream_tool_index_starts_at_1.sse").await;
    assert_eq!(response.content, "Reading it.");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("toolu_sanitized", "read_file", r#"{"path": "a.txt"}"#)]
    );
    assert!(events.contains(&ModelEvent::ToolCallStart {
        index: 0,
        id: "toolu_sanitized".into(),
        name: "read_file".into()
    }));
}

#[tokio::test]
async fn empty_name_continuation_keeps_the_name() {
    let (_, response) =
        replay("vercel_ai/openai_compat_glm_stream_empty_name_continuation.derived.sse").await;
    assert_eq!(response.tool_calls[0].name, "webSearchTool");
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (171, 14));
}

#[tokio::test]
async fn arguments_whole_in_the_first_delta() {
    let (events, response) = replay("vercel_ai/groq_chat_stream_tool_args_single_chunk.derived.sse").await;
    assert_eq!(response.tool_calls, vec![ToolCall::new("tk85n1k4m", "weather", "{}")]);
    assert!(events.contains(&ModelEvent::ToolCallDelta { index: 0, delta: "{}".into() }));
}

#[tokio::test]
async fn reasoning_deltas_before_a_tool_call_are_not_text() {
    let (events, response) = replay("vercel_ai/deepseek_chat_stream_reasoning_then_tool.derived.sse").await;
    assert_eq!(response.content, "");
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::TextDelta(_))));
    assert_eq!(response.tool_calls[0].name, "weather");
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (339, 83));
}

#[tokio::test]
async fn text_only_stream_finishes_with_stop() {
    let (_, response) = replay("openai/chat_stream_text_only_gpt4o.sse").await;
    assert!(
        response.content.starts_with("I'm unable to provide real-time weather updates."),
        "{}",
        response.content
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn groq_in_stream_error_event_is_an_error_at_every_split() {
    let want = expected("groq/chat_stream_turn0_error_event.sse");
    for split in SPLITS {
        let server =
            Server::start(vec![Reply::sse(fixture("groq/chat_stream_turn0_error_event.sse"), split)]);
        let (_, outcome) = collect(model(&server).stream(&hello())).await;
        match outcome {
            Err(ModelError::Http { status: 400, message }) => {
                assert!(message.contains(want["error"]["message"].as_str().unwrap()), "{message}");
                assert!(message.contains("tool_use_failed"), "{message}");
            }
            other => panic!("split {split:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn stream_cut_before_the_end_delivers_raw_arguments_the_engine_refuses() {
    let body = fixture("openai/chat_stream_parallel_two_tools_gpt4o.sse");
    let text = String::from_utf8(body).unwrap();
    // Keep the events up to the middle of the second call's arguments, and half of the
    // next event.
    let events: Vec<&str> = text.split_inclusive("\n\n").collect();
    let second = events.iter().position(|e| e.contains("call_DNYT")).unwrap();
    let mut cut: String = events[..second + 4].concat();
    cut.push_str(&events[second + 4][..40]);
    let server = Server::start(vec![Reply::sse(cut.into_bytes(), Some(7))]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let response = outcome.unwrap();
    assert_eq!(response.finish_reason, FinishReason::Other("incomplete".into()));
    assert_eq!(response.tool_calls.len(), 2);
    assert!(serde_json::from_str::<Value>(&response.tool_calls[1].arguments).unwrap_err().is_eof());
}

#[tokio::test]
async fn stream_cut_before_any_call_is_a_retryable_transport_error() {
    let text = String::from_utf8(fixture("openai/chat_stream_text_only_gpt4o.sse")).unwrap();
    let server = Server::start(vec![Reply::sse(text.as_bytes()[..text.len() / 2].to_vec(), None)]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let e = outcome.unwrap_err();
    assert!(matches!(e, ModelError::Transport(_)) && e.is_retryable(), "{e:?}");
}

#[tokio::test]
async fn non_streamed_json_answers_are_understood() {
    for (path, calls) in [
        ("openai/chat_nonstream_parallel_two_tools_gpt4o.json", 2),
        ("openai/chat_nonstream_single_tool_gpt4o.json", 1),
        ("openai/chat_nonstream_strict_tool_gpt4o.json", 1),
        ("openai/chat_nonstream_nested_args_gpt4o.json", 1),
    ] {
        let body: Value = serde_json::from_slice(&fixture(path)).unwrap();
        let server = Server::start(vec![Reply::json(200, fixture(path))]);
        let (events, outcome) = collect(model(&server).stream(&hello())).await;
        let response = outcome.unwrap();
        assert_events_match(&events, &response);
        assert_eq!(response.tool_calls.len(), calls, "{path}");
        assert_eq!(response.finish_reason, FinishReason::ToolCalls, "{path}");
        for (call, want) in
            response.tool_calls.iter().zip(body["choices"][0]["message"]["tool_calls"].as_array().unwrap())
        {
            assert_eq!(call.id, want["id"]);
            assert_eq!(call.arguments, want["function"]["arguments"]);
        }
    }
}

#[tokio::test]
async fn bad_key_is_an_auth_error_that_names_the_variable() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let server = Server::start(vec![Reply::json(401, body)]);
    let e = model(&server).complete(&hello()).await.unwrap_err();
    match &e {
        ModelError::Auth(message) => {
            assert!(message.contains("OPENAI_API_KEY"), "{message}");
            assert!(message.contains("Incorrect API key provided"), "{message}");
            assert!(message.contains("401"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.is_retryable());
}

#[tokio::test]
async fn missing_key_for_openai_itself_fails_before_any_request() {
    let model = OpenAiModel::new("gpt-4o").base_url("https://api.openai.com/v1").without_api_key();
    let e = model.complete(&hello()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Auth(m) if m.contains("OPENAI_API_KEY")), "{e:?}");
}

#[tokio::test]
async fn local_servers_need_no_key() {
    let server = Server::start(vec![Reply::sse(fixture("openai/chat_stream_text_only_gpt4o.sse"), None)]);
    let model = OpenAiModel::new("llama").base_url(format!("{}/v1/", server.url)).without_api_key();
    model.complete(&hello()).await.unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.path, "/v1/chat/completions");
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retryable_http_errors() {
    for (status, body) in [
        (500, r#"{"error":{"message":"The server had an error","type":"server_error"}}"#),
        (429, r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#),
        (503, "upstream unavailable"),
    ] {
        let server = Server::start(vec![Reply::json(status, body)]);
        let (_, outcome) = collect(model(&server).stream(&hello())).await;
        let e = outcome.unwrap_err();
        assert!(matches!(&e, ModelError::Http { status: s, .. } if *s == status), "{e:?}");
        assert!(e.is_retryable(), "{e:?}");
    }
}

#[tokio::test]
async fn dead_server_is_a_retryable_transport_error() {
    let model = OpenAiModel::new("m").base_url(dead_url()).without_api_key();
    let e = model.complete(&hello()).await.unwrap_err();
    assert!(matches!(&e, ModelError::Transport(m) if m.to_lowercase().contains("connect")), "{e:?}");
    assert!(e.is_retryable());
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "units": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"]
        }),
    }
}

/// A conversation after parallel calls, one of them garbled, and their results.
fn conversation() -> ModelRequest {
    ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![
            Message::user("Weather in Paris and Rome?"),
            Message::assistant(
                "Checking.",
                vec![
                    ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#),
                    ToolCall::new("call_2", "get_weather", r#"{"city": "Ro"#),
                ],
            ),
            Message::Tool {
                call_id: "call_1".into(),
                name: "get_weather".into(),
                content: "18C".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "get_weather".into(),
                content: "Error: the arguments are not valid JSON".into(),
                is_error: true,
            },
        ],
        tools: vec![weather_tool()],
        max_tokens: Some(100),
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn request_body_for_parallel_calls_and_results_is_exact() {
    let server = Server::start(vec![Reply::sse(fixture("openai/chat_stream_text_only_gpt4o.sse"), None)]);
    let model = model(&server);
    let conversation = conversation();
    let mut stream = model.stream(&conversation);
    while let Some(event) = futures_util::StreamExt::next(&mut stream).await {
        event.unwrap();
    }
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                    // The garbled call's arguments go as valid JSON.
                    {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: the arguments are not valid JSON"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "units": {"type": "string", "enum": ["c", "f"]}},
                    "required": ["city"]
                }
            }}],
            "max_tokens": 100,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    // Key order as sent, too.
    let keys: Vec<&str> = request.body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["model", "messages", "tools", "max_tokens", "stream", "stream_options"]);
}

#[tokio::test]
async fn strict_mode_transforms_the_schema_only_when_asked() {
    let plain = OpenAiModel::new("gpt-4o").request_body(&conversation(), false);
    assert_eq!(plain["tools"][0]["function"].get("strict"), None);
    assert_eq!(plain.get("stream"), None);
    let strict = OpenAiModel::new("gpt-4o")
        .base_url("https://api.openai.com/v1")
        .strict(true)
        .request_body(&conversation(), false);
    assert_eq!(
        strict["tools"][0]["function"],
        json!({
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "units": {"type": ["string", "null"], "enum": ["c", "f", null]}
                },
                "required": ["city", "units"],
                "additionalProperties": false
            },
            "strict": true
        })
    );
    // OpenAI itself gets the newer token limit field.
    assert_eq!(strict["max_completion_tokens"], 100);
    assert_eq!(strict.get("max_tokens"), None);
}

#[tokio::test]
async fn usage_can_be_left_out_of_the_stream_options() {
    let body = OpenAiModel::new("m")
        .base_url("http://localhost:1/v1")
        .stream_usage(false)
        .request_body(&hello(), true);
    assert_eq!(
        body,
        json!({"model": "m", "messages": [{"role": "user", "content": "hello"}], "stream": true})
    );
}

/// Spec: no untrusted input recurses without bound. A provider's answer nested 1 to
/// 1,000,000 levels deep, whole and streamed, in every shape: a protocol error once past
/// serde_json's limit (quoting at most 200 characters of the event), the answer when
/// within; a streamed call whose argument text is that deep is delivered as text (the
/// engine refuses it), and the next request sends it as `{}` once past the engine's limit.
#[tokio::test]
async fn deeply_nested_answers_and_arguments_end_in_an_error_or_the_answer() {
    use harnessx_core::MAX_JSON_DEPTH;
    use harnessx_test_support::deep::{DEPTHS, Shape, nested_json};
    for depth in DEPTHS.into_iter().chain([MAX_JSON_DEPTH + 1]) {
        for shape in Shape::ALL {
            let deep = nested_json(shape, depth);
            let case = format!("{shape:?} at depth {depth}");
            // Parses when closed and, with the one level of the envelope around it, within
            // serde_json's 127 levels.
            let parses = shape != Shape::Unclosed && depth < 127;
            let started = std::time::Instant::now();

            let whole = format!(
                r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"hi"}},"finish_reason":"stop"}}],"extra":{deep}}}"#
            );
            let server = Server::start(vec![Reply::json(200, whole)]);
            let (_, outcome) = collect(model(&server).stream(&hello())).await;
            match outcome {
                Ok(response) => assert!(parses && response.content == "hi", "{case}: {response:?}"),
                Err(ModelError::Protocol(m)) => {
                    assert!(
                        !parses && m.contains("something other than JSON") && m.len() < 600,
                        "{case}: {m}"
                    )
                }
                Err(e) => panic!("{case}: {e:?}"),
            }

            let chunk =
                format!(r#"data: {{"choices":[{{"index":0,"delta":{{"content":"hi"}}}}],"extra":{deep}}}"#);
            let server =
                Server::start(vec![Reply::sse(format!("{chunk}\n\ndata: [DONE]\n\n").into_bytes(), None)]);
            let (_, outcome) = collect(model(&server).stream(&hello())).await;
            match outcome {
                Ok(response) => assert!(parses && response.content == "hi", "{case}: {response:?}"),
                Err(ModelError::Protocol(m)) => {
                    assert!(
                        !parses && m.contains("a stream event is not JSON") && m.len() < 600,
                        "{case}: {m}"
                    )
                }
                Err(e) => panic!("{case}: {e:?}"),
            }

            let events = [
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "store", "arguments": deep}}]}}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ];
            let server = Server::start(vec![Reply::sse(
                harnessx_test_support::sse::openai(&events).into_bytes(),
                Some(4096),
            )]);
            let (_, outcome) = collect(model(&server).stream(&hello())).await;
            let response = outcome.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(response.tool_calls.len(), 1, "{case}");
            assert!(response.tool_calls[0].arguments == deep, "{case}: the arguments arrive as sent");
            let next = ModelRequest {
                messages: vec![Message::user("hello"), Message::assistant("", response.tool_calls)],
                ..ModelRequest::default()
            };
            let body = model(&server).request_body(&next, true);
            let sent = body["messages"][1]["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
            let kept = shape != Shape::Unclosed && depth <= MAX_JSON_DEPTH;
            assert_eq!(sent == deep, kept, "{case}");
            if !kept {
                assert_eq!(sent, "{}", "{case}");
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "{case}: {:?}",
                started.elapsed()
            );
        }
    }
}
