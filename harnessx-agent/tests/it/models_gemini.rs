//! The Gemini adapter against a loopback server replaying recorded Gemini 3 streams
//! (vercel/ai's fixtures, whole and re-split down to one byte per HTTP chunk) and
//! non-streamed bodies; thought signatures going back byte for byte on their part; HTTP
//! errors; the exact request bodies; the schema dialect on real tool definitions; hostile
//! answers; and one agent run with a tool round trip.

use crate::common;

use std::sync::{Arc, Mutex};

use common::{Reply, SPLITS, Server, assert_events_match, collect, dead_url, fixture};
use harnessx_agent::model::gemini::{GEMINI_SCHEMA_KEYWORDS, gemini_schema};
use harnessx_agent::model::{
    FinishReason, GeminiModel, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    OutputFormat, Reasoning, ReasoningConfig, ReasoningEffort, ToolChoice,
};
use harnessx_agent::{Agent, AgentConfig, call_ids_for_turn};
use harnessx_core::registry::ToolSpec;
use harnessx_core::{Parts, ToolCall, ToolDefinition, ToolHandler};
use serde_json::{Value, json};

fn model(server: &Server) -> GeminiModel {
    GeminiModel::new("gemini-3-pro-preview").base_url(&server.url).api_key("gm-test")
}

fn hello() -> ModelRequest {
    ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() }
}

/// The `thoughtSignature` values of a recorded body, in order, as the bytes on the wire.
fn signatures(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8(body.to_vec()).unwrap();
    text.split("\"thoughtSignature\":")
        .skip(1)
        .map(|rest| {
            let rest = rest.trim_start().strip_prefix('"').unwrap();
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

/// Replays `path` whole and at every split (one byte per chunk: every byte boundary is a
/// split) and at each chunk size up to 40; every replay gives the same response and
/// events that agree with it.
async fn replay(path: &str) -> (Vec<ModelEvent>, ModelResponse) {
    let mut first: Option<(Vec<ModelEvent>, ModelResponse)> = None;
    for split in SPLITS.into_iter().chain((2..=40).map(Some)) {
        let server = Server::start(vec![Reply::sse(fixture(path), split)]);
        let (events, outcome) = collect(model(&server).stream(&hello())).await;
        let response = outcome.unwrap_or_else(|e| panic!("{path} split {split:?}: {e}"));
        assert_events_match(&events, &response);
        match &first {
            None => first = Some((events, response)),
            Some((whole_events, whole)) => {
                assert_eq!(&response, whole, "{path} split {split:?} differs from the whole body");
                assert_eq!(&events, whole_events, "{path} split {split:?}");
            }
        }
    }
    first.unwrap()
}

#[tokio::test]
async fn text_stream_keeps_its_signature_on_the_text_span_and_counts_thoughts_as_output() {
    let path = "vercel_ai/google_text.derived.sse";
    let (_, response) = replay(path).await;
    let text = "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y";
    assert_eq!(response.content, text);
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let usage = response.usage;
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.reasoning_tokens), (9, 23 + 185, 185));
    // The signature came on an empty text part after all the text.
    let sig = signatures(&fixture(path)).remove(0);
    assert_eq!(
        response.reasoning,
        vec![Reasoning {
            provider: "gemini".into(),
            text: String::new(),
            signature: Some(sig.clone()),
            data: json!({"part": "text", "start": text.len(), "end": text.len()}),
        }]
    );
    // Sent back: the text, then the empty part with the signature, byte-identical.
    let next = ModelRequest {
        messages: vec![
            Message::user("hello"),
            Message::assistant_with_reasoning(&response.content, vec![], response.reasoning),
            Message::user("and?"),
        ],
        ..ModelRequest::default()
    };
    let body = model(&Server::start(vec![])).request_body(&next);
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [{"text": text}, {"text": "", "thoughtSignature": sig}]})
    );
}

#[tokio::test]
async fn reasoning_stream_of_gemini_3_replays_the_same_at_every_split() {
    let (_, response) = replay("vercel_ai/google_reasoning_gemini3.derived.sse").await;
    assert_eq!(response.content, "There are **3** \"r\"s in strawberry.\n\nSt**r**awbe**rr**y");
    assert_eq!(response.usage.reasoning_tokens, 302);
    assert_eq!(response.reasoning.len(), 1);
}

