//! One call's attempts: the handler under its timeout, a panic caught, retries under
//! its policy, the result capped; and deduplicated calls sharing one run.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;
use tracing::Span;

use super::prepare::{ReadyCall, parse_checked};
use super::{Run, RunHooks};
use crate::depth::{MAX_JSON_DEPTH, drop_deep, value_too_deep};
use crate::engine::blocking::run_blocking;
use crate::engine::cap::{ResultDir, cap_parts};
use crate::engine::clock::Start;
use crate::engine::context::RunContext;
use crate::engine::events::ToolEventSink;
use crate::engine::span::{self, ErrorType};
use crate::error::ToolError;
use crate::schema::canonical_json;
use crate::tool::call::{ToolCall, ToolOutput, ToolResult};
use crate::tool::handler::{BoxFuture, CallInfo, HandlerResult, ToolHandler};
use crate::tool::policy::duration_from_secs;

/// What running a handler gave: its answer, whether its last attempt timed out, and
/// why it is an error (for the span). Shared by identical calls when deduplicating.
#[derive(Clone)]
pub(crate) struct Invoked {
    pub(super) answer: Answer,
    pub(super) timed_out: bool,
    pub(super) error: Option<ErrorType>,
    /// The handler paused for a person (boxed: rare).
    pub(super) paused: Option<Box<crate::error::Pause>>,
}

/// A call's answer as its handler gave it (or the engine, for a timeout or a panic): its
/// output and whether it is an error, a [`ToolResult`] without the call's id and the
/// tool's name, which are added as the call ends. What goes from stage to stage is kept this small on purpose: a value over 128
/// bytes is copied by a call to `memcpy` each time it is handed on, and a whole result
/// was handed on about twenty times a call.
#[derive(Clone)]
pub(super) struct Answer {
    pub(super) output: ToolOutput,
    pub(super) is_error: bool,
}

impl Invoked {
    /// What a hook answered in place of the handler.
    pub(super) fn answered(output: ToolOutput) -> Self {
        Self { answer: Answer::success(output), timed_out: false, error: None, paused: None }
    }
}

impl Answer {
    fn success(output: ToolOutput) -> Self {
        Self { output, is_error: false }
    }

    fn error(message: impl Into<String>) -> Self {
        Self { output: ToolOutput::text(message), is_error: true }
    }

    #[inline]
    pub(super) fn into_result(self, call_id: &str, name: &str) -> ToolResult {
        let Self { output: ToolOutput { content, structured_content, parts }, is_error } = self;
        ToolResult {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            content,
            is_error,
            structured_content,
            parts,
        }
    }
}

/// A call of a tool that deduplicates: the first of identical calls in the run runs, the
/// others share its result (with their own call id).
pub(super) async fn run_deduplicated(
    ready: &mut ReadyCall,
    call: &ToolCall,
    run: &Run,
    hooks: &RunHooks,
    ctx: &RunContext,
) -> (Invoked, bool) {
    let key = canonical_json(ready.with_value(call).1);
    let slot = ctx.dedupe_slot(ready.tool.name(), key);
    let mut first_here = false;
    let shared = slot.get_or_init(|| {
        first_here = true;
        invoke(ready, call, run, hooks, ctx.result_dir(), ctx.event_sink())
    });
    let invoked = shared.await.clone();
    if !first_here {
        span::record_deduplicated(&Span::current());
    }
    (invoked, first_here)
}

enum Outcome {
    Done(Result<ToolOutput, ToolError>),
    TimedOut,
    Panicked,
}

