//! Reasoning on the wire: Anthropic's extended thinking (streamed and not, redacted, sent
//! back byte for byte), the `thinking` and `reasoning_effort` request fields, a compatible
//! server's `reasoning_content`, and OpenAI's `prompt_cache_key`. Recorded bytes are
//! vercel/ai's (`test-support/fixtures/transcripts/README.md`).

use crate::common;

use common::{Reply, SPLITS, Server, assert_events_match, collect, fixture};
use futures_util::StreamExt;
use harnessx_agent::model::{
    AnthropicModel, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, OpenAiModel,
    Reasoning, ReasoningConfig, ReasoningEffort,
};
use harnessx_agent::{Agent, AgentConfig, AgentEvent};
use harnessx_core::ToolCall;
use serde_json::{Value, json};

const THINKING_STREAM: &str = "vercel_ai/anthropic_stream_thinking.derived.sse";
const THINKING_JSON: &str = "vercel_ai/anthropic_nonstream_thinking.json";

/// The recorded stream's signature (its one `signature_delta`).
fn recorded_signature() -> String {
    let sse = String::from_utf8(fixture(THINKING_STREAM)).unwrap();
    let line = sse.lines().find(|l| l.contains("signature_delta")).unwrap();
    let event: Value = serde_json::from_str(line.trim_start_matches("data: ")).unwrap();
    event["delta"]["signature"].as_str().unwrap().to_owned()
}

fn anthropic(server: &Server) -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5").base_url(&server.url).api_key("sk-ant-test")
}

fn hello() -> ModelRequest {
    ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() }
}

fn reasoning_text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_streamed_thinking_block_is_the_same_reasoning_at_every_split() {
    let mut first: Option<ModelResponse> = None;
    for split in SPLITS {
        let server = Server::start(vec![Reply::sse(fixture(THINKING_STREAM), split)]);
        let (events, outcome) = collect(anthropic(&server).stream(&hello())).await;
        let response = outcome.unwrap_or_else(|e| panic!("split {split:?}: {e}"));
        assert_events_match(&events, &response);
        assert_eq!(response.content, "925 ÷ 5 = 185");
        let want = "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185";
        assert_eq!(reasoning_text(&events), want, "split {split:?}");
        assert_eq!(response.reasoning.len(), 1);
        let r = &response.reasoning[0];
        assert_eq!((r.provider.as_str(), r.text.as_str()), ("anthropic", want));
        assert_eq!(r.signature.as_deref(), Some(recorded_signature().as_str()));
        assert_eq!(r.data, json!({"type": "thinking", "index": 0}));
        // Reasoning deltas all come before the first text delta.
        let first_text = events.iter().position(|e| matches!(e, ModelEvent::TextDelta(_))).unwrap();
        assert!(events[first_text..].iter().all(|e| !matches!(e, ModelEvent::ReasoningDelta(_))));
        match &first {
            None => first = Some(response),
            Some(whole) => assert_eq!(&response, whole, "split {split:?}"),
        }
    }
}