#[tokio::test]
async fn one_function_call_with_its_signature() {
    let path = "vercel_ai/google_tool_call.derived.sse";
    let (events, response) = replay(path).await;
    // Gemini gives calls no id: the run names them (`call_{turn}_{i}`).
    assert_eq!(response.tool_calls, vec![ToolCall::new("", "weather", r#"{"location":"San Francisco"}"#)]);
    assert!(events.contains(&ModelEvent::ToolCallStart {
        index: 0,
        id: String::new(),
        name: "weather".into()
    }));
    // STOP after calls is a tool-call turn.
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (29, 15 + 45));
    assert_eq!(response.reasoning.len(), 1);
    assert_eq!(response.reasoning[0].signature.as_deref(), Some(signatures(&fixture(path))[0].as_str()));
    assert_eq!(response.reasoning[0].data, json!({"part": "call", "call": 0}));
}

#[tokio::test]
async fn complete_uses_generate_content_and_the_key_header() {
    let body = fixture("vercel_ai/google_tool_call.json");
    let server = Server::start(vec![Reply::json(200, body.clone())]);
    let response = model(&server).complete(&hello()).await.unwrap();
    assert_eq!(response.tool_calls, vec![ToolCall::new("", "weather", r#"{"location":"San Francisco"}"#)]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.output_tokens, 15 + 893);
    assert_eq!(response.reasoning[0].signature.as_deref(), Some(signatures(&body)[0].as_str()));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1beta/models/gemini-3-pro-preview:generateContent");
    assert_eq!(request.header("x-goog-api-key"), Some("gm-test"));
    assert_eq!(request.header("authorization"), None);

    let server = Server::start(vec![Reply::json(200, fixture("vercel_ai/google_text.json"))]);
    let response = model(&server).complete(&hello()).await.unwrap();
    assert!(response.content.starts_with("There are **3** r's"));
    assert_eq!(
        response.reasoning[0].data,
        json!({"part": "text", "start": 0, "end": response.content.len()})
    );
}

#[tokio::test]
async fn streaming_goes_to_stream_generate_content_with_alt_sse() {
    let server = Server::start(vec![Reply::sse(fixture("vercel_ai/google_text.derived.sse"), None)]);
    collect(model(&server).stream(&hello())).await.1.unwrap();
    assert_eq!(
        server.requests()[0].path,
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        GeminiModel::new("models/m").base_url("http://h:1/v1beta/").endpoint(false),
        "http://h:1/v1beta/models/m:generateContent"
    );
}

/// Two calls in one chunk and a third in the next; only the first is signed (as Gemini
/// signs parallel calls).
fn parallel_chunks() -> Vec<Value> {
    vec![
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLTE="},
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}
        ]}}], "usageMetadata": {"promptTokenCount": 40}}),
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_time", "args": {}}}
        ]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 30, "thoughtsTokenCount": 12, "cachedContentTokenCount": 32}}),
    ]
}

#[tokio::test]
async fn parallel_calls_keep_their_order_and_results_go_back_by_name_and_order() {
    let body = harnessx_test_support::sse::gemini(&parallel_chunks());
    let mut first = None;
    for split in SPLITS {
        let server = Server::start(vec![Reply::sse(body.clone().into_bytes(), split)]);
        let (events, outcome) = collect(model(&server).stream(&hello())).await;
        let response = outcome.unwrap();
        assert_events_match(&events, &response);
        assert_eq!(first.get_or_insert(response.clone()), &response);
    }
    let response = first.unwrap();
    let names: Vec<(&str, &str)> =
        response.tool_calls.iter().map(|c| (c.name.as_str(), c.arguments.as_str())).collect();
    assert_eq!(
        names,
        [("get_weather", r#"{"city":"Paris"}"#), ("get_weather", r#"{"city":"Rome"}"#), ("get_time", "{}")]
    );
    let usage = response.usage;
    assert_eq!((usage.input_tokens, usage.cached_input_tokens, usage.output_tokens), (40, 32, 42));

    let calls = call_ids_for_turn(response.tool_calls, 1);
    assert_eq!(calls[2].id, "call_1_2");
    let mut messages = vec![
        Message::user("weather?"),
        Message::assistant_with_reasoning("", calls.clone(), response.reasoning),
    ];
    for (call, (content, is_error)) in
        calls.iter().zip([("18C", false), ("no such city", true), ("noon", false)])
    {
        messages.push(Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error,
            parts: Parts::new(),
        });
    }
    let body =
        model(&Server::start(vec![])).request_body(&ModelRequest { messages, ..ModelRequest::default() });
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "weather?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
                {"functionCall": {"name": "get_time", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "18C"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "no such city"}}},
                {"functionResponse": {"name": "get_time", "response": {"result": "noon"}}}
            ]}
        ])
    );
}