/// Runs the handler with the timeout, taking the serial turn if needed, retrying
/// `safe`/`idempotent` tools per their retry policy; the result is capped
/// ([`cap`](crate::engine::cap)), its whole text saved in `result_dir` when cut.
///
/// What it keeps across its awaits is kept small on purpose (the attempt's future, the
/// attempt number, references): anything else is worked out again where it is needed.
pub(super) async fn invoke(
    ready: &mut ReadyCall,
    call: &ToolCall,
    run: &Run,
    hooks: &RunHooks,
    result_dir: Option<&ResultDir>,
    events: Option<&Arc<dyn ToolEventSink>>,
) -> Invoked {
    let _turn = match &ready.serial {
        Some(queue) => Some(queue.acquire().await),
        None => None,
    };
    let max_attempts = attempts_allowed(ready);
    if let Some(hook) = &hooks.on_start {
        hook(run.index);
    }
    let mut attempt = 1;
    loop {
        let delay = {
            let last = attempt >= max_attempts;
            let name = ready.tool.name();
            // The last attempt takes the arguments; earlier ones run on a copy. (Arguments
            // still in their text are decoded from it by each attempt.)
            let args = match &mut ready.args {
                None => Arguments::Text(&call.arguments),
                Some(value) if last => Arguments::Value(std::mem::take(&mut **value)),
                Some(value) => Arguments::Value(Value::clone(value)),
            };
            let call_id = &*call.id;
            let info = CallInfo::new(call_id, name, run.key.as_ref())
                .with_events(events)
                .with_pause(run.pausable, run.answer.as_ref());
            let def = ready.tool.definition();
            let outcome = run_once(&def.handler, name, args, info, timeout_of(ready)).await;
            if last || !retry_wanted(ready, &outcome, hooks) {
                let mut invoked = conclude(ready, outcome, attempt);
                if !invoked.timed_out {
                    // The central cap, after the tool's own limits: every tool's result alike.
                    // Media parts are not capped here (the cap counts characters); their
                    // producers bound them (see the module doc of `engine::cap`).
                    let ToolOutput { content, structured_content, .. } = &mut invoked.answer.output;
                    let max_chars = ready.policy.max_result_chars;
                    cap_parts(content, structured_content, (name, call_id), max_chars, result_dir);
                }
                return invoked;
            }
            attempt += 1;
            tracing::debug!(tool = &**name, call_id, attempt, "retrying tool call");
            retry_of(ready).delay_before(attempt)
        };
        if !delay.is_zero() {
            // Boxed, as the timer in `Attempt`: only a retry pays for it.
            Box::pin(tokio::time::sleep(delay)).await;
        }
    }
}

/// The tool's own timeout, else the registry's default, in seconds.
fn timeout_seconds(ready: &ReadyCall) -> f64 {
    ready.tool.definition().timeout_seconds.unwrap_or(ready.policy.default_timeout_seconds)
}

fn timeout_of(ready: &ReadyCall) -> Duration {
    duration_from_secs(timeout_seconds(ready))
}

fn retry_of(ready: &ReadyCall) -> crate::tool::policy::ToolRetry {
    ready.tool.definition().retry.unwrap_or(ready.policy.retry)
}

/// How many attempts the call may take: its retry policy's, for a tool that allows
/// retries; one for the others.
fn attempts_allowed(ready: &ReadyCall) -> u32 {
    if ready.tool.definition().replay_policy.allows_retry() { retry_of(ready).max_attempts.max(1) } else { 1 }
}

/// Whether an attempt's outcome asks for another attempt (one remains).
fn retry_wanted(ready: &ReadyCall, outcome: &Outcome, hooks: &RunHooks) -> bool {
    match outcome {
        Outcome::Done(Ok(out)) => ready.tool.definition().retry_if_result.as_ref().is_some_and(|p| {
            // A panicking predicate asks for nothing.
            std::panic::catch_unwind(AssertUnwindSafe(|| p(out))).unwrap_or(false)
        }),
        Outcome::Done(Err(e)) => e.is_transient(),
        Outcome::TimedOut => hooks.retry_timeouts,
        Outcome::Panicked => false,
    }
}

