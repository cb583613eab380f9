//! The OpenAI-compatible adapter against a loopback server replaying recorded streams
//! (OpenAI, Groq, DeepSeek, GLM, an Anthropic-backed compatible server), whole and re-split
//! at arbitrary byte boundaries; HTTP errors; and the exact request bodies it sends.

use crate::common;

use common::{Reply, SPLITS, Server, assert_events_match, collect, dead_url, expected, fixture};
use harnessx_agent::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, OpenAiModel,
};
use harnessx_core::registry::ToolSpec;
use harnessx_core::{Parts, ToolCall};
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
    // The `reasoning_content` deltas are shown and kept, and never sent back (DeepSeek
    // refuses `reasoning_content` in its input).
    let shown: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(shown.starts_with("The user is"), "{shown}");
    assert_eq!(response.reasoning.len(), 1);
    assert_eq!(
        (response.reasoning[0].provider.as_str(), response.reasoning[0].text.as_str()),
        ("openai", shown.as_str())
    );
    let mut next = hello();
    next.messages.push(Message::assistant_with_reasoning(
        "",
        response.tool_calls.clone(),
        response.reasoning.clone(),
    ));
    let body =
        OpenAiModel::new("deepseek-reasoner").base_url("http://localhost:1/v1").request_body(&next, true);
    assert!(!body.to_string().contains("reasoning") && !body.to_string().contains("The user is"), "{body}");
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
                parts: Parts::new(),
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "get_weather".into(),
                content: "Error: the arguments are not valid JSON".into(),
                is_error: true,
                parts: Parts::new(),
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
            // Spelled out for every server but OpenAI (llama-cpp-python reads its absence
            // as "none").
            "tool_choice": "auto",
            "max_tokens": 100,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    // Key order as sent, too.
    let keys: Vec<&str> = request.body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["model", "messages", "tools", "tool_choice", "max_tokens", "stream", "stream_options"]);
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

// ---- OpenAI's own API, and the servers people run at home ------------------------------

use std::sync::{Arc, Mutex};

use harnessx_agent::ToolChoice;
use harnessx_test_support::local::{Local, llama_cpp_python_call_id};

fn read_file() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

/// A conversation after one tool call that came without text.
fn after_a_call(tool_choice: ToolChoice) -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::user("Read note.txt."),
            Message::assistant("", vec![ToolCall::new("call_1", "read_file", r#"{"path": "note.txt"}"#)]),
            Message::Tool {
                call_id: "call_1".into(),
                name: "read_file".into(),
                content: "The secret word is plum.".into(),
                is_error: false,
                parts: Parts::new(),
            },
        ],
        tools: vec![read_file()],
        tool_choice,
        max_tokens: Some(64),
        ..ModelRequest::default()
    }
}

fn first_turn(tool_choice: ToolChoice, tools: Vec<ToolSpec>) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user("Read note.txt.")],
        tools,
        tool_choice,
        ..ModelRequest::default()
    }
}

/// A model of `server` whose warnings are collected.
fn local_model(server: &Server) -> (OpenAiModel, Arc<Mutex<Vec<String>>>) {
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let log = warnings.clone();
    let model = OpenAiModel::new("local")
        .base_url(format!("{}/v1", server.url))
        .without_api_key()
        .on_warning(move |line| log.lock().unwrap().push(line.to_owned()));
    (model, warnings)
}

