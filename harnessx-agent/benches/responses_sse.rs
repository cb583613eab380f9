//! Streamed answers of the OpenAI Responses adapter per second: the whole client side of
//! a stream (HTTP body read, SSE parsing, each event's JSON into the wire structs, the
//! events and the assembled response) over a loopback server that sends the body whole.
//! A recorded response (reasoning item and one call, vercel/ai's recording), and 2,000
//! text deltas framed as OpenAI frames them; beside it, the same 2,000 deltas as Chat
//! Completions chunks through `OpenAiModel` and as Anthropic Messages events through
//! `AnthropicModel`, for comparison.
//!
//! `cargo bench -p harnessx-agent --bench responses_sse -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harnessx_agent::model::{
    AnthropicModel, Message, Model, ModelRequest, OpenAiModel, OpenAiResponsesModel, collect_response,
};
use harnessx_test_support::server::{Reply, Server};
use serde_json::json;

const DELTAS: usize = 2_000;

/// `DELTAS` text deltas in the Responses framing, each with the fields OpenAI sends.
fn responses_text() -> Vec<u8> {
    let mut events = vec![
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
    ];
    for i in 0..DELTAS {
        events.push(json!({"type": "response.output_text.delta", "sequence_number": i + 2, "item_id": "msg_01830d662ab3856501693c32183a488190a612c410a0a39823", "output_index": 0, "content_index": 0, "delta": " word", "logprobs": [], "obfuscation": "o6siFnnjPfOpq"}));
    }
    events.push(json!({"type": "response.completed", "sequence_number": DELTAS + 2, "response": {"id": "resp_1", "status": "completed", "output": [], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": DELTAS, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": DELTAS + 10}}}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect::<String>()
        .into_bytes()
}

/// The same deltas as Chat Completions chunks.
fn chat_text() -> Vec<u8> {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o", "system_fingerprint": "fp_1", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), json!(null))];
    events.extend((0..DELTAS).map(|_| chunk(json!({"content": " word"}), json!(null))));
    events.push(chunk(json!({}), json!("stop")));
    harnessx_test_support::sse::openai(&events).into_bytes()
}

/// The same deltas as Anthropic Messages events.
fn anthropic_text() -> Vec<u8> {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ];
    events.extend(
        (0..DELTAS)
            .map(|_| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " word"}})),
    );
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": DELTAS}}));
    events.push(json!({"type": "message_stop"}));
    harnessx_test_support::sse::anthropic(&events).into_bytes()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let request = ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() };
    let recorded = harnessx_test_support::fixture_bytes(
        "transcripts/openai_responses/reasoning_calculator_turn0.derived.sse",
    );
    let mut group = c.benchmark_group("responses_sse");
    for (name, body, adapter) in [
        ("responses_recorded_reasoning_call", recorded, "responses"),
        ("responses_text_2000_deltas", responses_text(), "responses"),
        ("chat_completions_text_2000_deltas", chat_text(), "chat"),
        ("anthropic_text_2000_deltas", anthropic_text(), "anthropic"),
    ] {
        group.throughput(Throughput::Bytes(body.len() as u64));
        let server = Server::respond(move |_| Reply::sse(body.clone(), None));
        let base = format!("{}/v1", server.url);
        let model: Box<dyn Model> = match adapter {
            "responses" => Box::new(OpenAiResponsesModel::new("m").base_url(&base).api_key("k")),
            "chat" => Box::new(OpenAiModel::new("m").base_url(&base).api_key("k")),
            _ => Box::new(AnthropicModel::new("m").base_url(&server.url).api_key("k")),
        };
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let response = collect_response(model.stream(&request)).await.unwrap();
                black_box(response)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
