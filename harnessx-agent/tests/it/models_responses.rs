//! The OpenAI Responses adapter against a loopback server replaying recorded Responses
//! streams (vercel/ai's recordings, `fixtures/transcripts/openai_responses/`), whole and
//! re-split down to one byte a chunk: text, one and parallel calls, reasoning items and
//! their round trip byte for byte, usage, errors in the stream and as HTTP statuses,
//! streams cut short or malformed, the exact request body, and an agent's tool round trip.

use crate::common;

use std::time::{Duration, Instant};

use common::{Reply, SPLITS, Server, assert_events_match, collect, fixture};
use harnessx_agent::model::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, OpenAiModel,
    OpenAiResponsesModel, OutputFormat, Reasoning, ReasoningConfig, ToolChoice,
};
use harnessx_core::registry::ToolSpec;
use harnessx_core::{Parts, ToolCall};
use serde_json::{Value, json};

fn model(server: &Server) -> OpenAiResponsesModel {
    OpenAiResponsesModel::new("gpt-5.1-codex-max").base_url(format!("{}/v1", server.url)).api_key("sk-test")
}

fn hello() -> ModelRequest {
    ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() }
}

fn recording(name: &str) -> Vec<u8> {
    fixture(&format!("openai_responses/{name}"))
}

/// The JSON events of a recording, in order.
fn recorded_events(name: &str) -> Vec<Value> {
    String::from_utf8(recording(name))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// Replays `name` with every split (down to one byte a chunk); checks each against the
/// whole replay and the events against the response, and returns the whole one.
async fn replay(name: &str) -> (Vec<ModelEvent>, ModelResponse) {
    let mut first: Option<(Vec<ModelEvent>, ModelResponse)> = None;
    for split in SPLITS {
        let server = Server::start(vec![Reply::sse(recording(name), split)]);
        let (events, outcome) = collect(model(&server).stream(&hello())).await;
        let response = outcome.unwrap_or_else(|e| panic!("{name} split {split:?}: {e}"));
        assert_events_match(&events, &response);
        match &first {
            None => first = Some((events, response)),
            Some((whole_events, whole)) => {
                assert_eq!(&response, whole, "{name} split {split:?} differs from the whole body");
                assert_eq!(&events, whole_events, "{name} split {split:?}");
            }
        }
    }
    first.unwrap()
}

#[tokio::test]
async fn text_of_two_message_items_with_cached_and_reasoning_usage() {
    let (events, response) = replay("phase_two_messages_cached.derived.sse").await;
    // The recording keeps only a few of the deltas of each message: the text is what
    // streamed.
    assert_eq!(response.content, "Got itHere are a few **AI");
    assert!(events.iter().all(|e| matches!(e, ModelEvent::TextDelta(_))), "{events:?}");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert!(response.tool_calls.is_empty() && response.reasoning.is_empty());
    let usage = response.usage;
    assert_eq!(
        (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.reasoning_tokens),
        (7112, 3072, 463, 64)
    );
}

#[tokio::test]
async fn final_text_turn() {
    let (_, response) = replay("reasoning_calculator_turn3.derived.sse").await;
    assert_eq!(response.content, "The final result is **570**.");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (299, 12));
}

#[tokio::test]
async fn one_call_after_reasoning() {
    let (events, response) = replay("reasoning_calculator_turn0.derived.sse").await;
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", r#"{"a":12,"b":7,"op":"add"}"#)]
    );
    assert_eq!(response.content, "");
    // The reasoning: its summary as text (streamed as reasoning deltas first), the item
    // as the API sent it in `response.output_item.done`.
    let done = recorded_events("reasoning_calculator_turn0.derived.sse")
        .into_iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .unwrap();
    let summary = done["item"]["summary"][0]["text"].as_str().unwrap();
    assert!(summary.starts_with("**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7"));
    assert_eq!(
        response.reasoning,
        vec![Reasoning {
            provider: "openai-responses".into(),
            text: summary.into(),
            signature: None,
            data: done["item"].clone()
        }]
    );
    let thought: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(d) => Some(d.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thought, summary);
    let first_call = events.iter().position(|e| matches!(e, ModelEvent::ToolCallStart { .. })).unwrap();
    assert!(events[..first_call].iter().all(|e| matches!(e, ModelEvent::ReasoningDelta(_))));
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (134, 28));
}