/// Regression: what OpenAI itself is sent stays byte for byte what it was before other
/// servers got their own forms (`"content": null` beside tool calls, no `tool_choice`
/// for auto, `max_completion_tokens`).
#[test]
fn openai_own_bodies_are_pinned_byte_for_byte() {
    let openai = OpenAiModel::new("gpt-4o").base_url("https://api.openai.com/v1").api_key("sk-test");
    let tools = r#""tools":[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]"#;
    let messages = r#""messages":[{"role":"user","content":"Read note.txt."},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"note.txt\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"The secret word is plum."}]"#;
    for (choice, wire_choice) in [
        (ToolChoice::Auto, ""),
        (ToolChoice::Required, r#","tool_choice":"required""#),
        (
            ToolChoice::Tool("read_file".into()),
            r#","tool_choice":{"type":"function","function":{"name":"read_file"}}"#,
        ),
    ] {
        let streamed = openai.request_body(&after_a_call(choice.clone()), true).to_string();
        assert_eq!(
            streamed,
            format!(
                r#"{{"model":"gpt-4o",{messages},{tools}{wire_choice},"max_completion_tokens":64,"stream":true,"stream_options":{{"include_usage":true}}}}"#
            ),
            "{choice:?}"
        );
        let whole = openai.request_body(&after_a_call(choice.clone()), false).to_string();
        assert_eq!(
            whole,
            format!(r#"{{"model":"gpt-4o",{messages},{tools}{wire_choice},"max_completion_tokens":64}}"#),
            "{choice:?}"
        );
    }
}

/// Every other server gets `""` beside tool calls and `"auto"` spelled out: the forms all
/// of them take. Nothing else differs from OpenAI's body but the token limit's name.
#[test]
fn other_servers_get_empty_content_and_auto_spelled_out() {
    let openai = OpenAiModel::new("m")
        .base_url("https://api.openai.com/v1")
        .request_body(&after_a_call(ToolChoice::Auto), true);
    for base in ["http://127.0.0.1:8099/v1", "http://localhost:11434", "https://gateway.example/openai/v1"] {
        let local = OpenAiModel::new("m").base_url(base).request_body(&after_a_call(ToolChoice::Auto), true);
        assert_eq!(local["messages"][1]["content"], "", "{base}");
        assert_eq!(local["tool_choice"], "auto", "{base}");
        assert_eq!(local["max_tokens"], 64, "{base}");
        let mut same = local.clone();
        same["messages"][1]["content"] = Value::Null;
        let object = same.as_object_mut().unwrap();
        object.shift_remove("tool_choice");
        object.shift_remove("max_tokens");
        let mut openai = openai.clone();
        openai.as_object_mut().unwrap().shift_remove("max_completion_tokens");
        assert_eq!(same, openai, "{base}");
    }
    // Text beside the calls, or no tools at all: nothing changes.
    let mut request = after_a_call(ToolChoice::Auto);
    request.messages[1] = Message::assistant("Reading.", vec![ToolCall::new("call_1", "read_file", "{}")]);
    request.tools.clear();
    let local = OpenAiModel::new("m").base_url("http://127.0.0.1:1/v1").request_body(&request, false);
    assert_eq!(local["messages"][1]["content"], "Reading.");
    assert_eq!(local.get("tool_choice"), None);
}

/// The operator sees everything the server said, on one line; the model one short line.
/// Bodies from every server, not JSON, huge, or not UTF-8: no panic, nothing lost that
/// was read.
#[tokio::test]
async fn error_bodies_are_whole_on_one_line_for_the_operator_and_short_for_the_model() {
    let llama_cpp_python = Local::LlamaCppPython.answer(&common::Recorded::post(
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}]}),
    ));
    let llama_server = Local::LlamaServer.answer(&common::Recorded::post(
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": []}]}),
    ));
    let huge = format!("<html><body>{}</body></html>", "upstream timed out\n".repeat(60_000));
    let mut not_utf8 = b"bad gateway \xff\xfe\xc3 from proxy".to_vec();
    not_utf8.extend_from_slice("é".as_bytes());
    let cases: Vec<(Reply, Vec<&str>)> = vec![
        // Seven pydantic errors, each on its own line: all of them, in one line.
        (
            llama_cpp_python,
            vec![
                "7 validation errors: {'type': 'literal_error'",
                "'msg': 'Input should be a valid string'",
                "'name'), 'msg': 'Field required', 'input': None} (internal_server_error)",
            ],
        ),
        // An empty message: the body itself says what there is to say.
        (
            Reply::json(
                500,
                r#"{"error":{"message":"","type":"internal_server_error","param":null,"code":null}}"#,
            ),
            vec![r#"{"error":{"message":"","type":"internal_server_error","param":null,"code":null}}"#],
        ),
        // llama-server quotes the messages, pretty-printed.
        (
            llama_server,
            vec![
                "Failed to parse messages: Expected 'content'",
                r#"messages = [ { "role": "user", "content": "hi" }, { "role": "assistant", "tool_calls": [] } ] (server_error)"#,
            ],
        ),
        // A field beyond message, type and code: the whole body after the message.
        (
            Reply::json(
                400,
                r#"{"error":{"message":"Invalid value for 'content'.","type":"invalid_request_error","param":"messages.[1].content","code":null}}"#,
            ),
            vec![
                r#"Invalid value for 'content'. (invalid_request_error) — {"error":{"message":"Invalid value for 'content'.","type":"invalid_request_error","param":"messages.[1].content","code":null}}"#,
            ],
        ),
        (
            Reply::json(502, huge.clone()),
            vec![
                "<html><body>upstream timed out upstream timed out",
                "(cut: only the first 65536 bytes were read)",
            ],
        ),
        (Reply::json(502, not_utf8), vec!["bad gateway \u{fffd}\u{fffd}\u{fffd} from proxyé"]),
        (Reply::json(503, ""), vec!["(empty body)"]),
    ];
    for (reply, wants) in cases {
        let status = reply.status;
        let server = Server::start(vec![reply]);
        let e = model(&server).complete(&hello()).await.unwrap_err();
        let ModelError::Http { status: got, message } = &e else { panic!("{e:?}") };
        assert_eq!(*got, status);
        assert!(!message.contains('\n') && !message.contains("  "), "{message}");
        for want in wants {
            assert!(message.contains(want), "{want:?} not in {message}");
        }
        assert!(message.len() <= 65_536 + 100, "{}", message.len());
        let line = e.for_model();
        assert!(!line.contains('\n') && line.chars().count() <= 301, "{line}");
        assert!(line.starts_with(&format!("the model provider answered HTTP {status}: ")), "{line}");
    }
}