/// The answer of the call's last attempt (`attempt` is its number).
fn conclude(ready: &ReadyCall, outcome: Outcome, attempt: u32) -> Invoked {
    let name = ready.tool.name();
    let failed = Some(ErrorType::ToolError);
    let (answer, error) = match outcome {
        Outcome::Done(Ok(mut out)) => match too_deep(&mut out) {
            None => (Answer::success(out), None),
            Some(value) => {
                drop_deep(value);
                (Answer::error(too_deep_message(name)), failed)
            }
        },
        Outcome::Done(Err(e)) if e.is_transient() && attempt > 1 => {
            (Answer::error(format!("{} (failed {attempt} attempts)", e.message())), failed)
        }
        Outcome::Done(Err(ToolError::Paused(pause))) => {
            let answer = Answer::error(pause.reason.as_str());
            return Invoked { answer, timed_out: false, error: failed, paused: Some(pause) };
        }
        Outcome::Done(Err(e)) => (Answer::error(e.message()), failed),
        Outcome::TimedOut => {
            let mut text = timeout_message(name, timeout_seconds(ready));
            if attempt > 1 {
                text.push_str(&format!(" (timed out {attempt} attempts)"));
            }
            let error = Some(ErrorType::Timeout);
            return Invoked { answer: Answer::error(text), timed_out: true, error, paused: None };
        }
        Outcome::Panicked => (
            Answer::error(format!(
                "tool {name} failed with an internal error; the details were logged for the operator"
            )),
            Some(ErrorType::Panic),
        ),
    };
    Invoked { answer, timed_out: false, error, paused: None }
}

/// The structured content of `out` when it nests more than [`MAX_JSON_DEPTH`] levels: a
/// journal could not read it back, nor a client of the MCP server, nor would serialising
/// it stay on the stack.
fn too_deep(out: &mut ToolOutput) -> Option<Value> {
    let deep = out.structured_content.as_ref().is_some_and(|v| value_too_deep(v, MAX_JSON_DEPTH));
    if deep { out.structured_content.take() } else { None }
}

fn too_deep_message(name: &str) -> String {
    format!(
        "tool {name} ran, but its result is nested too deeply to send back (more than {MAX_JSON_DEPTH} levels of arrays and objects)"
    )
}

fn timeout_message(name: &str, seconds: f64) -> String {
    format!(
        "tool {name} timed out after {seconds}s and may have partly run; check its effects before calling it again"
    )
}

/// One attempt: the handler under the timeout, a panic caught. A plain function that
/// calls the handler at once (an async handler's `call` gives its boxed future; a
/// blocking one's job is queued on the pool): the future returned holds that future
/// and the deadline, not the arguments and context as well.
fn run_once<'a>(
    handler: &'a ToolHandler,
    name: &'a str,
    args: Arguments<'_>,
    info: CallInfo<'_>,
    timeout: Duration,
) -> impl Future<Output = Outcome> + 'a {
    let running = match handler {
        // The call itself runs code of the tool's (decoding, the user's function before
        // its first await): a panic there is caught like one in the future.
        ToolHandler::Async(h) => match std::panic::catch_unwind(AssertUnwindSafe(|| match args {
            Arguments::Value(value) => h.call(value, info.to_context()),
            Arguments::Text(text) => match h.call_json(text, info) {
                Some(fut) => fut,
                // It did not decode: the value, for the handler's own error.
                None => h.call(parse_checked(text, 0), info.to_context()),
            },
        })) {
            Ok(fut) => Running::Async { fut },
            Err(payload) => Running::Panicked { payload: Some(payload) },
        },
        ToolHandler::Blocking(h) => {
            let h = h.clone();
            let ctx = info.to_context();
            let args = match args {
                Arguments::Value(value) => Ok(value),
                Arguments::Text(text) => Err(Box::<str>::from(text)),
            };
            Running::Blocking {
                fut: run_blocking(move || match args {
                    Ok(value) => h.call(value, &ctx),
                    Err(text) => match h.call_json(&text, &ctx) {
                        Some(result) => result,
                        None => h.call(parse_checked(&text, 0), &ctx),
                    },
                }),
            }
        }
    };
    Attempt { running, name, timeout, start: None, timer: None }
}

