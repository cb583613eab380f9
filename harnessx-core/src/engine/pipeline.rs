//! The one pipeline every call goes through, and batch scheduling.
//!
//! resolve name -> parse arguments -> validate -> permission -> dedupe -> (serial turn)
//! -> run with timeout -> retry. Every failure becomes an error [`ToolResult`].

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::{join, join_all};
use serde_json::Value;

use crate::engine::blocking::run_blocking;
use crate::engine::context::RunContext;
use crate::engine::events::ToolEvent;
use crate::engine::serial::SerialQueue;
use crate::error::ToolError;
use crate::permission::DenyReason;
use crate::permission::manager::authorize_without_manager;
use crate::schema::{canonical_json, kind_of};
use crate::tool::call::{ToolCall, ToolOutput, ToolResult};
use crate::tool::handler::{ToolContext, ToolHandler};
use crate::tool::policy::{EffectivePolicy, duration_from_secs};
use crate::tool::registered::RegisteredTool;

/// The text of every permission refusal.
pub const PERMISSION_DENIED: &str = "Permission denied";

/// What the registry hands the engine for one call: the tool the call's name resolved to
/// (or the error text for the model), the policy values in force, and the queue serial
/// tools take turns on. The engine never looks inside a registry.
pub(crate) struct CallTarget {
    tool: Result<Arc<RegisteredTool>, String>,
    policy: EffectivePolicy,
    serial: SerialQueue,
}

impl CallTarget {
    pub(crate) fn new(
        tool: Result<Arc<RegisteredTool>, String>,
        policy: EffectivePolicy,
        serial: SerialQueue,
    ) -> Self {
        Self { tool, policy, serial }
    }
}

/// A call that passed the checks that need no waiting (name, arguments, schema).
struct ReadyCall {
    tool: Arc<RegisteredTool>,
    args: Value,
    policy: EffectivePolicy,
    /// The queue to take turns on, for non-concurrent tools.
    serial: Option<SerialQueue>,
}

enum Prepared {
    Done(ToolResult),
    Ready(ReadyCall),
}

impl Prepared {
    fn tool_name(&self) -> Option<&str> {
        match self {
            Prepared::Done(_) => None,
            Prepared::Ready(c) => Some(c.tool.name()),
        }
    }
}

/// Parses raw argument text: empty text and `null` count as `{}`; anything that is not a
/// JSON object is refused with the parse error.
fn parse_arguments(tool: &str, raw: &str) -> Result<Value, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Value::Object(Default::default()));
    }
    // Parse the text as sent, so the error's line and column point into it.
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "invalid arguments for {tool}: expected a JSON object, got {}; the tool did not run. Send the call again with the arguments as a JSON object.",
            kind_of(&other)
        )),
        Err(e) => {
            let cut_off = e.is_eof();
            Err(format!(
                "invalid arguments for {tool}: the arguments are not valid JSON ({e}){}; the tool did not run. Send the call again with the complete JSON object.",
                if cut_off { ", they look cut off" } else { "" }
            ))
        }
    }
}

fn prepare(target: CallTarget, call: &ToolCall) -> Prepared {
    let CallTarget { tool, policy, serial } = target;
    let tool = match tool {
        Ok(t) => t,
        Err(unknown) => return Prepared::Done(ToolResult::error(&call.id, &call.name, unknown)),
    };
    let args = match parse_arguments(tool.name(), &call.arguments) {
        Ok(a) => a,
        Err(msg) => return Prepared::Done(ToolResult::error(&call.id, &**tool.name(), msg)),
    };
    if let Some(msg) = tool.check(&args) {
        return Prepared::Done(ToolResult::error(&call.id, &**tool.name(), msg));
    }
    let serial = (!tool.definition().concurrent).then_some(serial);
    Prepared::Ready(ReadyCall { tool, args, policy, serial })
}

/// Runs one call through the whole pipeline.
pub(crate) async fn execute_one(target: CallTarget, call: &ToolCall, ctx: &RunContext) -> ToolResult {
    let prepared = prepare(target, call);
    ctx.emit(ToolEvent::CallStart { index: 0, call, tool: prepared.tool_name() });
    let result = match prepared {
        Prepared::Done(r) => r,
        Prepared::Ready(ready) => run_ready(ready, call, ctx).await,
    };
    ctx.emit(ToolEvent::CallEnd { index: 0, result: &result });
    result
}