/// Regression (issue 32): llama-cpp-python refuses `"required"` with HTTP 500 and an
/// empty message. With one tool offered the request goes again with that tool named,
/// which it takes; the next request names it at once, and the warning is said once.
#[tokio::test]
async fn a_refused_required_is_retried_with_the_one_tool_named_once_per_model() {
    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    let request = first_turn(ToolChoice::Required, vec![read_file()]);
    let response = model.complete(&request).await.unwrap();
    assert_eq!(response.tool_calls[0].name, "read_file");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tool_choice"], "required");
    assert_eq!(bodies[1]["tool_choice"], json!({"type": "function", "function": {"name": "read_file"}}));
    let warned = warnings.lock().unwrap().clone();
    // The second: its call's id shows its template drops `tool` messages.
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(
        warned[0].contains("does not support tool_choice \"required\" (the model provider answered HTTP 500: {\"error\":{\"message\":\"\",\"type\":\"internal_server_error\"")
            && warned[0].contains("naming the tool read_file in its place"),
        "{}",
        warned[0]
    );
    assert!(warned[1].contains("leaves tool results out"), "{}", warned[1]);

    model.complete(&request).await.unwrap();
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3, "no second refusal");
    assert_eq!(bodies[2]["tool_choice"], json!({"type": "function", "function": {"name": "read_file"}}));
    // A clone is the same server: it knows too. A new base URL starts over.
    model.clone().complete(&request).await.unwrap();
    assert_eq!(server.bodies().len(), 4);
    assert_eq!(warnings.lock().unwrap().len(), 2);
}

/// With several tools there is no one to name: a one-line error that says so and what
/// to do, not retried, and the next request fails the same way without being sent. A
/// named fallback among them is used instead.
#[tokio::test]
async fn a_refused_required_among_several_tools_is_a_one_line_error_or_the_fallback() {
    let mut todos = read_file();
    todos.name = "write_todos".into();
    let request = first_turn(ToolChoice::Required, vec![read_file(), todos]);
    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    for sent in [1, 1] {
        let e = model.complete(&request).await.unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ModelError::Protocol(_)) && !e.is_retryable(), "{e:?}");
        assert!(!text.contains('\n'), "{text}");
        assert!(
            text.contains(&format!(
                "the server at {}/v1 does not support tool_choice \"required\"",
                server.url
            )),
            "{text}"
        );
        assert!(text.contains("with 2 tools offered (read_file, write_todos)"), "{text}");
        assert!(text.contains("force one with --tool-choice NAME"), "{text}");
        assert_eq!(server.bodies().len(), sent);
    }
    assert!(
        model.complete(&request).await.unwrap_err().to_string().contains("it refused it earlier in this run")
    );
    assert!(warnings.lock().unwrap().is_empty());

    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    let model = model.required_fallback("read_file");
    let response = model.complete(&request).await.unwrap();
    assert_eq!(response.tool_calls[0].name, "read_file");
    assert_eq!(
        server.bodies()[1]["tool_choice"],
        json!({"type": "function", "function": {"name": "read_file"}})
    );
    // The refused `required`, and the call's id.
    assert_eq!(warnings.lock().unwrap().len(), 2);
    // A fallback that is not offered is no stand-in.
    let server = Local::LlamaCppPython.start();
    let model = local_model(&server).0.required_fallback("grep");
    assert!(matches!(model.complete(&request).await, Err(ModelError::Protocol(_))));
}