/// The arguments one attempt runs on.
enum Arguments<'t> {
    Value(Value),
    /// The call's text, checked against the tool's flat schema.
    Text(&'t str),
}

pin_project_lite::pin_project! {
    /// What an attempt waits on: an async handler's future, a blocking handler's job on
    /// the pool, or nothing, for a handler that panicked as it was called.
    #[project = RunningProj]
    enum Running<B> {
        Async { fut: BoxFuture<HandlerResult> },
        Blocking { #[pin] fut: B },
        Panicked { payload: Option<Box<dyn Any + Send>> },
    }
}

pin_project_lite::pin_project! {
    /// One attempt under a deadline counted from its first poll, a panic caught, ending
    /// as an [`Outcome`]. One poll for what would otherwise be four combinators (timeout,
    /// catch, either, map), each handing the result on to the next.
    ///
    /// The timer is only set up (and boxed) when the first poll leaves the attempt
    /// pending, and the clock read exactly only then (the start is a cheap coarse
    /// reading, [`Start`]): a quick call pays for no timer, and every call's future,
    /// moved as a whole into a batch, stays small.
    struct Attempt<'a, B> {
        #[pin]
        running: Running<B>,
        name: &'a str,
        timeout: Duration,
        start: Option<Start>,
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
    }
}

impl<B: Future<Output = std::thread::Result<HandlerResult>>> Future for Attempt<'_, B> {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let this = self.project();
        let start = *this.start.get_or_insert_with(Start::now);
        let polled = match this.running.project() {
            RunningProj::Async { fut } => {
                match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                    Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
                    Ok(Poll::Pending) => Poll::Pending,
                    Err(payload) => Poll::Ready(Err(payload)),
                }
            }
            RunningProj::Blocking { fut } => fut.poll(cx),
            RunningProj::Panicked { payload } => {
                Poll::Ready(Err(payload.take().unwrap_or_else(|| Box::new("polled again after a panic"))))
            }
        };
        if let Poll::Ready(ended) = polled {
            return Poll::Ready(match ended {
                Ok(result) => Outcome::Done(result),
                Err(payload) => {
                    log_panic(this.name, &*payload);
                    Outcome::Panicked
                }
            });
        }
        if this.timer.is_none() {
            let left = this.timeout.saturating_sub(start.elapsed_at_most());
            match tokio::time::Instant::now().checked_add(left) {
                Some(deadline) => *this.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
                // Further than the clock reaches: no deadline.
                None => return Poll::Pending,
            }
        }
        match this.timer.as_mut().map(|t| t.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Outcome::TimedOut),
            _ => Poll::Pending,
        }
    }
}

