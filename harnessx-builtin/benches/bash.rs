//! `run_bash("true")` round trip through the registry pipeline, on the local and the
//! bubblewrap sandbox. The reference row, Python's `subprocess.run(["bash", "-c", "true"])`,
//! is measured by `harnessx-builtin/bench/subprocess_true.py`; the ratio is the figure in
//! docs/performance.md, "Shell commands". The bubblewrap row runs only when `bwrap` works.
#![allow(missing_docs, reason = "criterion's macros generate undocumented items")]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use harnessx_builtin::bash::{BashOptions, register_bash_tools};
use harnessx_builtin::sandbox::{BubblewrapSandbox, LocalSandbox};
use harnessx_core::{Sandbox, ToolCall, ToolRegistry};

fn registry(sandbox: Arc<dyn Sandbox>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    register_bash_tools(&registry, BashOptions { sandbox: Some(sandbox), ..Default::default() }).unwrap();
    registry
}

fn bash(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let call = ToolCall::new("b", "run_bash", r#"{"command": "true"}"#);
    let mut sandboxes: Vec<(&str, Arc<dyn Sandbox>)> = vec![("local", Arc::new(LocalSandbox::new()))];
    match BubblewrapSandbox::new() {
        Ok(sb) => sandboxes.push(("bubblewrap", Arc::new(sb))),
        Err(e) => eprintln!("skipping the bubblewrap row: {e}"),
    }
    let mut group = c.benchmark_group("run_bash_true");
    for (name, sandbox) in sandboxes {
        let registry = registry(sandbox);
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let result = registry.execute(&call, None).await;
                assert!(!result.is_error && result.content.ends_with("[exit code 0]"), "{}", result.content);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bash);
criterion_main!(benches);
