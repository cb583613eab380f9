//! What a [`FallbackModel`] adds to a request: the list in front of a model that
//! answers (no switch), and one switch from a model that is down (a connection error,
//! no retries) to the next. The models answer at once, so only the fallback's own work
//! is timed.
//!
//! `cargo bench -p harnessx-agent --bench fallback -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_agent::model::{
    FallbackModel, FunctionModel, Message, Model, ModelError, ModelRequest, ModelResponse, ModelRetry,
};

fn up() -> Arc<dyn Model> {
    Arc::new(FunctionModel::new(|_| Ok(ModelResponse::text("hello"))).with_name("anthropic:up"))
}

fn down() -> Arc<dyn Model> {
    Arc::new(
        FunctionModel::new(|_| Err(ModelError::Transport("connection refused".into())))
            .with_name("openai:down"),
    )
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let request = ModelRequest { messages: vec![Message::user("hello")], ..ModelRequest::default() };
    let once = ModelRetry { max_attempts: 1, initial_delay_seconds: 0.0, max_delay_seconds: 0.0 };
    let direct = up();
    let no_switch = FallbackModel::new(vec![up(), down()]).unwrap().retry(once);
    let switch = FallbackModel::new(vec![down(), up()]).unwrap().retry(once);
    let mut group = c.benchmark_group("fallback");
    group.bench_function("direct", |b| {
        b.to_async(&runtime).iter(|| async { black_box(direct.complete(&request).await.unwrap()) })
    });
    group.bench_function("first_answers", |b| {
        b.to_async(&runtime).iter(|| async { black_box(no_switch.complete(&request).await.unwrap()) })
    });
    group.bench_function("one_switch", |b| {
        b.to_async(&runtime).iter(|| async { black_box(switch.complete(&request).await.unwrap()) })
    });
    group.bench_function("one_switch_streamed", |b| {
        b.to_async(&runtime).iter(|| async {
            black_box(harnessx_agent::model::collect_response(switch.stream(&request)).await.unwrap())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