#[tokio::test]
async fn thoughts_stream_as_reasoning_and_never_go_back_as_text() {
    let path = "vercel_ai/google_thought_then_call.derived.sse";
    let (events, response) = replay(path).await;
    let thought: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(thought.starts_with("**Processing User Requests**"), "{thought}");
    assert_eq!(response.content, "");
    assert_eq!(response.tool_calls, vec![ToolCall::new("", "read_theme", "{}")]);
    assert_eq!(response.reasoning.len(), 2);
    assert_eq!(
        (response.reasoning[0].text.as_str(), &response.reasoning[0].signature),
        (thought.as_str(), &None)
    );
    assert_eq!(response.reasoning[1].data, json!({"part": "call", "call": 0}));
    assert_eq!((response.usage.output_tokens, response.usage.reasoning_tokens), (58 + 183, 183));

    let calls = call_ids_for_turn(response.tool_calls, 0);
    let next = ModelRequest {
        messages: vec![
            Message::user("go"),
            Message::assistant_with_reasoning("", calls.clone(), response.reasoning),
            Message::Tool {
                call_id: calls[0].id.clone(),
                name: "read_theme".into(),
                content: "dark".into(),
                is_error: false,
                parts: Parts::new(),
            },
        ],
        ..ModelRequest::default()
    };
    let body = model(&Server::start(vec![])).request_body(&next);
    let sig = signatures(&fixture(path)).remove(0);
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "read_theme", "args": {}}, "thoughtSignature": sig}]})
    );
    assert!(!body.to_string().contains("Processing User Requests"));
}

#[tokio::test]
async fn other_providers_reasoning_is_left_out() {
    let reasoning =
        vec![Reasoning { signature: Some("ant-sig".into()), ..Reasoning::new("anthropic", "mine") }];
    let request = ModelRequest {
        messages: vec![Message::user("a"), Message::assistant_with_reasoning("b", vec![], reasoning)],
        ..ModelRequest::default()
    };
    let body = GeminiModel::new("m").request_body(&request);
    assert_eq!(body["contents"][1], json!({"role": "model", "parts": [{"text": "b"}]}));
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "unit": {"type": ["string", "null"], "enum": ["c", "f", null], "default": "c"}
            },
            "required": ["city", "unit"],
            "additionalProperties": false
        }),
    }
}

#[tokio::test]
async fn request_body_pins_tools_tool_config_thinking_and_output() {
    let server = Server::start(vec![Reply::sse(fixture("vercel_ai/google_text.derived.sse"), None)]);
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![Message::user("Weather in Paris?")],
        tools: vec![
            weather_tool(),
            ToolSpec {
                name: "ping".into(),
                description: "Ping.".into(),
                input_schema: json!({"type": "object", "properties": {}}),
            },
        ],
        max_tokens: Some(1000),
        tool_choice: ToolChoice::Tool("get_weather".into()),
        parallel_tool_calls: Some(false),
        output: Some(OutputFormat {
            name: "final_result".into(),
            schema: json!({"type": "object", "properties": {"temp": {"type": "number", "exclusiveMinimum": -274}}, "required": ["temp"], "additionalProperties": false}),
            native: true,
        }),
        reasoning: Some(ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: None }),
        prompt_cache_key: None,
    };
    collect(model(&server).stream(&request)).await.1.unwrap();
    let recorded = &server.requests()[0];
    assert_eq!(
        recorded.body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
            "tools": [{"functionDeclarations": [
                {"name": "get_weather", "description": "Weather for a city.", "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name."},
                        "unit": {"type": "string", "enum": ["c", "f"], "nullable": true}
                    },
                    "required": ["city", "unit"]
                }},
                {"name": "ping", "description": "Ping."}
            ]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
            "generationConfig": {
                "maxOutputTokens": 1000,
                // Gemini 3 takes the effort as a level.
                "thinkingConfig": {"thinkingLevel": "low", "includeThoughts": true},
                "responseMimeType": "application/json",
                "responseSchema": {"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]}
            }
        })
    );
    let keys: Vec<&str> = recorded.body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["systemInstruction", "contents", "tools", "toolConfig", "generationConfig"]);
}