#[tokio::test]
async fn parallel_calls_are_assembled_per_output_item() {
    let (events, response) = replay("parallel_two_calls.sse").await;
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    // The ids are those of `output_item.added` (the recording's `.done` items were
    // edited to other ids).
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("call_6KxSghkb4MVnunFH2TxPErLP", "currentLocation", "{}"),
            ToolCall::new("call_Dg6WUmFHNeR5JxX1s53s1G4b", "weather", r#"{"location":"Rome"}"#),
        ]
    );
    let second = events.iter().position(|e| matches!(e, ModelEvent::ToolCallStart { index: 1, .. })).unwrap();
    assert!(!events[second..].iter().any(|e| matches!(e, ModelEvent::ToolCallDelta { index: 0, .. })));
}

/// Spec: the reasoning item of a response goes back in the next request exactly as the
/// API sent it, before that turn's call; another provider's reasoning does not.
#[tokio::test]
async fn reasoning_goes_back_byte_for_byte_before_its_call() {
    let server = Server::start(vec![
        Reply::sse(recording("reasoning_calculator_turn0.derived.sse"), Some(7)),
        Reply::sse(recording("reasoning_calculator_turn1.derived.sse"), None),
    ]);
    let model = model(&server);
    let first = model.complete(&hello()).await.unwrap();
    let call = first.tool_calls[0].clone();
    let mut reasoning = first.reasoning.clone();
    reasoning.insert(0, Reasoning::new("anthropic", "someone else's thought"));
    let next = ModelRequest {
        messages: vec![
            Message::user("hello"),
            Message::assistant_with_reasoning("", vec![call.clone()], reasoning),
            Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: "19".into(),
                is_error: false,
                parts: Parts::new(),
            },
        ],
        ..ModelRequest::default()
    };
    let second = model.complete(&next).await.unwrap();
    assert_eq!(second.tool_calls[0].arguments, r#"{"a":19,"b":3,"op":"multiply"}"#);

    // The item's bytes in the recording are the bytes sent.
    let recorded = String::from_utf8(recording("reasoning_calculator_turn0.derived.sse")).unwrap();
    let line = recorded
        .lines()
        .find(|l| l.contains(r#""type":"response.output_item.done""#) && l.contains(r#""type":"reasoning""#))
        .unwrap();
    let start = line.find(r#""item":"#).unwrap() + r#""item":"#.len();
    let item_bytes = &line[start..line.len() - 1];
    assert!(item_bytes.starts_with(r#"{"id":"rs_"#) && item_bytes.contains("encrypted_content"));
    let sent = String::from_utf8(server.requests()[1].raw.clone()).unwrap();
    assert_eq!(sent.matches(item_bytes).count(), 1, "the reasoning item goes back byte for byte");
    assert!(!sent.contains("someone else's thought"));
    let input = server.requests()[1].body["input"].as_array().unwrap().clone();
    assert_eq!(input.len(), 4, "{input:?}");
    assert_eq!(input[0], json!({"role": "user", "content": "hello"}));
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "name": "calculator", "arguments": "{\"a\":12,\"b\":7,\"op\":\"add\"}"})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "output": "19"})
    );
}