/// Regression (issue 32): llama-cpp-python answers a stream with tools and `auto` with
/// 200, SSE headers and an empty body. It is asked again without streaming, said once;
/// later requests with tools go unstreamed at once, those without tools still stream.
#[tokio::test]
async fn an_empty_stream_is_asked_again_without_streaming_once_per_model() {
    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    let request = first_turn(ToolChoice::Auto, vec![read_file()]);
    let (events, outcome) = collect(model.stream(&request)).await;
    let response = outcome.unwrap();
    assert_events_match(&events, &response);
    assert_eq!(response.tool_calls[0].name, "read_file");
    let bodies = server.bodies();
    assert_eq!((bodies.len(), &bodies[0]["stream"], bodies[1].get("stream")), (2, &json!(true), None));
    let warned = warnings.lock().unwrap().clone();
    // The second: its call's id shows its template drops `tool` messages.
    assert_eq!(warned.len(), 2);
    assert!(
        warned[0]
            .contains("answered a streamed request with tools with an empty stream (HTTP 200, no events)"),
        "{}",
        warned[0]
    );

    // After the call its `auto` answers nothing, and `none` is asked for the words.
    let (_, outcome) = collect(model.stream(&after_a_call(ToolChoice::Auto))).await;
    assert_eq!(
        outcome.unwrap().content,
        "The note says: [read_file result, call call_1]\nThe secret word is plum."
    );
    let bodies = server.bodies();
    let sent: Vec<(Option<&Value>, &Value)> =
        bodies[2..].iter().map(|b| (b.get("stream"), &b["tool_choice"])).collect();
    assert_eq!(sent.len(), 2, "{bodies:#?}");
    assert_eq!(sent, [(None, &json!("auto")), (None, &json!("none"))]);
    let (_, outcome) = collect(model.stream(&hello())).await;
    outcome.unwrap();
    assert_eq!(server.bodies()[4]["stream"], true, "without tools it streams");
    assert_eq!(warnings.lock().unwrap().len(), 3);
}

/// Regression (issue 32, seen live): llama-cpp-python answers `auto` in words with
/// `"content": ""` and no calls (its text is sampled under the grammar for a call's
/// name). Such an answer is asked again with `"none"`, which asks for the words; the
/// tokens of both are counted. Said once, done each time: under `auto` the next answer
/// may be a call.
#[tokio::test]
async fn an_answer_of_nothing_under_auto_is_asked_again_with_none() {
    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    for round in 1..=2 {
        let response = model.complete(&after_a_call(ToolChoice::Auto)).await.unwrap();
        assert_eq!(response.content, "I called read_file and saw no result.");
        assert_eq!(response.finish_reason, FinishReason::Stop);
        // Both answers' tokens: 21 + 21 in, 7 + 7 out.
        assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (42, 14));
        let bodies = server.bodies();
        assert_eq!(bodies.len(), 2 * round);
        assert_eq!(
            (&bodies[2 * round - 2]["tool_choice"], &bodies[2 * round - 1]["tool_choice"]),
            (&json!("auto"), &json!("none"))
        );
        // The same conversation, tools and all: only the choice differs.
        let mut asked_again = bodies[2 * round - 1].clone();
        asked_again["tool_choice"] = json!("auto");
        assert_eq!(asked_again, bodies[2 * round - 2]);
    }
    let warned = warnings.lock().unwrap().clone();
    assert_eq!(
        warned,
        [format!(
            "the server at {}/v1 answered a request with tool_choice \"auto\" with neither text nor tool calls; asking again with tool_choice \"none\" for the text, each time it does",
            server.url
        )]
    );
    // The first request, before any call: `auto` calls, nothing is asked again.
    let response = model.complete(&first_turn(ToolChoice::Auto, vec![read_file()])).await.unwrap();
    assert_eq!(response.tool_calls[0].name, "read_file");
    assert_eq!(server.bodies().len(), 5);

    // Streamed, as seen live: answering in words, its `auto` streams (nothing), and the
    // words of `none` stream too.
    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    let (events, outcome) = collect(model.stream(&after_a_call(ToolChoice::Auto))).await;
    let response = outcome.unwrap();
    assert_events_match(&events, &response);
    assert_eq!(response.content, "I called read_file and saw no result.");
    assert!(matches!(events[0], ModelEvent::TextDelta(_)), "{events:?}");
    let sent: Vec<(Value, Value)> =
        server.bodies().iter().map(|b| (b["stream"].clone(), b["tool_choice"].clone())).collect();
    assert_eq!(sent, [(json!(true), json!("auto")), (json!(true), json!("none"))]);
    assert_eq!(warnings.lock().unwrap().len(), 1);
}