#[tokio::test]
async fn tool_choice_maps_to_function_calling_modes_and_nothing_without_tools() {
    let gemini = GeminiModel::new("m");
    let with = |choice: ToolChoice, tools: Vec<ToolSpec>| {
        gemini.request_body(&ModelRequest { tools, tool_choice: choice, ..hello() })
    };
    assert_eq!(with(ToolChoice::Auto, vec![weather_tool()]).get("toolConfig"), None);
    assert_eq!(
        with(ToolChoice::Required, vec![weather_tool()])["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(
        with(ToolChoice::None, vec![weather_tool()])["toolConfig"],
        json!({"functionCallingConfig": {"mode": "NONE"}})
    );
    assert_eq!(with(ToolChoice::Required, vec![]).get("toolConfig"), None);
    // A budget is sent as it is; nothing at all without a reasoning config.
    let budget = gemini.request_body(&ModelRequest {
        reasoning: Some(ReasoningConfig { budget_tokens: Some(0), effort: None }),
        ..hello()
    });
    assert_eq!(
        budget["generationConfig"],
        json!({"thinkingConfig": {"thinkingBudget": 0, "includeThoughts": true}})
    );
    assert_eq!(gemini.request_body(&hello()).get("generationConfig"), None);
}

#[test]
fn gemini_3_takes_an_effort_as_a_thinking_level_and_never_with_a_budget() {
    let thinking = |model: &str, effort: Option<ReasoningEffort>, budget: Option<u32>| {
        let reasoning = Some(ReasoningConfig { effort, budget_tokens: budget });
        GeminiModel::new(model).request_body(&ModelRequest { reasoning, ..hello() })["generationConfig"]
            ["thinkingConfig"]
            .clone()
    };
    use ReasoningEffort::{High, Low, Medium, Minimal};
    // Gemini 3 Flash takes every level; Pro only low and high.
    for (effort, level) in [(Minimal, "minimal"), (Low, "low"), (Medium, "medium"), (High, "high")] {
        assert_eq!(
            thinking("gemini-3-flash-preview", Some(effort), None),
            json!({"thinkingLevel": level, "includeThoughts": true})
        );
    }
    for (effort, level) in [(Minimal, "low"), (Low, "low"), (Medium, "high"), (High, "high")] {
        assert_eq!(
            thinking("models/gemini-3-pro-preview", Some(effort), None),
            json!({"thinkingLevel": level, "includeThoughts": true})
        );
    }
    // A budget goes as a budget (the API refuses a level and a budget together), on
    // Gemini 3 too, and an effort goes as its budget before Gemini 3.
    assert_eq!(
        thinking("gemini-3-pro-preview", Some(High), Some(4096)),
        json!({"thinkingBudget": 4096, "includeThoughts": true})
    );
    assert_eq!(
        thinking("gemini-3-flash-preview", None, Some(0)),
        json!({"thinkingBudget": 0, "includeThoughts": true})
    );
    assert_eq!(
        thinking("gemini-2.5-flash", Some(Low), None),
        json!({"thinkingBudget": 2048, "includeThoughts": true})
    );
}

#[tokio::test]
async fn quota_error_body_is_a_retryable_http_error_with_the_message() {
    let server = Server::start(vec![Reply::json(429, fixture("vercel_ai/google_429_retry_info.json"))]);
    let e = collect(model(&server).stream(&hello())).await.1.unwrap_err();
    assert!(
        matches!(&e, ModelError::Http { status: 429, message } if message.contains("You exceeded your current quota")),
        "{e:?}"
    );
    assert!(e.is_retryable());
}

#[tokio::test]
async fn bad_key_is_an_auth_error_that_names_the_variable() {
    // Gemini answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID.
    let body = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#;
    let server = Server::start(vec![Reply::json(400, body)]);
    let e = model(&server).complete(&hello()).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Auth(m) if m.contains("GEMINI_API_KEY") && m.contains("API key not valid")),
        "{e:?}"
    );
    // No key for Google's own endpoint: said before sending anything.
    let e = collect(
        GeminiModel::new("m")
            .base_url("https://generativelanguage.googleapis.com")
            .api_key(" ")
            .stream(&hello()),
    )
    .await;
    if std::env::var_os("GEMINI_API_KEY").is_none() {
        assert!(matches!(e.1, Err(ModelError::Auth(m)) if m.contains("GEMINI_API_KEY")));
    }
}

