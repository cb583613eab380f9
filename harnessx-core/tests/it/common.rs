//! Helpers shared by the integration tests of `harnessx-core`.
// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
use serde_json::{Value, json};

#[allow(unused_imports, reason = "each test crate uses a different part of this module")]
pub(crate) use harnessx_test_support::{fixture, fixture_json};

/// The spec's `calculate(a: int, b: int)` input schema.
pub(crate) fn calc_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]
    })
}

/// An object schema with no properties.
pub(crate) fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A shared invocation counter.
#[derive(Clone, Default, Debug)]
pub(crate) struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Increments and returns the new count.
    pub(crate) fn hit(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A shared, ordered log of strings.
#[derive(Clone, Default, Debug)]
pub(crate) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub(crate) fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// An async handler that counts its invocations and answers `reply`.
pub(crate) fn counting(reply: &str, counter: &Counter) -> ToolHandler {
    let reply = reply.to_owned();
    let counter = counter.clone();
    ToolHandler::from_async(move |_args, _ctx| {
        counter.hit();
        let reply = reply.clone();
        async move { Ok(reply.into()) }
    })
}

/// An async handler that counts its invocations and echoes its arguments as JSON.
pub(crate) fn echo(counter: &Counter) -> ToolHandler {
    let counter = counter.clone();
    ToolHandler::from_async(move |args, _ctx| {
        counter.hit();
        async move { Ok(args.to_string().into()) }
    })
}

/// The spec's `calculate`: multiplies `a` and `b`, counting invocations.
pub(crate) fn calculate_handler(counter: &Counter) -> ToolHandler {
    let counter = counter.clone();
    ToolHandler::from_async(move |args, _ctx| {
        counter.hit();
        async move {
            let a = args["a"].as_i64().unwrap_or_default();
            let b = args["b"].as_i64().unwrap_or_default();
            Ok((a * b).to_string().into())
        }
    })
}

/// Registers a tool with an empty object schema whose handler counts and answers
/// `ran <name>`.
pub(crate) fn register_counting(registry: &ToolRegistry, name: &str, options: ToolOptions) -> Counter {
    let counter = Counter::new();
    registry
        .register_with_schema(
            name,
            format!("The {name} tool."),
            empty_schema(),
            counting(&format!("ran {name}"), &counter),
            options,
        )
        .unwrap_or_else(|e| panic!("registering {name}: {e}"));
    counter
}

/// Shorthand for a call.
pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}