#[tokio::test]
async fn streamed_thinking_goes_back_first_in_its_assistant_turn_byte_for_byte() {
    let server = Server::start(vec![Reply::sse(fixture(THINKING_STREAM), Some(7))]);
    let (_, outcome) = collect(anthropic(&server).stream(&hello())).await;
    let response = outcome.unwrap();
    let mut next = hello();
    next.messages.push(Message::assistant_with_reasoning(response.content, Vec::new(), response.reasoning));
    next.messages.push(Message::user("and times 2?"));
    let raw = anthropic(&server).request_body(&next, true).to_string();
    let block = format!(
        r#"{{"type":"thinking","thinking":"The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185","signature":"{}"}}"#,
        recorded_signature()
    );
    let want = format!(r#"{{"role":"assistant","content":[{block},{{"type":"text","text":"925 ÷ 5 = 185""#);
    assert!(raw.contains(&want), "{raw}");
}

/// The recorded non-streamed answer with a tool call after its text (the thinking block
/// and usage as recorded), served compactly: these are the bytes a second request must
/// send back.
fn thinking_then_tool_use() -> (String, String) {
    let mut body: Value = serde_json::from_slice(&fixture(THINKING_JSON)).unwrap();
    let thinking = body["content"][0].clone();
    body["content"] = json!([thinking, {"type": "text", "text": "Let me look at the list."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_todos", "input": {}}]);
    body["stop_reason"] = json!("tool_use");
    (body.to_string(), thinking.to_string())
}

#[tokio::test]
async fn a_run_sends_the_thinking_block_back_byte_for_byte_before_the_tool_use() {
    let (first, block) = thinking_then_tool_use();
    let done = json!({"id": "m2", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 90, "output_tokens": 2}});
    let server = Server::start(vec![Reply::json(200, first), Reply::json(200, done.to_string())]);
    let config = AgentConfig {
        reasoning: Some(ReasoningConfig { effort: Some(ReasoningEffort::Low), budget_tokens: None }),
        ..AgentConfig::default()
    };
    let agent = Agent::builder().model(anthropic(&server)).config(config).build().unwrap();
    let state = agent.run("Divide it by 5.").await.unwrap();
    assert_eq!(state.output, "Done.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
        assert_eq!(request.body["max_tokens"], 4096);
    }
    let raw = String::from_utf8(requests[1].raw.clone()).unwrap();
    let want = format!(
        r#"{{"role":"assistant","content":[{block},{{"type":"text","text":"Let me look at the list."}},{{"type":"tool_use","#
    );
    assert!(raw.contains(&want), "{block}\n---\n{raw}");
    assert_eq!(raw.matches(r#""type":"thinking""#).count(), 1);
    // Kept in the transcript with its place.
    let Message::Assistant { reasoning, .. } = &state.messages[1] else { panic!("{:?}", state.messages[1]) };
    assert_eq!(reasoning[0].data, json!({"type": "thinking", "index": 0}));
    assert_eq!(reasoning[0].text, "925 divided by 5 = 185");
}

/// vercel/ai's "should stream redacted reasoning" chunks, as events.
fn redacted_events() -> Vec<Value> {
    vec![
        json!({"type":"message_start","message":{"id":"msg_01KfpJoAEabmH2iHRRFjQMAG","type":"message","role":"assistant","content":[],"model":"claude-3-haiku-20240307","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":17,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"redacted-thinking-data"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello, World!"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":227}}),
        json!({"type":"message_stop"}),
    ]
}

#[tokio::test]
async fn redacted_thinking_is_kept_and_sent_back_as_it_came() {
    let body = harnessx_test_support::sse::anthropic(&redacted_events());
    for split in SPLITS {
        let server = Server::start(vec![Reply::sse(body.clone().into_bytes(), split)]);
        let (events, outcome) = collect(anthropic(&server).stream(&hello())).await;
        let response = outcome.unwrap();
        assert_eq!(reasoning_text(&events), "");
        assert_eq!(response.content, "Hello, World!");
        assert_eq!(
            response.reasoning,
            [Reasoning {
                provider: "anthropic".into(),
                text: String::new(),
                signature: None,
                data: json!({"type": "redacted_thinking", "data": "redacted-thinking-data", "index": 0}),
            }]
        );
        let mut next = hello();
        next.messages.push(Message::assistant_with_reasoning(
            response.content,
            Vec::new(),
            response.reasoning,
        ));
        next.messages.push(Message::user("again"));
        let raw = anthropic(&server).prompt_cache(false).request_body(&next, false).to_string();
        assert!(
            raw.contains(r#"{"role":"assistant","content":[{"type":"redacted_thinking","data":"redacted-thinking-data"},{"type":"text","text":"Hello, World!"}]}"#),
            "{raw}"
        );
    }
    // Not streamed: the same.
    let json_body = json!({"id": "m", "type": "message", "role": "assistant", "content": [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        {"type": "text", "text": "Hi."}], "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}});
    let server = Server::start(vec![Reply::json(200, json_body.to_string())]);
    let response = anthropic(&server).complete(&hello()).await.unwrap();
    assert_eq!(response.reasoning[0].data["data"], "EmwKAhgBEgy3va3pzix/LafPsn4a");
}

#[tokio::test]
async fn other_providers_reasoning_and_thinking_text_never_go_to_anthropic_as_text() {
    let mut request = hello();
    request.messages.push(Message::assistant_with_reasoning(
        "Answer.",
        vec![ToolCall::new("c", "f", "{}")],
        vec![Reasoning::new("openai", "a secret chain of thought")],
    ));
    request.messages.push(Message::user("more"));
    let body = AnthropicModel::new("m").api_key("k").prompt_cache(false).request_body(&request, false);
    assert!(!body.to_string().contains("secret"), "{body}");
    assert_eq!(
        body["messages"][1]["content"],
        json!([{"type": "text", "text": "Answer."}, {"type": "tool_use", "id": "c", "name": "f", "input": {}}])
    );
}

#[tokio::test]
async fn the_thinking_budget_is_at_least_1024_and_max_tokens_rises_above_it() {
    let model = AnthropicModel::new("m").api_key("k");
    let body = |reasoning: Option<ReasoningConfig>, max: Option<u32>| {
        let request = ModelRequest { reasoning, max_tokens: max, ..hello() };
        let body = model.request_body(&request, false);
        (body["max_tokens"].as_u64().unwrap(), body.get("thinking").cloned())
    };
    let effort = |e| Some(ReasoningConfig { effort: Some(e), budget_tokens: None });
    let budget = |b| Some(ReasoningConfig { effort: None, budget_tokens: Some(b) });
    assert_eq!(body(None, None), (4096, None));
    assert_eq!(body(Some(ReasoningConfig::default()), None), (4096, None));
    let thinking = |b: u32| Some(json!({"type": "enabled", "budget_tokens": b}));
    assert_eq!(body(effort(ReasoningEffort::Minimal), None), (4096, thinking(1024)));
    assert_eq!(body(effort(ReasoningEffort::High), None), (24_576 + 4096, thinking(24_576)));
    assert_eq!(body(budget(100), Some(2000)), (2000, thinking(1024)));
    assert_eq!(body(budget(5000), Some(16_000)), (16_000, thinking(5000)));
    assert_eq!(body(budget(5000), Some(5000)), (10_000, thinking(5000)));
    // Both set: the budget wins.
    let both = Some(ReasoningConfig { effort: Some(ReasoningEffort::High), budget_tokens: Some(3000) });
    assert_eq!(body(both, None), (4096, thinking(3000)));
}

/// Anthropic refuses a forced tool choice with thinking on: a request that forces a call
/// goes without thinking; `auto` and `none` keep it, and so does a forced choice with no
/// tools offered (nothing is forced then).
#[tokio::test]
async fn a_request_that_forces_a_call_goes_without_thinking() {
    use harnessx_agent::model::ToolChoice;
    use harnessx_core::ToolSpec;
    let tool = ToolSpec {
        name: "read".into(),
        description: "Reads.".into(),
        input_schema: json!({"type": "object", "properties": {}}),
    };
    let reasoning = Some(ReasoningConfig { effort: None, budget_tokens: Some(2048) });
    for adaptive in [false, true] {
        let model = AnthropicModel::new("m").api_key("k").adaptive_thinking(adaptive);
        let thinks = |choice: ToolChoice, tools: Vec<ToolSpec>| {
            let request = ModelRequest { reasoning, tool_choice: choice, tools, ..hello() };
            model.request_body(&request, false).get("thinking").is_some()
        };
        assert!(!thinks(ToolChoice::Required, vec![tool.clone()]), "adaptive {adaptive}");
        assert!(!thinks(ToolChoice::Tool("read".into()), vec![tool.clone()]), "adaptive {adaptive}");
        assert!(thinks(ToolChoice::Auto, vec![tool.clone()]), "adaptive {adaptive}");
        assert!(thinks(ToolChoice::None, vec![tool.clone()]), "adaptive {adaptive}");
        assert!(thinks(ToolChoice::Required, vec![]), "adaptive {adaptive}");
    }
}

#[tokio::test]
async fn adaptive_thinking_sends_the_effort_and_keeps_max_tokens() {
    let model = AnthropicModel::new("claude-opus-4-7").api_key("k").adaptive_thinking(true);
    let body = |reasoning| model.request_body(&ModelRequest { reasoning, ..hello() }, false);
    let minimal = body(Some(ReasoningConfig { effort: Some(ReasoningEffort::Minimal), budget_tokens: None }));
    assert_eq!(minimal["thinking"], json!({"type": "adaptive"}));
    assert_eq!(minimal["output_config"], json!({"effort": "low"}));
    assert_eq!(minimal["max_tokens"], 4096);
    let budget = body(Some(ReasoningConfig { effort: None, budget_tokens: Some(20_000) }));
    assert_eq!(
        (budget["output_config"]["effort"].as_str(), budget.get("thinking").is_some()),
        (Some("high"), true)
    );
    let none = body(None);
    assert!(none.get("thinking").is_none() && none.get("output_config").is_none(), "{none}");
    // Beside a native output format, in the same `output_config`.
    let request = ModelRequest {
        reasoning: Some(ReasoningConfig { effort: Some(ReasoningEffort::Medium), budget_tokens: None }),
        output: Some(harnessx_agent::model::OutputFormat {
            name: "final_result".into(),
            schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            native: true,
        }),
        ..hello()
    };
    let both = model.request_body(&request, false);
    assert_eq!(both["output_config"]["effort"], "medium");
    assert_eq!(both["output_config"]["format"]["type"], "json_schema");
}

/// Events of a thinking stream, with `extra` in place of the signature and after.
fn thinking_stream(rest: Vec<Value>) -> Vec<u8> {
    let mut events = vec![
        json!({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}),
    ];
    events.extend(rest);
    harnessx_test_support::sse::anthropic(&events).into_bytes()
}

/// Which error a case expects.
type ErrorKind = fn(&ModelError) -> bool;

#[tokio::test]
async fn bad_thinking_streams_are_clear_errors_at_every_split() {
    let stop = || json!({"type":"content_block_stop","index":0});
    let end = || {
        vec![
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}),
            json!({"type":"message_stop"}),
        ]
    };
    let cases: Vec<(&str, Vec<u8>, ErrorKind, &str)> = vec![
        (
            "a signature for a block that is not there",
            thinking_stream(vec![json!({"type":"content_block_delta","index":3,"delta":{"type":"signature_delta","signature":"abc"}})]),
            |e| matches!(e, ModelError::Protocol(_)),
            "signature_delta came for content block 3, which is not a thinking block",
        ),
        (
            "a thinking delta for a text block",
            thinking_stream(vec![
                stop(),
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
                json!({"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"x"}}),
            ]),
            |e| matches!(e, ModelError::Protocol(_)),
            "thinking_delta came for content block 1",
        ),
        (
            "a signature after the block stopped",
            thinking_stream(vec![stop(), json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}})]),
            |e| matches!(e, ModelError::Protocol(_)),
            "signature_delta came after thinking block 0 stopped",
        ),
        (
            "a signature that is not text",
            thinking_stream(vec![json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":7}})]),
            |e| matches!(e, ModelError::Protocol(_)),
            "has no `signature` text",
        ),
        (
            "the stream cut inside the thinking block",
            thinking_stream(vec![json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}})]),
            |e| matches!(e, ModelError::Transport(_)) && e.is_retryable(),
            "the response stream ended inside thinking block 0",
        ),
        (
            "message_stop with the block still open",
            thinking_stream(end()),
            |e| matches!(e, ModelError::Protocol(_)),
            "the response stream ended inside thinking block 0",
        ),
        (
            "malformed JSON in a thinking delta",
            [thinking_stream(vec![]), b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"unterminated}\n\n".to_vec()].concat(),
            |e| matches!(e, ModelError::Protocol(_)),
            "a stream event is not JSON",
        ),
    ];
    for (what, body, kind, message) in cases {
        for split in SPLITS {
            let server = Server::start(vec![Reply::sse(body.clone(), split)]);
            let (events, outcome) = collect(anthropic(&server).stream(&hello())).await;
            let e = outcome.expect_err(what);
            assert!(kind(&e) && e.to_string().contains(message), "{what}, split {split:?}: {e:?}");
            assert_eq!(reasoning_text(&events), "Let me", "{what}");
        }
    }
}

#[tokio::test]
async fn run_stream_shows_the_thinking_as_reasoning_deltas() {
    let server = Server::start(vec![Reply::sse(fixture(THINKING_STREAM), Some(16))]);
    let agent = Agent::builder().model(anthropic(&server)).build().unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("What is 925 / 5?").collect().await;
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185");
    let json =
        serde_json::to_value(events.iter().find(|e| matches!(e, AgentEvent::ReasoningDelta { .. })).unwrap())
            .unwrap();
    assert_eq!(json, json!({"type": "reasoning_delta", "text": "The previous"}));
}

fn openai_at(base_url: &str) -> OpenAiModel {
    OpenAiModel::new("o4-mini").base_url(base_url).api_key("sk-test")
}

#[tokio::test]
async fn reasoning_effort_is_sent_only_when_set() {
    let model = openai_at("http://localhost:1/v1");
    let with = |reasoning| model.request_body(&ModelRequest { reasoning, ..hello() }, false);
    assert_eq!(
        with(Some(ReasoningConfig { effort: Some(ReasoningEffort::Minimal), budget_tokens: None })),
        json!({"model": "o4-mini", "messages": [{"role": "user", "content": "hello"}], "reasoning_effort": "minimal"})
    );
    // A budget stands for an effort.
    let budget = with(Some(ReasoningConfig { effort: None, budget_tokens: Some(10_000) }));
    assert_eq!(budget["reasoning_effort"], "high");
    assert_eq!(with(None), json!({"model": "o4-mini", "messages": [{"role": "user", "content": "hello"}]}));
    assert_eq!(with(Some(ReasoningConfig::default())), with(None));
}

#[tokio::test]
async fn prompt_cache_key_goes_only_to_api_openai_com() {
    let mut request = hello();
    let openai = openai_at("https://api.openai.com/v1");
    assert_eq!(openai.request_body(&request, false).get("prompt_cache_key"), None);
    request.prompt_cache_key = Some("run-1".into());
    assert_eq!(openai.request_body(&request, false)["prompt_cache_key"], "run-1");
    let keyed = openai.clone().prompt_cache_key("my-app");
    assert_eq!(keyed.request_body(&request, true)["prompt_cache_key"], "my-app");
    // A compatible server never gets it.
    let local = openai_at("http://localhost:8000/v1").prompt_cache_key("my-app");
    assert_eq!(local.request_body(&request, false).get("prompt_cache_key"), None);
}