#[tokio::test]
async fn too_long_prompt_is_a_context_window_error() {
    let body = r#"{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
    for stream in [false, true] {
        let server = Server::start(vec![Reply::json(400, body)]);
        let e = if stream {
            collect(model(&server).stream(&hello())).await.1.unwrap_err()
        } else {
            model(&server).complete(&hello()).await.unwrap_err()
        };
        assert!(
            matches!(e, ModelError::ContextWindow { limit: Some(1048576), requested: Some(1200293), .. }),
            "{e:?}"
        );
    }
}

#[tokio::test]
async fn server_errors_and_dead_servers_are_retryable() {
    let body = r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#;
    let server = Server::start(vec![Reply::json(503, body)]);
    let e = model(&server).complete(&hello()).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Http { status: 503, message } if message.contains("overloaded"))
            && e.is_retryable()
    );
    let e = collect(GeminiModel::new("m").base_url(dead_url()).api_key("k").stream(&hello()))
        .await
        .1
        .unwrap_err();
    assert!(matches!(e, ModelError::Transport(_)) && e.is_retryable(), "{e:?}");
}

/// What Gemini could send that does not make an answer: each ends in a clear error.
#[tokio::test]
async fn hostile_answers_end_in_clear_errors() {
    let text = |t: &str| json!({"candidates": [{"content": {"parts": [{"text": t}]}}]});
    let cases: Vec<(&str, String, &str)> = vec![
        // Cut off: the chunks so far, no finishReason.
        (
            "truncated",
            harnessx_test_support::sse::gemini(&[text("Hel")]),
            "ended before the answer was complete",
        ),
        (
            "cut inside a chunk",
            r#"data: {"candidates": [{"content": {"parts": [{"text": "Hel"#.to_owned(),
            "ended before the answer was complete",
        ),
        ("not JSON", "data: {\"candidates\": oops}\r\n\r\n".to_owned(), "not the JSON expected"),
        ("wrong shape", "data: {\"candidates\": {\"a\": 1}}\r\n\r\n".to_owned(), "not the JSON expected"),
        (
            "unknown part",
            harnessx_test_support::sse::gemini(&[
                json!({"candidates": [{"content": {"parts": [{"executableCode": {"code": "print(1)"}}]}, "finishReason": "STOP"}]}),
            ]),
            "executableCode",
        ),
        (
            "nameless call",
            harnessx_test_support::sse::gemini(&[
                json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}, "finishReason": "STOP"}]}),
            ]),
            "without a name",
        ),
        (
            "in-stream error",
            harnessx_test_support::sse::gemini(&[
                text("a"),
                json!({"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}),
            ]),
            "Internal error",
        ),
    ];
    for (case, body, wanted) in cases {
        for split in SPLITS {
            let server = Server::start(vec![Reply::sse(body.clone().into_bytes(), split)]);
            let (_, outcome) = collect(model(&server).stream(&hello())).await;
            let e = outcome.expect_err(case);
            assert!(e.to_string().contains(wanted), "{case} split {split:?}: {e}");
        }
    }
    // Vertex AI's streamed arguments (recorded), never asked for.
    let server = Server::start(vec![Reply::sse(
        fixture("vercel_ai/google_stream_no_args_tool_call.derived.sse"),
        Some(64),
    )]);
    let e = collect(model(&server).stream(&hello())).await.1.unwrap_err();
    assert!(matches!(&e, ModelError::Protocol(m) if m.contains("partialArgs")), "{e:?}");
    // A blocked prompt: no candidates, a content-filter finish.
    let blocked =
        json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}});
    let server = Server::start(vec![Reply::json(200, blocked.to_string())]);
    let response = model(&server).complete(&hello()).await.unwrap();
    assert_eq!((response.finish_reason, response.content.as_str()), (FinishReason::ContentFilter, ""));
}

