//! Parsing throughput of Gemini streams (`streamGenerateContent?alt=sse`): SSE framing,
//! each chunk's JSON into the wire types, events and the assembled response, as
//! `GeminiModel::stream` does minus the socket. Two bodies: a long answer (400 text
//! chunks, then a signed function call and the usage), and a recorded Gemini 3 call
//! (vercel/ai's `google-tool-call-gemini3`).
//!
//! `nice -n 10 cargo bench -p harnessx-agent --bench gemini_sse -- --warm-up-time 1 --measurement-time 3`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harnessx_agent::model::gemini::parse_sse;
use serde_json::json;

/// 400 chunks of ~60 characters of text, a call with a thought signature, the finish.
fn long_answer() -> Vec<u8> {
    let mut chunks = Vec::new();
    for i in 0..400 {
        chunks.push(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": format!("Sentence {i} of the answer, with some words in it to parse. ")}]}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": i * 12, "totalTokenCount": 1200 + i * 12},
            "modelVersion": "gemini-2.5-flash",
            "responseId": "bH6LaZW8Fp_3nsEPqtaSwQ4"
        }));
    }
    chunks.push(json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "c", "days": [1, 2, 3]}}, "thoughtSignature": "EqsFCqgFAb4+9vvtAF5n87lB4OGDOoTRMOqp35jW65XsYXh6BySMwl9nvrbAvPcl2U0xITaYUyV4CmREEDB1z0ZPpCg7iEwiZcj40Eh1jXoL8Y"}
        ]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 4800, "thoughtsTokenCount": 300, "totalTokenCount": 6300}
    }));
    harnessx_test_support::sse::gemini(&chunks).into_bytes()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("gemini_sse");
    let bodies = [
        ("long_answer", long_answer()),
        (
            "recorded_tool_call",
            harnessx_test_support::fixture_bytes("transcripts/vercel_ai/google_tool_call.derived.sse"),
        ),
    ];
    for (name, body) in bodies {
        assert!(parse_sse(&body).is_ok(), "{name}");
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| b.iter(|| parse_sse(std::hint::black_box(&body)).unwrap()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