#[tokio::test]
async fn non_streamed_answer_with_reasoning_and_usage() {
    let server = Server::start(vec![Reply::json(200, recording("nonstream_reasoning_message.json"))]);
    let response = model(&server).complete(&hello()).await.unwrap();
    let body: Value = serde_json::from_slice(&recording("nonstream_reasoning_message.json")).unwrap();
    assert_eq!(response.content, body["output"][1]["content"][0]["text"].as_str().unwrap());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.reasoning.len(), 1);
    assert_eq!(response.reasoning[0].data, body["output"][0]);
    let usage = response.usage;
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.reasoning_tokens), (865, 163, 128));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.body.get("stream"), None);
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
}

#[tokio::test]
async fn error_event_mid_stream_is_an_error_at_every_split() {
    for split in SPLITS {
        let server =
            Server::start(vec![Reply::sse(recording("error_insufficient_quota.derived.sse"), split)]);
        let (_, outcome) = collect(model(&server).stream(&hello())).await;
        match outcome {
            Err(ModelError::Protocol(m)) => {
                assert!(
                    m.contains("You exceeded your current quota") && m.contains("insufficient_quota"),
                    "{m}"
                );
                assert!(m.contains("OpenAI Responses API"), "{m}");
            }
            other => panic!("split {split:?}: {other:?}"),
        }
    }
}

fn sse(events: &[Value]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect::<String>()
        .into_bytes()
}

fn text_start() -> Vec<Value> {
    vec![
        json!({"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "m", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "m", "content_index": 0, "delta": "Hel"}),
    ]
}

/// What an error must be.
type Check = fn(&ModelError) -> bool;

#[tokio::test]
async fn reported_failures_map_to_their_errors() {
    let cases: Vec<(Value, Check)> = vec![
        // As OpenAI documents the `error` event: its fields beside the type.
        (
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached", "param": null}),
            |e| matches!(e, ModelError::Http { status: 429, .. }) && e.is_retryable(),
        ),
        (
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The model failed"}}}),
            |e| matches!(e, ModelError::Http { status: 500, message } if message.contains("The model failed")),
        ),
        (
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}),
            |e| matches!(e, ModelError::ContextWindow { .. }),
        ),
        (
            json!({"type": "response.failed", "response": {"status": "failed", "error": null}}),
            |e| matches!(e, ModelError::Protocol(m) if m.contains("without saying why")),
        ),
    ];
    for (event, check) in cases {
        let mut events = text_start();
        events.push(event.clone());
        let server = Server::start(vec![Reply::sse(sse(&events), Some(5))]);
        let (seen, outcome) = collect(model(&server).stream(&hello())).await;
        assert_eq!(seen, vec![ModelEvent::TextDelta("Hel".into())]);
        let e = outcome.unwrap_err();
        assert!(check(&e), "{event}: {e:?}");
    }
}

#[tokio::test]
async fn incomplete_for_max_output_tokens_is_length() {
    let mut events = text_start();
    events.push(json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 5, "output_tokens": 16}}}));
    let server = Server::start(vec![Reply::sse(sse(&events), None)]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let response = outcome.unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(response.content, "Hel");
    assert_eq!(response.usage.output_tokens, 16);
}