/// Spec: no untrusted input recurses without bound. Arguments nested 1 to 1,000,000
/// levels deep, streamed and whole: a protocol error past serde_json's limit, the call
/// as sent within it; and 4 MB of arguments arrive whole.
#[tokio::test]
async fn deeply_nested_and_huge_arguments_end_in_an_error_or_the_call() {
    use harnessx_test_support::deep::{DEPTHS, Shape, nested_json};
    for depth in DEPTHS {
        for shape in Shape::ALL {
            let deep = nested_json(shape, depth);
            let case = format!("{shape:?} at depth {depth}");
            let started = std::time::Instant::now();
            // `{"candidates":[{"content":{"parts":[{"functionCall":{"args": ...`: six levels.
            let parses = shape != Shape::Unclosed && depth + 6 < 128;
            let chunk = format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"functionCall":{{"name":"store","args":{deep}}}}}]}},"finishReason":"STOP"}}]}}"#
            );
            let server =
                Server::start(vec![Reply::sse(format!("data: {chunk}\r\n\r\n").into_bytes(), Some(65536))]);
            match collect(model(&server).stream(&hello())).await.1 {
                Ok(response) => {
                    assert!(parses, "{case}");
                    assert_eq!(response.tool_calls[0].arguments, deep, "{case}");
                }
                Err(ModelError::Protocol(m)) => assert!(!parses && m.len() < 600, "{case}: {m}"),
                Err(e) => panic!("{case}: {e:?}"),
            }
            let server = Server::start(vec![Reply::json(200, chunk)]);
            match model(&server).complete(&hello()).await {
                Ok(response) => assert!(parses && response.tool_calls[0].arguments == deep, "{case}"),
                Err(ModelError::Protocol(m)) => assert!(!parses && m.len() < 600, "{case}: {m}"),
                Err(e) => panic!("{case}: {e:?}"),
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "{case}: {:?}",
                started.elapsed()
            );
        }
    }
    let huge = "x".repeat(4 << 20);
    let chunk = json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "store", "args": {"blob": huge}}}]}, "finishReason": "STOP"}]});
    let server = Server::start(vec![Reply::sse(
        harnessx_test_support::sse::gemini(&[chunk]).into_bytes(),
        Some(1 << 16),
    )]);
    let response = collect(model(&server).stream(&hello())).await.1.unwrap();
    assert_eq!(response.tool_calls[0].arguments.len(), huge.len() + r#"{"blob":""}"#.len());
}

/// BFCL's dialect (`dict`, `float`, `tuple`, `any`) as the JSON Schema it stands for.
fn from_bfcl(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter_map(|(k, v)| match (k.as_str(), v.as_str()) {
                    ("type", Some("any")) => None,
                    ("type", Some(t)) => Some((
                        k.clone(),
                        json!(match t {
                            "dict" => "object",
                            "float" => "number",
                            "tuple" => "array",
                            other => other,
                        }),
                    )),
                    _ => Some((k.clone(), from_bfcl(v))),
                })
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(from_bfcl).collect()),
        other => other.clone(),
    }
}