/// Runs the calls of one model turn (`targets[i]` is the target of `calls[i]`).
pub(crate) async fn execute_batch(
    targets: Vec<CallTarget>,
    calls: &[ToolCall],
    ctx: &RunContext,
) -> Vec<ToolResult> {
    let prepared: Vec<Prepared> = targets.into_iter().zip(calls).map(|(t, c)| prepare(t, c)).collect();
    for (index, (call, p)) in calls.iter().zip(&prepared).enumerate() {
        ctx.emit(ToolEvent::CallStart { index, call, tool: p.tool_name() });
    }
    let mut results: Vec<Option<ToolResult>> = (0..calls.len()).map(|_| None).collect();
    let mut concurrent = Vec::new();
    let mut serial = Vec::new();
    for (index, p) in prepared.into_iter().enumerate() {
        match p {
            Prepared::Done(r) => {
                ctx.emit(ToolEvent::CallEnd { index, result: &r });
                results[index] = Some(r);
            }
            Prepared::Ready(ready) if ready.serial.is_none() => {
                concurrent.push(run_indexed(index, ready, &calls[index], ctx));
            }
            Prepared::Ready(ready) => serial.push((index, ready)),
        }
    }
    let serial_run = async {
        let mut done = Vec::with_capacity(serial.len());
        for (index, ready) in serial {
            done.push(run_indexed(index, ready, &calls[index], ctx).await);
        }
        done
    };
    let (concurrent_done, serial_done) = join(join_all(concurrent), serial_run).await;
    for (index, r) in concurrent_done.into_iter().chain(serial_done) {
        results[index] = Some(r);
    }
    results.into_iter().map(|r| r.expect("every call of a batch produces a result")).collect()
}

async fn run_indexed(
    index: usize,
    ready: ReadyCall,
    call: &ToolCall,
    ctx: &RunContext,
) -> (usize, ToolResult) {
    let result = run_ready(ready, call, ctx).await;
    ctx.emit(ToolEvent::CallEnd { index, result: &result });
    (index, result)
}

async fn run_ready(ready: ReadyCall, call: &ToolCall, ctx: &RunContext) -> ToolResult {
    let name = ready.tool.name();
    let permission = ready.tool.definition().permission;
    let allowed = match ctx.permissions() {
        // A panicking approval callback or store denies the call (fail closed).
        Some(manager) => AssertUnwindSafe(manager.authorize(name, permission, &call.id, &ready.args))
            .catch_unwind()
            .await
            .unwrap_or_else(|payload| {
                log_panic(name, &*payload);
                Err(DenyReason::Rejected)
            }),
        None => authorize_without_manager(permission),
    };
    if let Err(reason) = allowed {
        tracing::info!(tool = &**name, call_id = %call.id, ?reason, "tool call denied");
        return ToolResult::error(&call.id, &**name, PERMISSION_DENIED);
    }
    if ready.policy.dedupe_calls {
        let slot = ctx.dedupe_slot(name, canonical_json(&ready.args));
        let first = slot.get_or_init(|| invoke(ready, &call.id)).await;
        let mut result = first.clone();
        result.call_id.clone_from(&call.id);
        return result;
    }
    invoke(ready, &call.id).await
}

enum Outcome {
    Done(Result<ToolOutput, ToolError>),
    TimedOut,
    Panicked,
}

/// Runs the handler with the timeout, taking the serial turn if needed, retrying
/// `safe`/`idempotent` tools per their retry policy.
async fn invoke(ready: ReadyCall, call_id: &str) -> ToolResult {
    let ReadyCall { tool, args, policy, serial } = ready;
    let _turn = match &serial {
        Some(queue) => Some(queue.acquire().await),
        None => None,
    };
    let def = tool.definition();
    let name = tool.name();
    let timeout_secs = def.timeout_seconds.unwrap_or(policy.default_timeout_seconds);
    let timeout = duration_from_secs(timeout_secs);
    let retry = def.retry.unwrap_or(policy.retry);
    let max_attempts = if def.replay_policy.allows_retry() { retry.max_attempts.max(1) } else { 1 };
    let ctx = ToolContext::new(call_id, name.clone());
    let mut args = Some(args);
    let mut attempt = 1;
    loop {
        let last = attempt >= max_attempts;
        let attempt_args = if last { args.take() } else { args.clone() }.unwrap_or_default();
        let outcome = run_once(&def.handler, attempt_args, ctx.clone(), timeout).await;
        let retry_wanted = !last
            && match &outcome {
                Outcome::Done(Ok(out)) => def.retry_if_result.as_ref().is_some_and(|p| {
                    // A panicking predicate asks for nothing.
                    std::panic::catch_unwind(AssertUnwindSafe(|| p(out))).unwrap_or(false)
                }),
                Outcome::Done(Err(e)) => e.is_transient(),
                _ => false,
            };
        if retry_wanted {
            attempt += 1;
            tracing::debug!(tool = &**name, call_id, attempt, "retrying tool call");
            let delay = retry.delay_before(attempt);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            continue;
        }
        return match outcome {
            Outcome::Done(Ok(out)) => ToolResult::success(call_id, &**name, out),
            Outcome::Done(Err(e)) if e.is_transient() && attempt > 1 => {
                ToolResult::error(call_id, &**name, format!("{} (failed {attempt} attempts)", e.message()))
            }
            Outcome::Done(Err(e)) => ToolResult::error(call_id, &**name, e.message()),
            Outcome::TimedOut => ToolResult::error(call_id, &**name, timeout_message(name, timeout_secs)),
            Outcome::Panicked => ToolResult::error(
                call_id,
                &**name,
                format!(
                    "tool {} failed with an internal error; the details were logged for the operator",
                    name
                ),
            ),
        };
    }
}