#[tokio::test]
async fn context_window_refusal_is_a_context_window_error() {
    let body = r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#;
    let server = Server::start(vec![Reply::json(400, body)]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    match outcome.unwrap_err() {
        ModelError::ContextWindow { message, .. } => {
            assert!(message.contains("exceeds the context window"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bad_key_and_server_errors_take_the_shared_path() {
    let server = Server::start(vec![Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )]);
    let e = model(&server).complete(&hello()).await.unwrap_err();
    assert!(
        matches!(&e, ModelError::Auth(m) if m.contains("OPENAI_API_KEY") && m.contains("Responses")),
        "{e:?}"
    );
    let server = Server::start(vec![Reply::json(503, "upstream unavailable")]);
    let e = model(&server).complete(&hello()).await.unwrap_err();
    assert!(matches!(e, ModelError::Http { status: 503, .. }) && e.is_retryable(), "{e:?}");
    let e = OpenAiResponsesModel::new("gpt-5")
        .base_url("https://api.openai.com/v1")
        .without_api_key()
        .complete(&hello())
        .await
        .unwrap_err();
    assert!(matches!(&e, ModelError::Auth(m) if m.contains("OPENAI_API_KEY")), "{e:?}");
}

#[tokio::test]
async fn stream_cut_inside_a_call_delivers_arguments_the_engine_refuses() {
    let text = String::from_utf8(recording("reasoning_calculator_turn0.derived.sse")).unwrap();
    let cut = &text[..text.find(r#""delta":"7""#).unwrap()];
    let server = Server::start(vec![Reply::sse(cut.as_bytes().to_vec(), Some(7))]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let response = outcome.unwrap();
    assert_eq!(response.finish_reason, FinishReason::Other("incomplete".into()));
    assert_eq!(response.tool_calls[0].arguments, r#"{"a":12,"b":"#);
    // Cut right after the call started: no argument text, and still not `{}`.
    let cut = &text[..text.find(r#""type":"response.function_call_arguments.delta""#).unwrap()];
    let server = Server::start(vec![Reply::sse(cut.as_bytes().to_vec(), None)]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let arguments = outcome.unwrap().tool_calls[0].arguments.clone();
    assert!(serde_json::from_str::<Value>(&arguments).is_err(), "{arguments}");
}

#[tokio::test]
async fn stream_cut_before_any_call_is_a_retryable_transport_error() {
    let text = String::from_utf8(recording("reasoning_calculator_turn3.derived.sse")).unwrap();
    let server = Server::start(vec![Reply::sse(text.as_bytes()[..text.len() / 2].to_vec(), Some(64))]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    let e = outcome.unwrap_err();
    assert!(matches!(e, ModelError::Transport(_)) && e.is_retryable(), "{e:?}");
}

/// Spec: outside input well past the example. A malformed event, an event of a known
/// type with the wrong shape, events of unknown types, a 16 MB delta, and an item nested
/// 1 to 1,000,000 levels deep: each the answer or a clear error, never a panic, quickly.
#[tokio::test]
async fn malformed_unknown_huge_and_deep_events() {
    // Unknown types, whatever their shape, are skipped.
    let mut events = text_start();
    events.insert(
        1,
        json!({"type": "response.something_new", "delta": {"not": "a string"}, "output_index": "x"}),
    );
    events.push(json!({"type": "response.completed", "response": {"status": "completed"}}));
    let server = Server::start(vec![Reply::sse(sse(&events), Some(3))]);
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    assert_eq!(outcome.unwrap().content, "Hel");

    for (bad, says) in [
        ("event: x\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n", "not as documented"),
        ("data: {\"type\":\"response.output_text.delta\",\"delta\":[1]}\n\n", "not as documented"),
        ("data: {\"type\":\"response.output_item.done\",\"item\":{}}\n\n", "has no `output_index`"),
    ] {
        let server = Server::start(vec![Reply::sse(bad.as_bytes().to_vec(), None)]);
        let (_, outcome) = collect(model(&server).stream(&hello())).await;
        let e = outcome.unwrap_err();
        assert!(matches!(&e, ModelError::Protocol(m) if m.contains(says) && m.len() < 600), "{bad}: {e:?}");
    }

    let huge = "x".repeat(16 << 20);
    let mut events = text_start();
    events.push(json!({"type": "response.output_text.delta", "output_index": 0, "delta": huge}));
    events.push(json!({"type": "response.completed", "response": {"status": "completed"}}));
    let server = Server::start(vec![Reply::sse(sse(&events), Some(1 << 16))]);
    let started = Instant::now();
    let (_, outcome) = collect(model(&server).stream(&hello())).await;
    assert_eq!(outcome.unwrap().content.len(), 3 + (16 << 20));
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());

    use harnessx_test_support::deep::{DEPTHS, Shape, nested_json};
    for depth in DEPTHS {
        for shape in Shape::ALL {
            let deep = nested_json(shape, depth);
            let case = format!("{shape:?} at depth {depth}");
            let parses = shape != Shape::Unclosed && depth < 120;
            let body = format!(
                "data: {{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"e\",\"extra\":{deep}}}}}\n\ndata: {{\"type\":\"response.completed\",\"response\":{{\"status\":\"completed\"}}}}\n\n"
            );
            let server = Server::start(vec![Reply::sse(body.into_bytes(), Some(4096))]);
            let started = Instant::now();
            let (_, outcome) = collect(model(&server).stream(&hello())).await;
            match outcome {
                Ok(response) => assert!(parses && response.reasoning.len() == 1, "{case}"),
                Err(ModelError::Protocol(m)) => assert!(!parses && m.len() < 600, "{case}: {m}"),
                Err(e) => panic!("{case}: {e:?}"),
            }
            assert!(started.elapsed() < Duration::from_secs(20), "{case}: {:?}", started.elapsed());
        }
    }
}

fn calculator() -> ToolSpec {
    ToolSpec {
        name: "calculator".into(),
        description: "Basic arithmetic.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "op": {"type": "string"}},
            "required": ["a", "b"]
        }),
    }
}

/// The whole body for a request with tools, a named tool choice, parallel calls off, a
/// reasoning budget, a native answer format, a token limit and a conversation whose
/// assistant turn has text, a call and another provider's reasoning: pinned byte for
/// byte, key order included.
#[test]
fn request_body_with_tools_choice_reasoning_and_output_is_pinned() {
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        messages: vec![
            Message::user("12 + 7?"),
            Message::assistant_with_reasoning(
                "Adding.",
                vec![
                    ToolCall::new("call_1", "calculator", r#"{"a":12,"b":7}"#),
                    ToolCall::new("call_2", "calculator", "{\"a\":"),
                ],
                vec![Reasoning::new("anthropic", "hidden")],
            ),
            Message::Tool {
                call_id: "call_1".into(),
                name: "calculator".into(),
                content: "19".into(),
                is_error: false,
                parts: Parts::new(),
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "calculator".into(),
                content: "Error: bad arguments".into(),
                is_error: true,
                parts: Parts::new(),
            },
        ],
        tools: vec![calculator()],
        max_tokens: Some(256),
        tool_choice: ToolChoice::Tool("calculator".into()),
        parallel_tool_calls: Some(false),
        output: Some(OutputFormat {
            name: "final_result".into(),
            schema: json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}),
            native: true,
        }),
        reasoning: Some(ReasoningConfig { effort: None, budget_tokens: Some(4000) }),
        prompt_cache_key: None,
    };
    let model = OpenAiResponsesModel::new("gpt-5-mini").base_url("https://api.openai.com/v1").strict(true);
    let body = model.request_body(&request, true).to_string();
    let want = concat!(
        r#"{"model":"gpt-5-mini","instructions":"Be brief.","input":["#,
        r#"{"role":"user","content":"12 + 7?"},"#,
        r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Adding."}]},"#,
        r#"{"type":"function_call","call_id":"call_1","name":"calculator","arguments":"{\"a\":12,\"b\":7}"},"#,
        r#"{"type":"function_call","call_id":"call_2","name":"calculator","arguments":"{}"},"#,
        r#"{"type":"function_call_output","call_id":"call_1","output":"19"},"#,
        r#"{"type":"function_call_output","call_id":"call_2","output":"Error: bad arguments"}],"#,
        r#""tools":[{"type":"function","name":"calculator","description":"Basic arithmetic.","#,
        r#""parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"op":{"type":["string","null"]}},"required":["a","b","op"],"additionalProperties":false},"#,
        r#""strict":true}],"#,
        r#""tool_choice":{"type":"function","name":"calculator"},"parallel_tool_calls":false,"#,
        r#""reasoning":{"effort":"medium","summary":"auto"},"#,
        r#""text":{"format":{"type":"json_schema","name":"final_result","schema":{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"],"additionalProperties":false},"strict":true}},"#,
        r#""max_output_tokens":256,"store":false,"include":["reasoning.encrypted_content"],"stream":true}"#
    );
    assert_eq!(body, want);
    // Without tools, no tool choice; not streamed, no `stream`; a model that does not
    // reason, no `include`; the other choices.
    let plain = OpenAiResponsesModel::new("gpt-4o").encrypted_reasoning(false).request_body(&hello(), false);
    assert_eq!(
        plain,
        json!({"model": "gpt-4o", "input": [{"role": "user", "content": "hello"}], "store": false})
    );
    for (choice, wire) in [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::Required, json!("required")),
        (ToolChoice::None, json!("none")),
    ] {
        let request = ModelRequest { tools: vec![calculator()], tool_choice: choice, ..hello() };
        let body = OpenAiResponsesModel::new("m").request_body(&request, false);
        assert_eq!(body["tool_choice"], wire);
        assert_eq!(body["tools"][0]["strict"], false);
        assert_eq!(body["tools"][0]["parameters"], calculator().input_schema);
    }
}

/// Regression guard: the Chat Completions adapter's bodies are untouched by the
/// Responses one (same request, the body it always sent).
#[test]
fn chat_completions_body_is_unchanged() {
    let request =
        ModelRequest { tools: vec![calculator()], reasoning: Some(ReasoningConfig::default()), ..hello() };
    let body = OpenAiModel::new("gpt-4o")
        .base_url("https://api.openai.com/v1")
        .request_body(&request, true)
        .to_string();
    assert_eq!(
        body,
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"tools":[{"type":"function","function":{"name":"calculator","description":"Basic arithmetic.","parameters":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"op":{"type":"string"}},"required":["a","b"]}}}],"stream":true,"stream_options":{"include_usage":true}}"#
    );
}

#[test]
fn names_prices_and_windows() {
    use harnessx_agent::budget::ModelPrice;
    use harnessx_agent::context::known_window;
    let model = OpenAiResponsesModel::new("gpt-4o-mini");
    assert_eq!(model.name(), "openai-responses:gpt-4o-mini");
    assert_eq!(model.provider_name(), "openai");
    assert_eq!(model.model_name(), "gpt-4o-mini");
    assert_eq!(ModelPrice::builtin(&model.model_name()), ModelPrice::builtin("gpt-4o-mini"));
    assert!(ModelPrice::builtin(&model.model_name()).is_some());
    assert_eq!(known_window(&model.name()), Some(128_000));
}

/// An agent over this adapter: the recorded call runs, its result and the reasoning item
/// go back, and the recorded final answer ends the run.
#[tokio::test]
async fn agent_runs_a_tool_round_trip() {
    use harnessx_agent::{Agent, AgentConfig};
    use harnessx_core::{ToolDefinition, ToolHandler};

    let server = Server::start(vec![
        Reply::sse(recording("reasoning_calculator_turn0.derived.sse"), Some(64)),
        Reply::sse(recording("reasoning_calculator_turn3.derived.sse"), Some(7)),
    ]);
    let spec = calculator();
    let agent = Agent::builder()
        .model(model(&server))
        .tool(ToolDefinition::new(
            spec.name,
            spec.description,
            spec.input_schema,
            ToolHandler::from_async(|args, _| async move {
                let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                Ok(format!("{sum}").into())
            }),
        ))
        .config(AgentConfig { planning: false, ..AgentConfig::default() })
        .build()
        .unwrap();
    let result = agent.run("What is (12 + 7) * 3 * 10?").await.unwrap();
    assert_eq!(result.output, "The final result is **570**.");
    assert_eq!((result.usage.input_tokens, result.usage.output_tokens), (134 + 299, 28 + 12));

    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    let input = bodies[1]["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap_or("user")).collect();
    assert_eq!(kinds, ["user", "reasoning", "function_call", "function_call_output"]);
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "output": "19"})
    );
}