/// Only an answer that says nothing, to `auto` with tools, is asked again, and only once:
/// empty under another choice, without tools, cut off, or empty again under `none`, it
/// is the answer. Streamed, an empty answer has no event before its end, so nothing was
/// shown; the second answer streams.
#[tokio::test]
async fn only_nothing_under_auto_is_asked_again_and_only_once() {
    let nothing = |finish: &str| {
        json!({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": finish}]})
        .to_string()
    };
    let mut no_tools = after_a_call(ToolChoice::Auto);
    no_tools.tools.clear();
    let cases = [
        (after_a_call(ToolChoice::Required), nothing("stop"), 1),
        (after_a_call(ToolChoice::Tool("read_file".into())), nothing("stop"), 1),
        (after_a_call(ToolChoice::None), nothing("stop"), 1),
        (no_tools, nothing("stop"), 1),
        (after_a_call(ToolChoice::Auto), nothing("length"), 1),
        (after_a_call(ToolChoice::Auto), nothing("stop"), 2),
    ];
    for (request, reply, sent) in cases {
        let server = Server::start(vec![Reply::json(200, reply.clone()), Reply::json(200, reply)]);
        let (model, warnings) = local_model(&server);
        let response = model.complete(&request).await.unwrap();
        assert_eq!((response.content.as_str(), response.tool_calls.len()), ("", 0));
        assert_eq!(server.bodies().len(), sent, "{:?}", request.tool_choice);
        assert_eq!(warnings.lock().unwrap().len(), sent - 1);
    }

    let empty_stream_answer = sse_reply(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ]);
    let streamed_words = sse_reply(&[
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Do"}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "ne."}, "finish_reason": "stop"}]}),
    ]);
    let server = Server::start(vec![empty_stream_answer, streamed_words]);
    let (model, _) = local_model(&server);
    let (events, outcome) = collect(model.stream(&after_a_call(ToolChoice::Auto))).await;
    let response = outcome.unwrap();
    assert_events_match(&events, &response);
    assert_eq!(response.content, "Done.");
    assert_eq!(events.iter().filter(|e| matches!(e, ModelEvent::TextDelta(_))).count(), 2);
    let bodies = server.bodies();
    assert_eq!((&bodies[1]["tool_choice"], &bodies[1]["stream"]), (&json!("none"), &json!(true)));
}

fn sse_reply(chunks: &[Value]) -> Reply {
    Reply::event_stream(harnessx_test_support::sse::openai(chunks))
}

/// Streamed, `required` and one tool on llama-cpp-python: an empty stream, then a 500
/// without streaming, then the tool named: three sends the first time, one after.
#[tokio::test]
async fn a_streamed_required_takes_three_sends_once_then_one() {
    let server = Local::LlamaCppPython.start();
    let (model, warnings) = local_model(&server);
    let request = first_turn(ToolChoice::Required, vec![read_file()]);
    let (_, outcome) = collect(model.stream(&request)).await;
    assert_eq!(outcome.unwrap().tool_calls[0].arguments, r#"{"path": "note.txt"}"#);
    let sent: Vec<(Value, Value)> = server
        .bodies()
        .iter()
        .map(|b| (b.get("stream").cloned().unwrap_or(Value::Null), b["tool_choice"].clone()))
        .collect();
    let named = json!({"type": "function", "function": {"name": "read_file"}});
    assert_eq!(
        sent,
        [(json!(true), json!("required")), (Value::Null, json!("required")), (Value::Null, named.clone())]
    );
    // The empty stream, the refused `required`, and the call's id.
    assert_eq!(warnings.lock().unwrap().len(), 3);
    collect(model.stream(&request)).await.1.unwrap();
    assert_eq!(server.bodies().len(), 4);
    assert_eq!((server.bodies()[3].get("stream"), &server.bodies()[3]["tool_choice"]), (None, &named));
    assert_eq!(warnings.lock().unwrap().len(), 3);
}

/// A server that answers with an empty stream even when asked not to stream: the error a
/// stream cut early gives (retryable), after two sends, never a loop.
#[tokio::test]
async fn a_server_that_is_always_empty_is_a_transport_error_after_two_sends() {
    let server = Server::start(vec![Reply::sse(Vec::new(), Some(1)), Reply::sse(Vec::new(), None)]);
    let (model, warnings) = local_model(&server);
    let (_, outcome) = collect(model.stream(&first_turn(ToolChoice::Auto, vec![read_file()]))).await;
    let e = outcome.unwrap_err();
    assert!(
        matches!(&e, ModelError::Transport(m) if m.contains("ended before the answer was complete")),
        "{e:?}"
    );
    assert!(e.is_retryable());
    assert_eq!(server.bodies().len(), 2);
    assert_eq!(warnings.lock().unwrap().len(), 1);
}

/// One answer of `model` to `request`, streamed or not.
async fn ask(model: &OpenAiModel, request: &ModelRequest, stream: bool) -> Result<ModelResponse, ModelError> {
    if stream {
        let (events, outcome) = collect(model.stream(request)).await;
        if let Ok(response) = &outcome {
            assert_events_match(&events, response);
        }
        outcome
    } else {
        model.complete(request).await
    }
}

/// The line said when a server's call ids show that its template drops `tool` messages.
fn results_left_out(server: &Server) -> String {
    format!(
        "the server at {}/v1 names its tool calls as llama-cpp-python's function-calling chat formats do (call__N_NAME_cmpl-UUID), whose prompt template leaves tool results out; sending each turn's tool results as one user message from now on (llama.cpp's llama-server --jinja takes tool messages as they are)",
        server.url
    )
}

/// Regression (issue 32, live): llama-cpp-python's `chatml-function-calling` template has
/// no branch for the `tool` role, so its model never saw a tool's result and a run never
/// got an answer about it. Once the server answers with a call id of its handlers' shape
/// (`call__0_read_file_cmpl-UUID`), each turn's results go as one user message, each under
/// a line naming its tool and call; the assistant messages keep their calls. Before that
/// answer nothing changes; said once; a clone knows, a new base URL starts over.
#[tokio::test]
async fn a_llama_cpp_python_call_id_sends_each_turns_results_as_one_user_message() {
    for stream in [false, true] {
        let server = Local::LlamaCppPython.start();
        let (model, warnings) = local_model(&server);
        // Not yet learned: the `tool` message goes, and the model does not see it.
        let response = ask(&model, &after_a_call(ToolChoice::None), stream).await.unwrap();
        assert_eq!(response.content, "I called read_file and saw no result.", "stream={stream}");
        assert_eq!(server.bodies()[0]["messages"][2]["role"], "tool");
        assert!(warnings.lock().unwrap().is_empty());

        let named = ToolChoice::Tool("read_file".into());
        let response = ask(&model, &first_turn(named.clone(), vec![read_file()]), stream).await.unwrap();
        assert_eq!(response.tool_calls[0].id, llama_cpp_python_call_id("read_file"));
        assert_eq!(*warnings.lock().unwrap(), [results_left_out(&server)], "stream={stream}");

        // Two turns: one result, then two (one of them an error), each turn's as one message.
        let mut request = after_a_call(ToolChoice::None);
        let result = |id: &str, content: &str, is_error: bool| Message::Tool {
            call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error,
            parts: Parts::new(),
        };
        request.messages.extend([
            Message::assistant(
                "Reading both.",
                vec![
                    ToolCall::new("call_2", "read_file", r#"{"path": "a.txt"}"#),
                    ToolCall::new("call_3", "read_file", r#"{"path": "b.txt"}"#),
                ],
            ),
            result("call_2", "alpha", false),
            result("call_3", "no such file: b.txt", true),
        ]);
        request.system = Some("Be brief.".into());
        let response = ask(&model, &request, stream).await.unwrap();
        let last_turn =
            "[read_file result, call call_2]\nalpha\n\n[read_file error, call call_3]\nno such file: b.txt";
        assert_eq!(response.content, format!("The note says: {last_turn}"), "stream={stream}");
        let bodies = server.bodies();
        let sent = bodies.last().unwrap();
        // What was sent is the body before any detour (`request_body`) but for the results.
        let mut want = model.request_body(&request, stream);
        let messages = want["messages"].as_array_mut().unwrap();
        messages.splice(
            3..4,
            [json!({"role": "user", "content": "[read_file result, call call_1]\nThe secret word is plum."})],
        );
        messages.splice(5..7, [json!({"role": "user", "content": last_turn})]);
        assert_eq!(sent, &want, "stream={stream}");
        assert_eq!(sent["messages"][2]["tool_calls"][0]["id"], "call_1");
        assert_eq!(sent["messages"][4]["tool_calls"].as_array().unwrap().len(), 2);

        // More such ids: nothing said again. A clone knows; a new base URL starts over.
        ask(&model, &first_turn(named, vec![read_file()]), stream).await.unwrap();
        ask(&model.clone(), &after_a_call(ToolChoice::None), stream).await.unwrap();
        assert_eq!(server.bodies().last().unwrap()["messages"][2]["role"], "user");
        let fresh = model.clone().base_url(format!("{}/v1", server.url));
        ask(&fresh, &after_a_call(ToolChoice::None), stream).await.unwrap();
        assert_eq!(server.bodies().last().unwrap()["messages"][2]["role"], "tool");
        assert_eq!(warnings.lock().unwrap().len(), 1);
    }
}

/// Only the whole shape of llama-cpp-python's call ids changes how results go: other
/// servers' ids, and ids that nearly match (no index, another call's name, no UUID, a
/// huge one), keep the `tool` messages and say nothing, streamed or not.
#[tokio::test]
async fn other_call_ids_keep_the_tool_messages() {
    const UUID: &str = "5b0c4bd9-7f7e-4c35-9b7b-0e2a1f9d8c61";
    let ids = [
        ("call_abc".to_owned(), "tool"),
        ("Xq3mGJ0rHhmCdTa2cB3Xo0LN0ZYBg6fL".to_owned(), "tool"),
        (format!("call__x_read_file_cmpl-{UUID}"), "tool"),
        ("call__x_read_file_cmpl-".to_owned(), "tool"),
        (format!("call__0_list_directory_cmpl-{UUID}"), "tool"),
        ("call__0_read_file_cmpl-1".to_owned(), "tool"),
        (format!("call__0_read_file_cmpl-{}", "a".repeat(200_000)), "tool"),
        (format!("call__0_read_file_cmpl-{UUID}"), "user"),
    ];
    for stream in [false, true] {
        for (id, role) in &ids {
            let call =
                json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}});
            let first = if stream {
                sse_reply(&[
                    json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0}]}}]}),
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}]}),
                ])
            } else {
                Reply::json(
                    200,
                    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [call]}, "finish_reason": "tool_calls"}]})
                        .to_string(),
                )
            };
            let words = if stream {
                sse_reply(&[
                    json!({"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}),
                ])
            } else {
                Reply::json(200, json!({"choices": [{"index": 0, "message": {"content": "Done."}, "finish_reason": "stop"}]}).to_string())
            };
            let server = Server::start(vec![first, words]);
            let (model, warnings) = local_model(&server);
            let case = format!("stream={stream} {}", &id[..id.len().min(60)]);
            let response =
                ask(&model, &first_turn(ToolChoice::Auto, vec![read_file()]), stream).await.unwrap();
            assert_eq!(&response.tool_calls[0].id, id, "{case}");
            let mut request = after_a_call(ToolChoice::Auto);
            request.messages[1] = Message::assistant("", response.tool_calls.clone());
            let Message::Tool { call_id, .. } = &mut request.messages[2] else { unreachable!() };
            call_id.clone_from(id);
            assert_eq!(ask(&model, &request, stream).await.unwrap().content, "Done.", "{case}");
            let sent = &server.bodies()[1]["messages"][2];
            assert_eq!(sent["role"], *role, "{case}");
            assert_eq!(warnings.lock().unwrap().len(), usize::from(*role == "user"), "{case}");
        }
    }
}