fn timeout_message(name: &str, seconds: f64) -> String {
    format!(
        "tool {name} timed out after {seconds}s and may have partly run; check its effects before calling it again"
    )
}

async fn run_once(handler: &ToolHandler, args: Value, ctx: ToolContext, timeout: Duration) -> Outcome {
    match handler {
        ToolHandler::Async(h) => {
            let name = ctx.tool_name().to_owned();
            let fut = AssertUnwindSafe(async move { h.call(args, ctx).await }).catch_unwind();
            match tokio::time::timeout(timeout, fut).await {
                Ok(Ok(result)) => Outcome::Done(result),
                Ok(Err(payload)) => {
                    log_panic(&name, &*payload);
                    Outcome::Panicked
                }
                Err(_) => Outcome::TimedOut,
            }
        }
        ToolHandler::Blocking(h) => {
            let h = h.clone();
            let name = ctx.tool_name().to_owned();
            match tokio::time::timeout(timeout, run_blocking(move || h.call(args, &ctx))).await {
                Ok(Ok(result)) => Outcome::Done(result),
                Ok(Err(payload)) => {
                    log_panic(&name, &*payload);
                    Outcome::Panicked
                }
                Err(_) => Outcome::TimedOut,
            }
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
    use super::*;

    #[test]
    fn empty_and_null_arguments_are_an_empty_object() {
        for raw in ["", "  ", "null", " null "] {
            assert_eq!(parse_arguments("t", raw).unwrap(), serde_json::json!({}));
        }
    }

    #[test]
    fn cut_off_arguments_carry_the_parse_error() {
        let err = parse_arguments("write_file", r#"{"path": "a.txt", "content": "line one\nli"#).unwrap_err();
        assert!(err.starts_with("invalid arguments for write_file: the arguments are not valid JSON (EOF while parsing a string"), "{err}");
        assert!(err.contains("cut off"), "{err}");
    }

    #[tokio::test]
    async fn a_panicking_approval_callback_denies_and_the_batch_goes_on() {
        use crate::{PermissionLevel, PermissionManager, ToolHandler, ToolOptions, ToolRegistry};
        let registry = ToolRegistry::new();
        let schema = serde_json::json!({"type": "object"});
        let ok = ToolHandler::from_async(|_, _| async { Ok("ran".into()) });
        registry
            .register_with_schema(
                "ask",
                "d",
                schema.clone(),
                ok.clone(),
                ToolOptions::new().permission(PermissionLevel::Ask),
            )
            .unwrap();
        registry.register_with_schema("free", "d", schema, ok, ToolOptions::new()).unwrap();
        let manager =
            PermissionManager::default().with_approval_fn(|_| async { panic!("approval UI crashed") });
        let ctx = RunContext::new().with_permissions(manager);
        let calls = [ToolCall::new("1", "ask", "{}"), ToolCall::new("2", "free", "{}")];
        let results = registry.execute_batch(&calls, &ctx).await;
        assert_eq!(results[0].content, PERMISSION_DENIED);
        assert_eq!(results[1].content, "ran");
    }

    #[test]
    fn non_objects_are_refused() {
        let err = parse_arguments("t", "[1,2]").unwrap_err();
        assert!(err.contains("expected a JSON object, got an array"), "{err}");
        assert!(parse_arguments("t", "\"{}\"").unwrap_err().contains("got a string"));
    }
}