/// Everything in `schema` that Gemini's dialect has no place for, by path.
fn refused(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        out.push(format!("{path}: not an object"));
        return;
    };
    for (key, value) in map {
        let at = format!("{path}/{key}");
        if !GEMINI_SCHEMA_KEYWORDS.contains(&key.as_str()) {
            out.push(at.clone());
        }
        match key.as_str() {
            "type"
                if !matches!(
                    value.as_str(),
                    Some("string" | "number" | "integer" | "boolean" | "array" | "object")
                ) =>
            {
                out.push(at)
            }
            "enum" if !value.as_array().is_some_and(|v| v.iter().all(Value::is_string)) => out.push(at),
            "nullable" if !value.is_boolean() => out.push(at),
            "properties" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    refused(sub, &format!("{at}/{name}"), out);
                }
            }
            "items" => refused(value, &at, out),
            "anyOf" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    refused(sub, &format!("{at}/{i}"), out);
                }
            }
            "required" => {
                for name in value.as_array().into_iter().flatten() {
                    if map.get("properties").and_then(|p| p.get(name.as_str().unwrap_or_default())).is_none()
                    {
                        out.push(format!("{at}: {name} is not a property"));
                    }
                }
            }
            _ => {}
        }
    }
}

#[test]
fn schema_transform_leaves_nothing_gemini_refuses_in_real_tool_definitions() {
    let mut schemas: Vec<(String, Value)> = Vec::new();
    let bfcl = harnessx_test_support::fixture_json("tool_defs/bfcl_function_defs_sample.json");
    for f in bfcl["functions"].as_array().unwrap() {
        schemas.push((
            f["function"]["name"].as_str().unwrap().to_owned(),
            from_bfcl(&f["function"]["parameters"]),
        ));
    }
    let suite = harnessx_test_support::fixture_path("jsonschema_2020_12");
    for entry in std::fs::read_dir(suite).unwrap() {
        let path = entry.unwrap().path();
        let groups: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for group in groups.as_array().unwrap() {
            let name = format!("{}: {}", path.file_name().unwrap().to_string_lossy(), group["description"]);
            schemas.push((name, group["schema"].clone()));
        }
    }
    assert!(schemas.len() > 98 + 10, "{}", schemas.len());
    for (name, schema) in &schemas {
        let out = gemini_schema(schema);
        let mut problems = Vec::new();
        refused(&out, "", &mut problems);
        assert!(problems.is_empty(), "{name}: {problems:?} in {out}");
    }
    // The BFCL parameters keep their properties, descriptions and requirements.
    let first = gemini_schema(&schemas[0].1);
    assert_eq!(first["type"], "object");
    assert!(first["properties"].as_object().is_some_and(|p| !p.is_empty()), "{first}");
}

#[tokio::test]
async fn agent_runs_a_tool_round_trip_and_sends_the_signature_back_on_the_call() {
    let call_stream = fixture("vercel_ai/google_tool_call.derived.sse");
    let server = Server::start(vec![
        Reply::sse(call_stream.clone(), Some(7)),
        Reply::sse(fixture("vercel_ai/google_reasoning_gemini3.derived.sse"), Some(64)),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let weather = ToolDefinition::new(
        "weather",
        "Weather for a place.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"], "additionalProperties": false}),
        ToolHandler::from_async(move |args, _| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(args.to_string());
                Ok("72F and sunny".to_owned().into())
            }
        }),
    );
    let agent = Agent::builder()
        .model(model(&server))
        .tool(weather)
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let result = agent.run("Weather in San Francisco?").await.unwrap();
    assert!(result.output.starts_with("There are **3**"), "{}", result.output);
    assert_eq!(*seen.lock().unwrap(), [r#"{"location":"San Francisco"}"#]);
    assert_eq!(result.usage.input_tokens, 29 + 9);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let contents = &requests[1].body["contents"];
    let sig = signatures(&call_stream).remove(0);
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"location": "San Francisco"}}, "thoughtSignature": sig}]})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "weather", "response": {"result": "72F and sunny"}}}]})
    );
    // Byte-identical on the wire, not only equal as JSON.
    assert_eq!(signatures(&requests[1].raw), [sig]);
    assert_eq!(
        requests[0].body["tools"][0]["functionDeclarations"][0]["parameters"],
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]})
    );
}
