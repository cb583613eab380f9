//! Shared by the model adapter tests: the loopback provider server and fixtures of
//! `harnessx-test-support`, plus stream collection.
#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    reason = "each test crate uses a different part of this module"
)]

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use harnessx_agent::model::{ModelError, ModelEvent, ModelResponse};
pub use harnessx_test_support::server::{Recorded, Reply, SPLITS, Server, dead_url};
use serde_json::Value;

/// A recorded body from the fixtures' `transcripts/`.
pub fn fixture(path: &str) -> Vec<u8> {
    harnessx_test_support::fixture_bytes(&format!("transcripts/{path}"))
}

/// The reference accumulation of a recorded stream (`expected_accumulated_DERIVED.json`).
pub fn expected(path: &str) -> Value {
    let all: Value = serde_json::from_slice(&fixture("expected_accumulated_DERIVED.json")).unwrap();
    all["results"][path].clone()
}

/// Every event of a stream, and the outcome: the `Done` response, or the error.
pub async fn collect(
    mut stream: BoxStream<'_, Result<ModelEvent, ModelError>>,
) -> (Vec<ModelEvent>, Result<ModelResponse, ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::Done(response)) => {
                assert!(stream.next().await.is_none(), "events after Done");
                return (events, Ok(response));
            }
            Ok(event) => events.push(event),
            Err(e) => {
                assert!(stream.next().await.is_none(), "events after an error");
                return (events, Err(e));
            }
        }
    }
    panic!("the stream ended without Done or an error; events: {events:?}")
}

/// Checks the events agree with the response: the text deltas make up its text, and per
/// call, one start (in call order) and deltas that make up its arguments.
pub fn assert_events_match(events: &[ModelEvent], response: &ModelResponse) {
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, response.content);
    let starts: Vec<(usize, &str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallStart { index, id, name } => Some((*index, id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let want: Vec<(usize, &str, &str)> =
        response.tool_calls.iter().enumerate().map(|(i, c)| (i, c.id.as_str(), c.name.as_str())).collect();
    assert_eq!(starts, want);
    for (i, call) in response.tool_calls.iter().enumerate() {
        let args: String = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallDelta { index, delta } if *index == i => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        // A call with no argument text at all reads as `{}`.
        if args.is_empty() && call.arguments == "{}" {
            continue;
        }
        assert_eq!(args, call.arguments, "arguments of call {i}");
    }
}