/// Posts `body` to a loopback server as is: (status, content type, body text).
async fn post_raw(server: &Server, body: Value) -> (u16, String, String) {
    // reqwest is built without a crypto provider of its own (the adapter installs ring).
    harnessx_infra::tls::install_default_provider();
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.url))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind =
        response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

/// The loopback imitations answer the bodies issue 32 lists exactly as it says, and as
/// the servers' code does (the rows of the compatibility table in `docs/models.md`): what
/// each does with `content` beside tool calls, with `tool_choice`, with `tool` messages
/// (whether the model sees the result), with a stream with tools, and with usage.
#[tokio::test]
async fn the_local_server_imitations_answer_as_documented() {
    let tools = json!([
        {"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "list_directory", "description": "List a folder.", "parameters": {"type": "object"}}}
    ]);
    let call = |content: Option<Value>| {
        let mut m = json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]});
        if let Some(content) = content {
            m["content"] = content;
        }
        json!({"model": "m", "tools": tools, "tool_choice": "auto", "messages": [
            {"role": "user", "content": "Read it."}, m, {"role": "tool", "tool_call_id": "c1", "content": "plum"}]})
    };
    let first = |tool_choice: Option<Value>, stream: bool| {
        let mut body =
            json!({"model": "m", "tools": tools, "messages": [{"role": "user", "content": "Read it."}]});
        if let Some(choice) = tool_choice {
            body["tool_choice"] = choice;
        }
        if stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    };
    let named = |name: &str| json!({"type": "function", "function": {"name": name}});
    let error_of = |text: &str| serde_json::from_str::<Value>(text).unwrap()["error"].clone();

    // llama-cpp-python 0.3.x, chatml-function-calling.
    let server = Local::LlamaCppPython.start();
    let (status, _, text) = post_raw(&server, call(Some(Value::Null))).await;
    assert_eq!(status, 500);
    let message = error_of(&text)["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("7 validation errors:\n") && message.matches("\n  {").count() == 7,
        "{message}"
    );
    assert!(message.contains("'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string'"), "{message}");
    let (status, _, text) = post_raw(&server, call(None)).await;
    assert_eq!(
        (status, error_of(&text)["message"].as_str()),
        (500, Some("'dict object' has no attribute 'content'"))
    );
    let (status, _, text) = post_raw(&server, call(Some(json!("")))).await;
    assert_eq!(status, 200, "{text}");
    // After the call, `auto` answers in words with nothing; `none` answers in words from
    // a model that never saw the tool's result.
    let answer = |text: &str| serde_json::from_str::<Value>(text).unwrap()["choices"][0].clone();
    assert_eq!(
        answer(&text),
        json!({"index": 0, "message": {"content": "", "role": "assistant"}, "logprobs": null, "finish_reason": "stop"})
    );
    let mut none = call(Some(json!("")));
    none["tool_choice"] = json!("none");
    let (_, _, text) = post_raw(&server, none).await;
    assert_eq!(answer(&text)["message"]["content"], "I called read_file and saw no result.");
    let (status, _, text) = post_raw(&server, first(Some(json!("required")), false)).await;
    assert_eq!(
        (status, error_of(&text)),
        (500, json!({"message": "", "type": "internal_server_error", "param": null, "code": null}))
    );
    for choice in ["auto", "required"] {
        let (status, kind, text) = post_raw(&server, first(Some(json!(choice)), true)).await;
        assert_eq!((status, kind.as_str(), text.as_str()), (200, "text/event-stream", ""), "{choice}");
    }
    // No `tool_choice`: the tools are not in the prompt, the model answers.
    let (status, _, text) = post_raw(&server, first(None, false)).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["choices"][0]["message"]["content"], "Hello.");
    let (status, _, text) = post_raw(&server, first(Some(named("list_directory")), true)).await;
    assert!(
        status == 200 && text.contains("\"name\":\"list_directory\"") && !text.contains("usage"),
        "{text}"
    );
    let (status, _, text) = post_raw(&server, first(Some(named("list_directory")), false)).await;
    assert!(
        status == 200
            && text.contains(&format!(
                "\"tool_calls\":[{{\"id\":\"{}\"",
                llama_cpp_python_call_id("list_directory")
            )),
        "{text}"
    );

    // llama-server --jinja.
    let server = Local::LlamaServer.start();
    let (status, _, text) = post_raw(&server, call(None)).await;
    assert_eq!(status, 500);
    assert!(
        error_of(&text)["message"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse messages: Expected 'content'"),
        "{text}"
    );
    for content in [Value::Null, json!("")] {
        let (status, _, text) = post_raw(&server, call(Some(content))).await;
        assert_eq!((status, &answer(&text)["message"]["content"]), (200, &json!("The note says: plum")));
    }
    // A named function reads as auto: the model picks (here the first tool).
    let (_, _, text) = post_raw(&server, first(Some(named("list_directory")), false)).await;
    assert!(text.contains("\"name\":\"read_file\""), "{text}");
    let (status, _, text) = post_raw(&server, first(Some(json!("any")), false)).await;
    assert_eq!((status, error_of(&text)["message"].as_str()), (400, Some("Invalid tool_choice: any")));
    let (_, _, text) = post_raw(&server, first(Some(json!("required")), true)).await;
    assert!(text.contains("\"tool_calls\"") && text.contains("\"choices\":[],\"usage\""), "{text}");

    // vLLM, with and without --enable-auto-tool-choice.
    let server = Local::Vllm.start();
    for content in [None, Some(Value::Null), Some(json!(""))] {
        let (status, _, text) = post_raw(&server, call(content)).await;
        assert_eq!((status, &answer(&text)["message"]["content"]), (200, &json!("The note says: plum")));
    }
    let (_, _, text) = post_raw(&server, first(None, true)).await;
    assert!(text.contains("\"tool_calls\"") && text.contains("\"choices\":[],\"usage\""), "{text}");
    let (_, _, text) = post_raw(&server, first(Some(named("list_directory")), false)).await;
    assert!(text.contains("\"name\":\"list_directory\""), "{text}");
    let server = Local::VllmWithoutAutoToolChoice.start();
    for choice in [None, Some(json!("auto"))] {
        let (status, _, text) = post_raw(&server, first(choice, false)).await;
        assert_eq!(status, 400);
        assert_eq!(
            error_of(&text)["message"],
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        );
    }
    assert_eq!(post_raw(&server, first(Some(json!("required")), false)).await.0, 200);

    // Ollama /v1.
    let server = Local::Ollama.start();
    for content in [None, Some(Value::Null), Some(json!(""))] {
        let (status, _, text) = post_raw(&server, call(content)).await;
        assert_eq!((status, &answer(&text)["message"]["content"]), (200, &json!("The note says: plum")));
    }
    let (status, _, text) =
        post_raw(&server, json!({"model": "m", "messages": [{"role": "user", "content": null}]})).await;
    assert_eq!(
        (status, error_of(&text)["message"].as_str()),
        (400, Some("invalid message content type: <nil>"))
    );
    // `tool_choice` is not read: `none` and a named tool change nothing.
    for choice in [json!("none"), named("list_directory")] {
        let (_, _, text) = post_raw(&server, first(Some(choice), false)).await;
        assert!(text.contains("\"name\":\"read_file\""), "{text}");
    }
    let (_, _, text) = post_raw(&server, first(None, true)).await;
    assert!(
        text.contains("\"arguments\":\"{\\\"path\\\": \\\"note.txt\\\"}\"") && text.contains("\"usage\""),
        "{text}"
    );
}