fn log_panic(tool: &str, payload: &(dyn Any + Send)) {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic payload>");
    tracing::error!(tool, panic = message, "tool handler panicked");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::pipeline::prepare::{Prepared, prepare};
    use crate::{Parts, ReplayPolicy, ToolOptions, ToolRegistry, ToolRetry};

    /// `t` registered with `options`, sleeping `sleep` seconds before it answers "ok".
    fn planned(options: ToolOptions, sleep: u64) -> (ToolRegistry, ReadyCall, ToolCall) {
        let registry = ToolRegistry::new();
        let handler = ToolHandler::from_async(move |_, _| async move {
            tokio::time::sleep(Duration::from_secs(sleep)).await;
            Ok("ok".into())
        });
        registry.register_with_schema("t", "d", json!({"type": "object"}), handler, options).unwrap();
        let call = ToolCall::new("1", "t", "{}");
        let Prepared::Ready(ready) = prepare(registry.read().target("t"), &call, false) else {
            unreachable!()
        };
        (registry, ready, call)
    }

    fn text(invoked: &Invoked) -> &str {
        &invoked.answer.output.content
    }

    #[test]
    fn a_timeout_says_the_call_may_have_partly_run_and_after_how_many_attempts() {
        let (_r, ready, _) = planned(ToolOptions::new().timeout_seconds(2.0), 0);
        let once = conclude(&ready, Outcome::TimedOut, 1);
        assert_eq!(
            text(&once),
            "tool t timed out after 2s and may have partly run; check its effects before calling it again"
        );
        assert!(once.timed_out && once.answer.is_error);
        assert_eq!(once.error, Some(ErrorType::Timeout));
        assert!(text(&conclude(&ready, Outcome::TimedOut, 3)).ends_with(" (timed out 3 attempts)"));
    }

    #[test]
    fn a_transient_failure_says_how_many_attempts_it_took_and_an_ordinary_one_does_not() {
        let (_r, ready, _) = planned(ToolOptions::new(), 0);
        let busy = || Outcome::Done(Err(ToolError::transient("busy")));
        assert_eq!(text(&conclude(&ready, busy(), 3)), "busy (failed 3 attempts)");
        assert_eq!(text(&conclude(&ready, busy(), 1)), "busy");
        let broken = conclude(&ready, Outcome::Done(Err(ToolError::new("broken"))), 2);
        assert_eq!((text(&broken), broken.error), ("broken", Some(ErrorType::ToolError)));
    }

    #[test]
    fn a_panic_is_an_internal_error_and_a_result_nested_too_deeply_is_refused() {
        let (_r, ready, _) = planned(ToolOptions::new(), 0);
        let panicked = conclude(&ready, Outcome::Panicked, 1);
        assert_eq!(
            text(&panicked),
            "tool t failed with an internal error; the details were logged for the operator"
        );
        assert_eq!(panicked.error, Some(ErrorType::Panic));
        let mut deep = json!(1);
        for _ in 0..=MAX_JSON_DEPTH {
            deep = json!([deep]);
        }
        let output = ToolOutput { content: "x".into(), structured_content: Some(deep), parts: Parts::new() };
        let refused = conclude(&ready, Outcome::Done(Ok(output)), 1);
        assert!(
            text(&refused).starts_with("tool t ran, but its result is nested too deeply"),
            "{}",
            text(&refused)
        );
        assert!(refused.answer.output.structured_content.is_none());
    }

    #[test]
    fn only_safe_and_idempotent_tools_take_more_than_one_attempt() {
        let retry = ToolRetry::immediate(4);
        for (policy, attempts) in
            [(ReplayPolicy::Safe, 4), (ReplayPolicy::Idempotent, 4), (ReplayPolicy::Manual, 1)]
        {
            let (_r, ready, _) = planned(ToolOptions::new().replay_policy(policy).retry(retry), 0);
            assert_eq!(attempts_allowed(&ready), attempts, "{policy:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_ends_at_its_deadline_and_a_quick_one_sets_no_timer() {
        let (_r, ready, call) = planned(ToolOptions::new().timeout_seconds(1.0), 30);
        let def = ready.tool.definition();
        let info = CallInfo::new(&call.id, ready.tool.name(), None);
        let args = Arguments::Value(json!({}));
        let outcome = run_once(&def.handler, ready.tool.name(), args, info, timeout_of(&ready)).await;
        assert!(matches!(outcome, Outcome::TimedOut));

        let (_r, quick, call) = planned(ToolOptions::new().timeout_seconds(1.0), 0);
        let def = quick.tool.definition();
        let info = CallInfo::new(&call.id, quick.tool.name(), None);
        let outcome =
            run_once(&def.handler, quick.tool.name(), Arguments::Value(json!({})), info, timeout_of(&quick));
        let outcome = outcome.await;
        assert!(matches!(outcome, Outcome::Done(Ok(ref out)) if out.content == "ok"));
    }
}
