//! The cost of the central cap on a tool result (`ToolPolicy::max_result_chars`, 40,000
//! by default): a result within it (a length check), and a 200 KB result cut to its head
//! and tail (counting its characters, finding line boundaries, writing the marker), with
//! and without saving the whole text to a file.
//!
//! `cargo bench -p harnessx-core --bench cap`

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use harnessx_core::engine::cap::{DEFAULT_MAX_RESULT_CHARS, ResultDir, cap_result};
use harnessx_core::{ToolOutput, ToolResult};

fn text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 100);
    let mut line = 0;
    while text.len() < bytes {
        text.push_str(&format!("{line}: a line of some tool's output, with words and numbers 12345\n"));
        line += 1;
    }
    text
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("cap");
    let small = ToolResult::success("c1", "read_file", ToolOutput::text(text(2_000)));
    group.bench_function("within_2kb", |b| {
        b.iter_batched_ref(
            || small.clone(),
            |r| cap_result(r, DEFAULT_MAX_RESULT_CHARS, None),
            BatchSize::SmallInput,
        )
    });
    let big = ToolResult::success("c1", "read_file", ToolOutput::text(text(200_000)));
    group.bench_function("cut_200kb", |b| {
        b.iter_batched_ref(
            || big.clone(),
            |r| cap_result(r, DEFAULT_MAX_RESULT_CHARS, None),
            BatchSize::SmallInput,
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let results = ResultDir::new(dir.path());
    let mut call = 0u64;
    group.bench_function("cut_and_save_200kb", |b| {
        b.iter_batched_ref(
            || {
                // A new call id each time, as in a run (each saves a file of its own).
                call += 1;
                let mut r = big.clone();
                r.call_id = format!("c{call}");
                r
            },
            |r| cap_result(r, DEFAULT_MAX_RESULT_CHARS, Some(&results)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
