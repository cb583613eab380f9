//! Scheduling a batch (spec tools.md "Configured built-in tools", DESIGN "Scheduling a
//! batch"): concurrent calls run together; the others run one at a time, in call order,
//! alongside them; results and `CallStart` events come back in call order whichever call
//! finishes first; a failure cancels nothing; serial tools take turns across registries
//! sharing one `SerialQueue`.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use harnessx_core::{
    RunContext, SerialQueue, ToolCall, ToolError, ToolEvent, ToolEventSink, ToolHandler, ToolOptions,
    ToolRegistry, ToolResult,
};
use serde_json::json;
use tokio::sync::Barrier;
use tokio::time::Instant;

/// Tracks how many calls are in flight and the most there ever were.
#[derive(Clone, Default)]
struct InFlight(Arc<(AtomicUsize, AtomicUsize)>);

impl InFlight {
    fn enter(&self) {
        let now = self.0.0.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.1.fetch_max(now, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
    fn max(&self) -> usize {
        self.0.1.load(Ordering::SeqCst)
    }
}

/// Registers `name`: sleeps `{"ms": n}` of (virtual) time, logging `start <id> @<ms>` and
/// `end <id> @<ms>`, and answers its call id.
fn register_napper(
    registry: &ToolRegistry,
    name: &str,
    concurrent: bool,
    log: &Log,
    in_flight: &InFlight,
    epoch: Instant,
) {
    let (log, in_flight) = (log.clone(), in_flight.clone());
    registry
        .register_with_schema(
            name,
            "Nap.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
            ToolHandler::from_async(move |args, ctx| {
                let (log, in_flight) = (log.clone(), in_flight.clone());
                async move {
                    let id = ctx.call_id().to_owned();
                    in_flight.enter();
                    log.push(format!("start {id} @{}", epoch.elapsed().as_millis()));
                    tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                    log.push(format!("end {id} @{}", epoch.elapsed().as_millis()));
                    in_flight.leave();
                    Ok(id.into())
                }
            }),
            ToolOptions::new().concurrent(concurrent),
        )
        .unwrap();
}

/// Registers `name`, which waits on `barrier` (so it only finishes if the barrier's other
/// parties run at the same time; otherwise it times out after the 25 s default).
fn register_meeter(registry: &ToolRegistry, name: &str, concurrent: bool, barrier: &Arc<Barrier>) {
    let barrier = barrier.clone();
    registry
        .register_with_schema(
            name,
            "Meet.",
            empty_schema(),
            ToolHandler::from_async(move |_args, _ctx| {
                let barrier = barrier.clone();
                async move {
                    barrier.wait().await;
                    Ok("met".into())
                }
            }),
            ToolOptions::new().concurrent(concurrent),
        )
        .unwrap();
}

fn nap(id: &str, tool: &str, ms: u64) -> ToolCall {
    ToolCall::new(id, tool, json!({ "ms": ms }).to_string())
}

fn ids(results: &[ToolResult]) -> Vec<&str> {
    results.iter().map(|r| r.call_id.as_str()).collect()
}

/// An event sink that records `start <index> <id>` and `end <index> <id>`.
fn recording_sink(log: &Log) -> Arc<dyn ToolEventSink> {
    let log = log.clone();
    Arc::new(move |event: &ToolEvent<'_>| match event {
        ToolEvent::CallStart { index, call, .. } => log.push(format!("start {index} {}", call.id)),
        ToolEvent::CallEnd { index, result } => log.push(format!("end {index} {}", result.call_id)),
        _ => {}
    })
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_run_together() {
    let registry = ToolRegistry::new();
    let barrier = Arc::new(Barrier::new(3));
    register_meeter(&registry, "search", true, &barrier);
    let calls = [call("a", "search", "{}"), call("b", "search", "{}"), call("c", "search", "{}")];
    let started = Instant::now();
    let results = registry.execute_batch(&calls, &RunContext::new()).await;
    for r in &results {
        assert_eq!(r.content, "met", "the calls did not overlap: {r:?}");
    }
    assert_eq!(started.elapsed(), Duration::ZERO);

    // And by time: three 100 ms naps take 100 ms, not 300.
    let (log, in_flight, epoch) = (Log::new(), InFlight::default(), Instant::now());
    register_napper(&registry, "grep", true, &log, &in_flight, epoch);
    let calls = [nap("a", "grep", 100), nap("b", "grep", 100), nap("c", "grep", 100)];
    registry.execute_batch(&calls, &RunContext::new()).await;
    assert_eq!(epoch.elapsed(), Duration::from_millis(100));
    assert_eq!(in_flight.max(), 3);
}

#[tokio::test(start_paused = true)]
async fn serial_calls_run_one_at_a_time_in_call_order_alongside_concurrent_ones() {
    let registry = ToolRegistry::new();
    let (log, serial, concurrent, epoch) =
        (Log::new(), InFlight::default(), InFlight::default(), Instant::now());
    register_napper(&registry, "edit_file", false, &log, &serial, epoch);
    register_napper(&registry, "read_file", true, &log, &concurrent, epoch);
    let calls = [
        nap("e1", "edit_file", 30),
        nap("r1", "read_file", 100),
        nap("e2", "edit_file", 10),
        nap("r2", "read_file", 100),
        nap("e3", "edit_file", 20),
    ];
    let results = registry.execute_batch(&calls, &RunContext::new()).await;
    assert_eq!(ids(&results), ["e1", "r1", "e2", "r2", "e3"]);
    assert_eq!(serial.max(), 1, "two serial calls overlapped");

    let entries = log.entries();
    let serial_entries: Vec<&str> = entries
        .iter()
        .map(String::as_str)
        .filter(|e| e.split(' ').nth(1).unwrap().starts_with('e'))
        .collect();
    assert_eq!(
        serial_entries,
        ["start e1 @0", "end e1 @30", "start e2 @30", "end e2 @40", "start e3 @40", "end e3 @60"],
        "serial calls run one at a time, in call order"
    );
    // Alongside: the reads started at once and were not held up by the edits.
    for e in ["start r1 @0", "start r2 @0", "end r1 @100", "end r2 @100"] {
        assert!(entries.iter().any(|x| x == e), "{e} missing from {entries:?}");
    }
    assert_eq!(epoch.elapsed(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn a_serial_call_overlaps_the_concurrent_calls_of_its_batch() {
    // The serial call and the concurrent call can only both finish if they run together.
    let registry = ToolRegistry::new();
    let barrier = Arc::new(Barrier::new(2));
    register_meeter(&registry, "write_todos", false, &barrier);
    register_meeter(&registry, "grep", true, &barrier);
    let results = registry
        .execute_batch(&[call("a", "write_todos", "{}"), call("b", "grep", "{}")], &RunContext::new())
        .await;
    assert_eq!((results[0].content.as_str(), results[1].content.as_str()), ("met", "met"));
}

#[tokio::test(start_paused = true)]
async fn results_come_back_in_call_order_when_later_calls_finish_first() {
    let registry = ToolRegistry::new();
    let (log, in_flight, epoch) = (Log::new(), InFlight::default(), Instant::now());
    register_napper(&registry, "grep", true, &log, &in_flight, epoch);
    let events = Log::new();
    let run = RunContext::new().with_events(recording_sink(&events));
    let calls = [nap("a", "grep", 300), nap("b", "grep", 200), nap("c", "grep", 100), nap("d", "grep", 0)];
    let results = registry.execute_batch(&calls, &run).await;
    assert_eq!(ids(&results), ["a", "b", "c", "d"]);
    // The setup really made later calls finish first.
    let ends: Vec<String> = events.entries().into_iter().filter(|e| e.starts_with("end")).collect();
    assert_eq!(ends, ["end 3 d", "end 2 c", "end 1 b", "end 0 a"]);
}

#[tokio::test(start_paused = true)]
async fn call_start_events_are_emitted_once_per_call_in_call_order() {
    let registry = ToolRegistry::new();
    let (log, in_flight, epoch) = (Log::new(), InFlight::default(), Instant::now());
    register_napper(&registry, "grep", true, &log, &in_flight, epoch);
    register_napper(&registry, "edit_file", false, &log, &InFlight::default(), epoch);
    let events = Log::new();
    let run = RunContext::new().with_events(recording_sink(&events));
    let calls = [
        nap("a", "grep", 300),
        nap("b", "edit_file", 200),
        call("c", "no_such_tool", "{}"),
        nap("d", "edit_file", 0),
        call("e", "grep", "{\"ms\": "),
        nap("f", "grep", 0),
    ];
    let results = registry.execute_batch(&calls, &run).await;
    assert_eq!(ids(&results), ["a", "b", "c", "d", "e", "f"]);

    let entries = events.entries();
    let starts: Vec<&str> = entries.iter().map(String::as_str).filter(|e| e.starts_with("start")).collect();
    assert_eq!(starts, ["start 0 a", "start 1 b", "start 2 c", "start 3 d", "start 4 e", "start 5 f"]);
    let ends: Vec<&str> = entries.iter().map(String::as_str).filter(|e| e.starts_with("end")).collect();
    assert_eq!(ends.len(), calls.len(), "{entries:?}");
    assert_ne!(ends.first(), Some(&"end 0 a"), "the setup must finish a later call first: {entries:?}");
    // No start event waits for an earlier call to finish.
    let first_end = entries.iter().position(|e| e.starts_with("end")).unwrap();
    assert_eq!(first_end, calls.len(), "{entries:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failure_cancels_nothing() {
    let registry = ToolRegistry::new();
    let (log, in_flight, epoch) = (Log::new(), InFlight::default(), Instant::now());
    register_napper(&registry, "grep", true, &log, &in_flight, epoch);
    register_napper(&registry, "edit_file", false, &log, &InFlight::default(), epoch);
    registry
        .register_with_schema(
            "fail",
            "Fails.",
            empty_schema(),
            ToolHandler::from_async(|_args, _ctx| async { Err(ToolError::new("it broke")) }),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "fail_serial",
            "Fails.",
            empty_schema(),
            ToolHandler::from_async(|_args, _ctx| async { Err(ToolError::new("it broke too")) }),
            ToolOptions::new().concurrent(false),
        )
        .unwrap();
    registry
        .register_with_schema(
            "boom",
            "Panics.",
            empty_schema(),
            ToolHandler::from_async(|_args, _ctx| async { panic!("boom") }),
            ToolOptions::new(),
        )
        .unwrap();
    registry
        .register_with_schema(
            "stuck",
            "Never answers.",
            empty_schema(),
            ToolHandler::from_async(|_args, _ctx| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok("late".into())
            }),
            ToolOptions::new().timeout_seconds(1.0),
        )
        .unwrap();
    let calls = [
        call("1", "fail", "{}"),
        call("2", "fail_serial", "{}"),
        call("3", "boom", "{}"),
        call("4", "stuck", "{}"),
        call("5", "nope", "{}"),
        call("6", "grep", "[]"),
        nap("7", "grep", 2000),
        nap("8", "edit_file", 10),
    ];
    let results = registry.execute_batch(&calls, &RunContext::new()).await;
    assert_eq!(ids(&results), ["1", "2", "3", "4", "5", "6", "7", "8"]);
    let errors: Vec<bool> = results.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, [true, true, true, true, true, true, false, false], "{results:#?}");
    assert_eq!((results[6].content.as_str(), results[7].content.as_str()), ("7", "8"));
    let entries = log.entries();
    assert!(entries.contains(&"end 7 @2000".to_owned()), "{entries:?}");
    assert!(entries.contains(&"end 8 @10".to_owned()), "{entries:?}");
}

#[tokio::test(start_paused = true)]
async fn a_shared_serial_queue_makes_serial_tools_of_two_registries_take_turns() {
    let queue = SerialQueue::new();
    let (agent, specialist) = (ToolRegistry::new(), ToolRegistry::new());
    agent.set_serial_queue(queue.clone());
    specialist.set_serial_queue(queue.clone());
    assert!(agent.serial_queue().same_queue(&specialist.serial_queue()));

    let (log, serial, epoch) = (Log::new(), InFlight::default(), Instant::now());
    register_napper(&agent, "edit_file", false, &log, &serial, epoch);
    register_napper(&specialist, "write_file", false, &log, &serial, epoch);
    let (run_a, run_b) = (RunContext::new(), RunContext::new());
    let a_calls = [nap("a1", "edit_file", 50), nap("a2", "edit_file", 50)];
    let b_calls = [nap("b1", "write_file", 50), nap("b2", "write_file", 50)];
    let (a, b) =
        tokio::join!(agent.execute_batch(&a_calls, &run_a), specialist.execute_batch(&b_calls, &run_b));
    assert!(a.iter().chain(&b).all(|r| !r.is_error));
    assert_eq!(serial.max(), 1, "serial tools of the two registries overlapped: {:?}", log.entries());
    assert_eq!(epoch.elapsed(), Duration::from_millis(200));

    // A single `execute` takes its turn on the shared queue too.
    let (log, serial, epoch) = (Log::new(), InFlight::default(), Instant::now());
    let (agent, specialist) = (ToolRegistry::new(), ToolRegistry::new());
    agent.set_serial_queue(queue.clone());
    specialist.set_serial_queue(queue);
    register_napper(&agent, "edit_file", false, &log, &serial, epoch);
    register_napper(&specialist, "write_file", false, &log, &serial, epoch);
    let x = nap("x", "edit_file", 50);
    let y = nap("y", "write_file", 50);
    tokio::join!(agent.execute(&x, None), specialist.execute(&y, None));
    assert_eq!(serial.max(), 1);
}

#[tokio::test(start_paused = true)]
async fn registries_with_their_own_queues_do_not_wait_for_each_other() {
    // The control for the shared-queue test: unshared, serial tools of two registries
    // run together (they meet on a barrier).
    let (a, b) = (ToolRegistry::new(), ToolRegistry::new());
    assert!(!a.serial_queue().same_queue(&b.serial_queue()));
    let barrier = Arc::new(Barrier::new(2));
    register_meeter(&a, "edit_file", false, &barrier);
    register_meeter(&b, "edit_file", false, &barrier);
    let (ca, cb) = (call("a", "edit_file", "{}"), call("b", "edit_file", "{}"));
    let (ra, rb) = tokio::join!(a.execute(&ca, None), b.execute(&cb, None));
    assert_eq!((ra.content.as_str(), rb.content.as_str()), ("met", "met"));

    // Shared, the same two calls cannot meet: the first waits alone until it times out
    // (its arrival then lets the second one through).
    let queue = SerialQueue::new();
    let (a, b) = (ToolRegistry::new(), ToolRegistry::new());
    a.set_serial_queue(queue.clone());
    b.set_serial_queue(queue);
    let barrier = Arc::new(Barrier::new(2));
    register_meeter(&a, "edit_file", false, &barrier);
    register_meeter(&b, "edit_file", false, &barrier);
    let (ca, cb) = (call("a", "edit_file", "{}"), call("b", "edit_file", "{}"));
    let (ra, rb) = tokio::join!(a.execute(&ca, None), b.execute(&cb, None));
    assert!(ra.content.contains("timed out") || rb.content.contains("timed out"), "{ra:?} {rb:?}");
}
