//! The cost of counting a request's tokens on a 100-turn history (each turn an assistant
//! message with 2 calls and their 2 results of 2,000 characters): a run counts each
//! message once, so a request costs the new turn's counting (`incremental`), or nothing
//! new (`unchanged`, the floor); `cold` counts the whole history, as a run's first request
//! on a long conversation does. With tiktoken's `o200k_base` (OpenAI models) and the estimate (the
//! rest).
//!
//! `cargo bench -p harnessx-agent --bench context`

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use harnessx_agent::context::{Encoding, Tally};
use harnessx_agent::model::{Message, ModelRequest};
use harnessx_core::{Parts, ToolCall};

fn turn(t: usize) -> Vec<Message> {
    let result = |k: usize| {
        let mut text = String::new();
        let mut line = 0;
        while text.len() < 2_000 {
            text.push_str(&format!(
                "{t}.{k}.{line}: fn handle(request: &Request) -> Result<Response, Error> {{ todo }}\n"
            ));
            line += 1;
        }
        text.truncate(2_000);
        text
    };
    vec![
        Message::assistant(
            format!("Turn {t}: reading two files."),
            vec![
                ToolCall::new(format!("a{t}"), "read_file", format!("{{\"path\": \"src/{t}.rs\"}}")),
                ToolCall::new(format!("b{t}"), "grep", format!("{{\"pattern\": \"fn {t}\"}}")),
            ],
        ),
        Message::Tool {
            call_id: format!("a{t}"),
            name: "read_file".into(),
            content: result(0),
            is_error: false,
            parts: Parts::new(),
        },
        Message::Tool {
            call_id: format!("b{t}"),
            name: "grep".into(),
            content: result(1),
            is_error: false,
            parts: Parts::new(),
        },
    ]
}

fn request(turns: usize) -> ModelRequest {
    let mut messages = vec![Message::user("Refactor the request handlers.")];
    for t in 0..turns {
        messages.extend(turn(t));
    }
    ModelRequest { system: Some("You are a careful engineer.".into()), messages, ..ModelRequest::default() }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("context_tokens");
    for (name, encoding) in [("o200k", Encoding::O200k), ("estimate", Encoding::Estimate)] {
        let history = request(100);
        group.bench_with_input(BenchmarkId::new("cold_100_turns", name), &history, |b, history| {
            b.iter(|| Tally::new(encoding).raw(history))
        });
        // 99 turns counted; the request of turn 100 adds one.
        let before = request(99);
        let next = turn(99);
        group.bench_function(BenchmarkId::new("incremental_100_turns", name), |b| {
            b.iter_batched(
                || {
                    let mut tally = Tally::new(encoding);
                    tally.raw(&before);
                    let mut request = before.clone();
                    request.messages.extend(next.iter().cloned());
                    (tally, request)
                },
                // Returned, so dropping the history is not timed.
                |(mut tally, request)| {
                    let tokens = tally.raw(&request);
                    (tally, request, tokens)
                },
                BatchSize::LargeInput,
            )
        });
        // Near the threshold: the new turn counted with the tokenizer (`estimate`), as a
        // request within 75 % of the point of compacting is.
        group.bench_function(BenchmarkId::new("incremental_counted_100_turns", name), |b| {
            b.iter_batched(
                || {
                    let mut tally = Tally::new(encoding);
                    tally.estimate(&before);
                    let mut request = before.clone();
                    request.messages.extend(next.iter().cloned());
                    (tally, request)
                },
                |(mut tally, request)| {
                    let tokens = tally.estimate(&request);
                    (tally, request, tokens)
                },
                BatchSize::LargeInput,
            )
        });
        // Nothing new (the same request counted again): the per-request floor.
        group.bench_function(BenchmarkId::new("unchanged_100_turns", name), |b| {
            let mut tally = Tally::new(encoding);
            tally.raw(&history);
            b.iter(|| tally.raw(&history))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
