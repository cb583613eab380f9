//! The one pipeline every call goes through, and batch scheduling.
//!
//! resolve name -> parse arguments -> validate -> permission -> dedupe -> (serial turn)
//! -> run with timeout -> retry. Every failure becomes an error [`ToolResult`].
//!
//! A call of a tool with a flat input schema (an object of scalar arguments) whose handler
//! decodes text ([`AsyncToolHandler::call_json`](crate::AsyncToolHandler::call_json)) is
//! checked straight from its text and not parsed into a value unless a stage asks for
//! one (a rule on arguments, a question to a person, dedupe); anything the flat check is
//! unsure of takes the general path, so each call ends as it would there.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{join, join_all};
use serde_json::Value;
use tracing::{Instrument, Span};

use crate::depth::{MAX_JSON_DEPTH, drop_deep, text_too_deep, value_too_deep};
use crate::engine::blocking::run_blocking;
use crate::engine::cap::{ResultDir, cap_parts};
use crate::engine::clock::Start;
use crate::engine::context::RunContext;
use crate::engine::events::ToolEvent;
use crate::engine::serial::SerialQueue;
use crate::engine::span::{self, ErrorType};
use crate::error::ToolError;
use crate::permission::{AuthRequest, Authorization, Decision, DenyReason, PermissionLevel};
use crate::schema::{canonical_json, kind_of};
use crate::tool::call::{ToolCall, ToolOutput, ToolResult};
use crate::tool::handler::{BoxFuture, CallInfo, HandlerResult, ToolHandler};
use crate::tool::policy::{EffectivePolicy, ReplayPolicy, duration_from_secs};
use crate::tool::registered::RegisteredTool;

pub use crate::permission::PERMISSION_DENIED;

/// What the registry hands the engine for one call: the tool the call's name resolved to
/// (or the error text for the model), the policy values in force, and, for a tool that
/// is not concurrent, the queue serial tools take turns on. The engine never looks inside
/// a registry.
pub(crate) struct CallTarget {
    tool: Result<Arc<RegisteredTool>, String>,
    policy: EffectivePolicy,
    serial: Option<SerialQueue>,
}

impl CallTarget {
    pub(crate) fn new(
        tool: Result<Arc<RegisteredTool>, String>,
        policy: EffectivePolicy,
        serial: &SerialQueue,
    ) -> Self {
        let serial = tool.as_ref().is_ok_and(|t| !t.definition().concurrent).then(|| serial.clone());
        Self { tool, policy, serial }
    }
}

/// A call that passed the checks that need no waiting (name, arguments, schema).
struct ReadyCall {
    tool: Arc<RegisteredTool>,
    /// The arguments as a value; `None` while they are only the call's own text, checked
    /// against the tool's flat schema ([`RegisteredTool::takes_text`]): its handler decodes
    /// them from there, and the value is parsed only if something asks for it.
    /// (Boxed, as a call's parts are handed on by value from stage to stage: each byte
    /// of them is copied each time.)
    args: Option<Box<Value>>,
    policy: EffectivePolicy,
    /// The queue to take turns on, for non-concurrent tools.
    serial: Option<SerialQueue>,
    /// A person replaced the model's arguments with `args` (its result says so).
    edited: bool,
}

impl ReadyCall {
    /// Replaces the arguments with ones a person edited: validated against the schema
    /// again first. The error is the result text for the model.
    fn edit(&mut self, arguments: Value) -> Result<(), String> {
        let name = self.tool.name();
        let problem = if !arguments.is_object() {
            Some(format!("expected a JSON object, got {}", kind_of(&arguments)))
        } else if value_too_deep(&arguments, MAX_JSON_DEPTH) {
            Some(format!("nested more than {MAX_JSON_DEPTH} levels deep"))
        } else {
            self.tool.check(&arguments)
        };
        if let Some(problem) = problem {
            return Err(format!(
                "the user changed the arguments of this {name} call, and the new ones are invalid ({problem}); the call did not run"
            ));
        }
        self.args = Some(Box::new(arguments));
        self.edited = true;
        Ok(())
    }

    /// The tool and the arguments as a value (parsed from the call's text, once, if they
    /// were not yet).
    fn with_value(&mut self, call: &ToolCall) -> (&RegisteredTool, &Value) {
        let args = self.args.get_or_insert_with(|| Box::new(parse_checked(&call.arguments)));
        (&self.tool, args)
    }
}

/// Argument text the flat schema accepted, as a value: an object, which parses (the
/// check read it with the same parser), so the empty object is never reached.
fn parse_checked(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(serde_json::Map::new()))
}

/// What the result of a call a person edited starts with.
pub(crate) fn edited_note(arguments: &Value) -> String {
    format!("[The user changed this call's arguments before it ran; it ran with {arguments}]\n")
}

enum Prepared {
    /// Answered without running: refused by a check (with why, for the span), or given
    /// a result by [`PlannedBatch::settle`]; with the tool the call resolved to, if any.
    Done(ToolResult, Option<ErrorType>, Option<Arc<str>>),
    Ready(ReadyCall),
}

impl Prepared {
    /// The registered tool the call resolved to (whether or not it will run).
    fn tool_name(&self) -> Option<&str> {
        match self {
            Prepared::Done(_, _, tool) => tool.as_deref(),
            Prepared::Ready(c) => Some(c.tool.name()),
        }
    }
}

/// Parses raw argument text: empty text and `null` count as `{}`; text nested more than
/// [`MAX_JSON_DEPTH`] levels deep is refused before it is parsed (whether or not it is
/// JSON: the advice to resend the complete object would not help); anything else that is
/// not a JSON object is refused with the parse error.
fn parse_arguments(tool: &str, raw: &str, capacity: usize) -> Result<Value, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return Ok(Value::Object(Default::default()));
    }
    if text_too_deep(raw, MAX_JSON_DEPTH) {
        return Err(format!(
            "invalid arguments for {tool}: the arguments are nested too deeply (more than {MAX_JSON_DEPTH} levels of arrays and objects); the tool did not run. Send the call again with flatter arguments."
        ));
    }
    // An object, parsed into a map made big enough at once (the common case).
    if let Ok(object) = parse_object(raw, capacity) {
        return Ok(object);
    }
    // Anything else is parsed again as any JSON, for the error: the text as sent, so the
    // error's line and column point into it.
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

/// `raw` as a JSON object whose map starts with room for `capacity` keys (as
/// `serde_json::from_str::<Value>`, which grows the map key by key); an error for
/// anything else, including trailing text.
fn parse_object(raw: &str, capacity: usize) -> serde_json::Result<Value> {
    struct Object(usize);
    impl<'de> serde::de::Visitor<'de> for Object {
        type Value = serde_json::Map<String, Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut map = serde_json::Map::with_capacity(self.0);
            // A repeated key keeps its last value, as `Value` does.
            while let Some((key, value)) = access.next_entry::<String, Value>()? {
                map.insert(key, value);
            }
            Ok(map)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    let map = serde::Deserializer::deserialize_map(&mut de, Object(capacity))?;
    de.end()?;
    Ok(Value::Object(map))
}

/// Resolves and checks one call. With `from_text`, a call whose text fits the tool's flat
/// schema is not parsed into a value (see [`ReadyCall::args`]).
fn prepare(target: CallTarget, call: &ToolCall, from_text: bool) -> Prepared {
    let CallTarget { tool, policy, serial } = target;
    let tool = match tool {
        Ok(t) => t,
        Err(unknown) => {
            return Prepared::Done(
                ToolResult::error(&call.id, &call.name, unknown),
                Some(ErrorType::UnknownTool),
                None,
            );
        }
    };
    if from_text && tool.takes_text(&call.arguments) {
        return Prepared::Ready(ReadyCall { tool, args: None, policy, serial, edited: false });
    }
    let invalid = Some(ErrorType::InvalidArguments);
    let args = match parse_arguments(tool.name(), &call.arguments, tool.argument_capacity()) {
        Ok(a) => a,
        Err(msg) => {
            let result = ToolResult::error(&call.id, &**tool.name(), msg);
            return Prepared::Done(result, invalid, Some(tool.name().clone()));
        }
    };
    if let Some(msg) = tool.check(&args) {
        let result = ToolResult::error(&call.id, &**tool.name(), msg);
        return Prepared::Done(result, invalid, Some(tool.name().clone()));
    }
    Prepared::Ready(ReadyCall { tool, args: Some(Box::new(args)), policy, serial, edited: false })
}

/// No hooks, timeouts answered: what a direct call or batch runs with.
static NO_HOOKS: RunHooks = RunHooks { on_start: None, on_end: None, retry_timeouts: false };

/// Runs one call through the whole pipeline: the batch rules for a batch of one (the
/// call start event, its span, permission, its serial turn, timeout, retries, dedupe,
/// the end event), without a batch's bookkeeping.
///
/// (An `async move` block rather than an `async fn`, which would keep its arguments
/// twice: a call's future is moved whole into whatever awaits it, so each byte of it
/// costs every call.)
#[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice in its future")]
pub(crate) fn execute_one<'a>(
    target: CallTarget,
    call: &'a ToolCall,
    ctx: &'a RunContext,
) -> impl Future<Output = ToolResult> + 'a {
    async move {
        match prepare(target, call, true) {
            Prepared::Done(result, error, tool) => {
                ctx.emit(ToolEvent::CallStart { index: 0, call, tool: tool.as_deref() });
                settled(0, call, result, error, false, ctx, &NO_HOOKS).result
            }
            Prepared::Ready(ready) => {
                ctx.emit(ToolEvent::CallStart { index: 0, call, tool: Some(ready.tool.name()) });
                let run = Run { index: 0, authorized: false, key: None };
                let span = span::tool_span(call, Some(ready.tool.name()), false);
                let mut out = None;
                run_indexed(run, ready, call, ctx, &NO_HOOKS, &mut out).instrument(span).await;
                out.expect("a call's run leaves its outcome").result
            }
        }
    }
}

/// Runs the calls of one model turn (`targets[i]` is the target of `calls[i]`).
pub(crate) async fn execute_batch(
    targets: Vec<CallTarget>,
    calls: &[ToolCall],
    ctx: &RunContext,
) -> Vec<ToolResult> {
    let items = plan_items(targets, calls, true);
    run_items(calls, items, ctx, &NO_HOOKS).await.into_iter().map(|o| o.result).collect()
}

fn plan_items(targets: Vec<CallTarget>, calls: &[ToolCall], from_text: bool) -> Vec<PlanItem> {
    targets
        .into_iter()
        .zip(calls)
        .map(|(t, c)| PlanItem {
            prepared: prepare(t, c, from_text),
            authorized: false,
            idempotency_key: None,
            replayed: false,
        })
        .collect()
}

/// The calls of one model turn, checked (name, arguments, schema) and not yet run: made
/// by [`ToolRegistry::plan_batch`](crate::ToolRegistry::plan_batch), run by
/// [`ToolRegistry::run_planned`](crate::ToolRegistry::run_planned).
///
/// Between the two, a runtime that records each step (the durable one) can look at
/// every call — which tool, its replay policy and permission — decide permissions
/// itself, give calls results it already has, and set idempotency keys. A direct run
/// does not need it: `execute_batch` plans and runs in one go.
pub struct PlannedBatch {
    calls: Vec<ToolCall>,
    items: Vec<PlanItem>,
}

struct PlanItem {
    /// `None` once taken by `run_planned`.
    prepared: Prepared,
    authorized: bool,
    idempotency_key: Option<Arc<str>>,
    /// Settled with a result replayed from a journal (marked on its span).
    replayed: bool,
}

impl std::fmt::Debug for PlannedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedBatch").field("calls", &self.calls).finish_non_exhaustive()
    }
}

impl PlannedBatch {
    pub(crate) fn new(targets: Vec<CallTarget>, calls: &[ToolCall]) -> Self {
        // Parsed now: a runtime that plans looks at the arguments of every call.
        Self { calls: calls.to_vec(), items: plan_items(targets, calls, false) }
    }

    /// Number of calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether there are no calls.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The call at `index`, as the model made it.
    pub fn call(&self, index: usize) -> &ToolCall {
        &self.calls[index]
    }

    fn ready(&self, index: usize) -> Option<&ReadyCall> {
        match &self.items[index].prepared {
            Prepared::Ready(r) => Some(r),
            Prepared::Done(..) => None,
        }
    }

    /// The registered name the call resolved to; `None` when it will not run (unknown
    /// tool, bad arguments, or [`settle`](Self::settle)d).
    pub fn tool(&self, index: usize) -> Option<&str> {
        self.ready(index).map(|r| &**r.tool.name())
    }

    /// The tool's replay policy, when the call will run.
    pub fn replay_policy(&self, index: usize) -> Option<ReplayPolicy> {
        self.ready(index).map(|r| r.tool.definition().replay_policy)
    }

    /// The tool's own permission (`None` when omitted, so the manager decides), when the
    /// call will run.
    pub fn permission(&self, index: usize) -> Option<PermissionLevel> {
        self.ready(index).and_then(|r| r.tool.definition().permission)
    }

    /// The validated arguments, when the call will run.
    pub fn arguments(&self, index: usize) -> Option<&Value> {
        self.ready(index).and_then(|r| r.args.as_deref())
    }

    /// Whether the call runs alongside others (`false`: it takes its turn in call order).
    pub fn is_concurrent(&self, index: usize) -> bool {
        self.ready(index).is_some_and(|r| r.serial.is_none())
    }

    /// The result a call already has: the error for an unknown tool or bad arguments,
    /// or what [`settle`](Self::settle) gave it. `None` for a call that will run.
    pub fn result(&self, index: usize) -> Option<&ToolResult> {
        match &self.items[index].prepared {
            Prepared::Done(r, ..) => Some(r),
            Prepared::Ready(_) => None,
        }
    }

    /// Gives the call a result: it will not run, and `run_planned` returns this (as not
    /// run, not timed out). For results replayed from a journal, and for refusals.
    pub fn settle(&mut self, index: usize, result: ToolResult) {
        let tool = self.items[index].prepared.tool_name().map(Arc::from);
        self.items[index].prepared = Prepared::Done(result, None, tool);
    }

    /// Like [`settle`](Self::settle), for a result replayed from a journal: the call's
    /// `execute_tool` span says so (`harnessx.replayed = true`).
    pub fn settle_replayed(&mut self, index: usize, result: ToolResult) {
        self.settle(index, result);
        self.items[index].replayed = true;
    }

    /// Marks the call's permission as already granted: `run_planned` will not ask the
    /// manager again. For a runtime that authorized it itself (and recorded that).
    pub fn authorize(&mut self, index: usize) {
        self.items[index].authorized = true;
    }

    /// A person approved the call with edited `arguments`: they replace the model's
    /// (validated against the tool's schema again), and the result will start with a
    /// note that the user changed them. The error is the text the model should get; the
    /// call is then settled with it. (Check the rules on them too:
    /// [`PermissionManager::recheck_edited`](crate::PermissionManager::recheck_edited).)
    pub fn edit(&mut self, index: usize, arguments: Value) -> Result<(), String> {
        let Prepared::Ready(ready) = &mut self.items[index].prepared else {
            return Err("the call does not run".to_owned());
        };
        if let Err(message) = ready.edit(arguments) {
            let result = ToolResult::error(&self.calls[index].id, &**ready.tool.name(), message.clone());
            self.settle(index, result);
            return Err(message);
        }
        Ok(())
    }

    /// Whether a person edited the call's arguments ([`edit`](Self::edit)).
    pub fn is_edited(&self, index: usize) -> bool {
        self.ready(index).is_some_and(|r| r.edited)
    }

    /// The order the calls that will run start in (see [`Schedule`]).
    pub fn schedule(&self) -> Schedule {
        Schedule::new((0..self.len()).map(|i| match self.ready(i) {
            None => Slot::Settled,
            Some(r) if r.serial.is_none() => Slot::Concurrent,
            Some(_) => Slot::Serial,
        }))
    }

    /// Sets the key the handler sees as
    /// [`ToolContext::idempotency_key`](crate::tool::handler::ToolContext::idempotency_key).
    pub fn set_idempotency_key(&mut self, index: usize, key: impl Into<Arc<str>>) {
        self.items[index].idempotency_key = Some(key.into());
    }
}

/// How one call of a batch takes part in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// It has a result and does not run.
    Settled,
    /// It runs alongside the others.
    Concurrent,
    /// It runs one at a time, in call order, alongside the concurrent ones.
    Serial,
}

/// The scheduling rule of a batch, written once for every way of running calls (the
/// engine's handlers here, a Restate workflow's fanned-out invocations): every
/// concurrent call starts at once, and so does the first serial one; each serial call
/// starts when the one before it finishes. Results return in call order whatever order
/// they finish in (the caller's job).
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    first: Vec<usize>,
    serial: std::collections::VecDeque<usize>,
    slots: Vec<Slot>,
}

impl Schedule {
    /// The schedule of a batch whose calls have these slots, in call order.
    pub fn new(slots: impl IntoIterator<Item = Slot>) -> Self {
        let slots: Vec<Slot> = slots.into_iter().collect();
        let mut first = Vec::new();
        let mut serial = std::collections::VecDeque::new();
        for (i, slot) in slots.iter().enumerate() {
            match slot {
                Slot::Concurrent => first.push(i),
                Slot::Serial => serial.push_back(i),
                Slot::Settled => {}
            }
        }
        if let Some(head) = serial.pop_front() {
            first.push(head);
        }
        Self { first, serial, slots }
    }

    /// The calls to start now: every concurrent call, then the first serial one.
    pub fn start(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.first)
    }

    /// Call `index` finished: the serial call to start next, if `index` was serial.
    pub fn finished(&mut self, index: usize) -> Option<usize> {
        match self.slots.get(index) {
            Some(Slot::Serial) => self.serial.pop_front(),
            _ => None,
        }
    }
}

/// What `run_planned` reports for one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallOutcome {
    /// The result, as the model will see it.
    pub result: ToolResult,
    /// Whether its last attempt timed out (the handler may have partly run).
    pub timed_out: bool,
    /// Whether its handler ran (`false` for refusals, settled calls and calls answered by
    /// an identical earlier one).
    pub ran: bool,
}

/// Called with a call's index when its handler is about to run for the first time
/// (after its serial turn, after permission).
pub type StartHook = Arc<dyn Fn(usize) + Send + Sync>;
/// Called with a call's index and outcome as it finishes, in completion order.
pub type EndHook = Arc<dyn Fn(usize, &CallOutcome) + Send + Sync>;

/// Options of [`ToolRegistry::run_planned`](crate::ToolRegistry::run_planned).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RunHooks {
    /// See [`StartHook`]. Runs inline: a durable runtime commits the call's start here,
    /// before the handler runs.
    pub on_start: Option<StartHook>,
    /// See [`EndHook`]. Runs inline.
    pub on_end: Option<EndHook>,
    /// Retry a `safe` or `idempotent` call that timed out, under its `ToolRetry` (a
    /// durable runtime does; a direct run answers the timeout to the model).
    pub retry_timeouts: bool,
}

impl std::fmt::Debug for RunHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHooks")
            .field("on_start", &self.on_start.is_some())
            .field("on_end", &self.on_end.is_some())
            .field("retry_timeouts", &self.retry_timeouts)
            .finish()
    }
}

impl RunHooks {
    /// No hooks, timeouts answered (what a direct run uses).
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `hook` before each handler first runs.
    pub fn on_start(mut self, hook: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.on_start = Some(Arc::new(hook));
        self
    }

    /// Calls `hook` as each call finishes.
    pub fn on_end(mut self, hook: impl Fn(usize, &CallOutcome) + Send + Sync + 'static) -> Self {
        self.on_end = Some(Arc::new(hook));
        self
    }

    /// Retries timeouts of `safe`/`idempotent` calls.
    pub fn retry_timeouts(mut self, yes: bool) -> Self {
        self.retry_timeouts = yes;
        self
    }
}

/// Runs a planned batch: concurrent tools together, the others one at a time in call
/// order alongside them; outcomes in call order.
pub(crate) async fn run_planned(batch: PlannedBatch, ctx: &RunContext, hooks: &RunHooks) -> Vec<CallOutcome> {
    let PlannedBatch { calls, items } = batch;
    run_items(&calls, items, ctx, hooks).await
}

/// Answers a call that does not run (refused by a check, or settled): its span, its end
/// event and hook.
fn settled(
    index: usize,
    call: &ToolCall,
    result: ToolResult,
    error: Option<ErrorType>,
    replayed: bool,
    ctx: &RunContext,
    hooks: &RunHooks,
) -> CallOutcome {
    // The result names the tool the call resolved to, or the name as written.
    let span = span::tool_span(call, Some(&result.name), replayed);
    span::record_result(&span, &result, error);
    let outcome = CallOutcome { result, timed_out: false, ran: false };
    finish(index, &outcome, ctx, hooks);
    outcome
}

/// The calls of a batch (`items[i]` planned from `calls[i]`), run by the batch rules.
async fn run_items(
    calls: &[ToolCall],
    items: Vec<PlanItem>,
    ctx: &RunContext,
    hooks: &RunHooks,
) -> Vec<CallOutcome> {
    for (index, (call, item)) in calls.iter().zip(&items).enumerate() {
        ctx.emit(ToolEvent::CallStart { index, call, tool: item.prepared.tool_name() });
    }
    // Each call's outcome is written into its place here, by its run.
    let mut outcomes: Vec<Option<CallOutcome>> = (0..calls.len()).map(|_| None).collect();
    let mut concurrent = Vec::with_capacity(calls.len());
    // Serial calls by index (taken as their turn comes), and the schedule's slots.
    // (Both stay empty, allocating nothing, for a batch without serial calls.)
    let mut serial: Vec<Option<(Run, ReadyCall, &mut Option<CallOutcome>)>> = Vec::new();
    let mut slots: Vec<Slot> = Vec::new();
    for ((index, item), out) in items.into_iter().enumerate().zip(&mut outcomes) {
        let PlanItem { prepared, authorized, idempotency_key, replayed } = item;
        // Each call's span is a child of the caller's span (current here and in
        // `serial_run`), and its future runs inside it (`instrument`), so concurrent
        // calls nest right. A serial call's span starts when its turn comes.
        match prepared {
            Prepared::Done(result, error, _) => {
                *out = Some(settled(index, &calls[index], result, error, replayed, ctx, hooks));
            }
            Prepared::Ready(ready) => {
                let run = Run { index, authorized, key: idempotency_key };
                if ready.serial.is_none() {
                    let span = span::tool_span(&calls[index], Some(ready.tool.name()), false);
                    concurrent.push(run_indexed(run, ready, &calls[index], ctx, hooks, out).instrument(span));
                } else {
                    serial.resize_with(calls.len(), || None);
                    slots.resize(calls.len(), Slot::Settled);
                    slots[index] = Slot::Serial;
                    serial[index] = Some((run, ready, out));
                }
            }
        }
    }
    // Serial calls one at a time, each after the one before it finished ([`Schedule`]).
    // (Only serial slots are marked here: the concurrent calls are already under way.)
    let mut schedule = Schedule::new(slots);
    let serial_run = async {
        let mut next = schedule.start().first().copied();
        while let Some(index) = next {
            let Some((run, ready, out)) = serial.get_mut(index).and_then(Option::take) else { break };
            let span = span::tool_span(&calls[index], Some(ready.tool.name()), false);
            run_indexed(run, ready, &calls[index], ctx, hooks, out).instrument(span).await;
            next = schedule.finished(index);
        }
    };
    join(join_all(concurrent), serial_run).await;
    outcomes.into_iter().map(|o| o.expect("every call of a batch produces an outcome")).collect()
}

/// How one ready call runs.
struct Run {
    index: usize,
    authorized: bool,
    key: Option<Arc<str>>,
}

fn finish(index: usize, outcome: &CallOutcome, ctx: &RunContext, hooks: &RunHooks) {
    ctx.emit(ToolEvent::CallEnd { index, result: &outcome.result });
    if let Some(hook) = &hooks.on_end {
        hook(index, outcome);
    }
}

/// One ready call of a batch, start to end: permission, the edited arguments' note,
/// dedupe or the attempts ([`invoke`]), its span's result, the end event and hook.
///
/// One state machine for all of it, keeping little across its awaits: every stage that
/// was an `async fn` of its own added a layer that each call's future was copied
/// through. (A plain function returning an `async move` block, not an `async fn`: an
/// `async fn` keeps its arguments twice in its future, as captured and as locals.)
#[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice in its future")]
fn run_indexed<'a>(
    run: Run,
    mut ready: ReadyCall,
    call: &'a ToolCall,
    ctx: &'a RunContext,
    hooks: &'a RunHooks,
    out: &'a mut Option<CallOutcome>,
) -> impl Future<Output = ()> + 'a {
    async move {
        let index = run.index;
        // (Nothing big is held in a local across an await below: a local's room in the
        // future is kept from its declaration to the end of its scope.)
        if !run.authorized {
            // Arguments still in their text are decided by name when the authorizer can.
            let by_name = match ready.args {
                None => authorize_by_name(ctx, ready.tool.name(), ready.tool.definition().permission),
                Some(_) => None,
            };
            let decided = match by_name {
                Some(decided) => decided,
                None => {
                    let (tool, arguments) = ready.with_value(call);
                    let permission = tool.definition().permission;
                    let request = AuthRequest { tool: tool.name(), permission, call_id: &call.id, arguments };
                    // Most calls are decided now (an ALLOW by the rules): no future to wait on.
                    match authorize(ctx, request) {
                        Decision::Now(decided) => decided,
                        Decision::Later(later) => later.await,
                    }
                }
            };
            if let Some((outcome, error)) = refusal(decided, &mut ready, call, ctx) {
                return ended(index, out.insert(outcome), error, ctx, hooks);
            }
        }
        let note = match &ready.args {
            Some(args) if ready.edited => Some(edited_note(args)),
            _ => None,
        };
        let (Invoked { mut answer, timed_out, error }, ran) = if ready.policy.dedupe_calls {
            // Boxed: the common path (no dedupe) keeps a small future.
            Box::pin(run_deduplicated(&mut ready, call, &run, hooks, ctx)).await
        } else {
            (invoke(&mut ready, call, &run, hooks, ctx.result_dir()).await, true)
        };
        if let Some(note) = note {
            answer.output.content.insert_str(0, &note);
        }
        // (Made in its place: a result is too big to be handed on for free.)
        let result = answer.into_result(&call.id, ready.tool.name());
        ended(index, out.insert(CallOutcome { result, timed_out, ran }), error, ctx, hooks)
    }
}

/// A call that ran or was refused, its outcome in its place: its span's result, the end
/// event and hook.
fn ended(index: usize, outcome: &CallOutcome, error: Option<ErrorType>, ctx: &RunContext, hooks: &RunHooks) {
    span::record_result(&Span::current(), &outcome.result, error);
    finish(index, outcome, ctx, hooks);
}

/// What running a handler gave: its answer, whether its last attempt timed out, and
/// why it is an error (for the span). Shared by identical calls when deduplicating.
#[derive(Clone)]
pub(crate) struct Invoked {
    answer: Answer,
    timed_out: bool,
    error: Option<ErrorType>,
}

/// A call's answer as its handler gave it (or the engine, for a timeout or a panic): its
/// output and whether it is an error, a [`ToolResult`] without the call's id and the
/// tool's name, which are added as the call ends. What goes from stage to stage is kept this small on purpose: a value over 128
/// bytes is copied by a call to `memcpy` each time it is handed on, and a whole result
/// was handed on about twenty times a call.
#[derive(Clone)]
struct Answer {
    output: ToolOutput,
    is_error: bool,
}

impl Answer {
    fn success(output: ToolOutput) -> Self {
        Self { output, is_error: false }
    }

    fn error(message: impl Into<String>) -> Self {
        Self { output: ToolOutput::text(message), is_error: true }
    }

    #[inline]
    fn into_result(self, call_id: &str, name: &str) -> ToolResult {
        let Self { output: ToolOutput { content, structured_content }, is_error } = self;
        ToolResult {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            content,
            is_error,
            structured_content,
        }
    }
}

/// The permission decision made: `None` to run the call (with a person's edited
/// arguments, checked again, when they gave some), else the refusal.
fn refusal(
    mut decided: Authorization,
    ready: &mut ReadyCall,
    call: &ToolCall,
    ctx: &RunContext,
) -> Option<(CallOutcome, Option<ErrorType>)> {
    if let Authorization::AllowEdited { arguments } = decided {
        decided = match ready.edit(arguments) {
            Err(message) => Authorization::Deny { reason: DenyReason::Rejected, message: message.into() },
            Ok(()) => match ctx.permissions() {
                Some(manager) => {
                    let (tool, arguments) = ready.with_value(call);
                    manager.recheck_edited(tool.name(), tool.definition().permission, arguments)
                }
                None => Authorization::Allow,
            },
        };
    }
    let (reason, message) = match decided {
        Authorization::Allow => return None,
        Authorization::Deny { reason, message } => (reason, message),
        // Nobody here to put the question to.
        _ => (DenyReason::NoApprover, PERMISSION_DENIED.into()),
    };
    let name = ready.tool.name();
    tracing::info!(tool = &**name, call_id = %call.id, ?reason, "tool call denied");
    let result = ToolResult::error(&call.id, &**name, message);
    Some((CallOutcome { result, timed_out: false, ran: false }, Some(ErrorType::PermissionDenied)))
}

/// A call of a tool that deduplicates: the first of identical calls in the run runs, the
/// others share its result (with their own call id).
async fn run_deduplicated(
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
        invoke(ready, call, run, hooks, ctx.result_dir())
    });
    let invoked = shared.await.clone();
    if !first_here {
        span::record_deduplicated(&Span::current());
    }
    (invoked, first_here)
}

/// The authorisation stage by name alone ([`ask_by_name`]): `None` when the authorizer
/// needs the arguments. A panic denies the call.
fn authorize_by_name(
    ctx: &RunContext,
    tool: &str,
    permission: Option<PermissionLevel>,
) -> Option<Authorization> {
    crate::permission::ask_by_name(ctx.authorizer(), tool, permission)
}

/// The authorisation stage: the context's [`Authorizer`](crate::permission::Authorizer),
/// asked through [`ask`](crate::permission::ask), which fails closed.
fn authorize<'a>(ctx: &'a RunContext, request: AuthRequest<'a>) -> Decision<'a> {
    crate::permission::ask(ctx.authorizer(), request)
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
async fn invoke(
    ready: &mut ReadyCall,
    call: &ToolCall,
    run: &Run,
    hooks: &RunHooks,
    result_dir: Option<&ResultDir>,
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
            let info = CallInfo::new(call_id, name, run.key.as_ref());
            let def = ready.tool.definition();
            let outcome = run_once(&def.handler, name, args, info, timeout_of(ready)).await;
            if last || !retry_wanted(ready, &outcome, hooks) {
                let mut invoked = conclude(ready, outcome, attempt);
                if !invoked.timed_out {
                    // The central cap, after the tool's own limits: every tool's result alike.
                    let ToolOutput { content, structured_content } = &mut invoked.answer.output;
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
        Outcome::Done(Err(e)) => (Answer::error(e.message()), failed),
        Outcome::TimedOut => {
            let mut text = timeout_message(name, timeout_seconds(ready));
            if attempt > 1 {
                text.push_str(&format!(" (timed out {attempt} attempts)"));
            }
            return Invoked { answer: Answer::error(text), timed_out: true, error: Some(ErrorType::Timeout) };
        }
        Outcome::Panicked => (
            Answer::error(format!(
                "tool {name} failed with an internal error; the details were logged for the operator"
            )),
            Some(ErrorType::Panic),
        ),
    };
    Invoked { answer, timed_out: false, error }
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
                None => h.call(parse_checked(text), info.to_context()),
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
                        None => h.call(parse_checked(&text), &ctx),
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
    use super::*;

    #[test]
    fn empty_and_null_arguments_are_an_empty_object() {
        for raw in ["", "  ", "null", " null "] {
            assert_eq!(parse_arguments("t", raw, 0).unwrap(), serde_json::json!({}));
        }
    }

    #[test]
    fn cut_off_arguments_carry_the_parse_error() {
        let err =
            parse_arguments("write_file", r#"{"path": "a.txt", "content": "line one\nli"#, 2).unwrap_err();
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
        let err = parse_arguments("t", "[1,2]", 0).unwrap_err();
        assert!(err.contains("expected a JSON object, got an array"), "{err}");
        assert!(parse_arguments("t", "\"{}\"", 0).unwrap_err().contains("got a string"));
    }
}

#[cfg(test)]
mod future_sizes {
    use super::*;
    use crate::{ToolHandler, ToolOptions, ToolRegistry};

    /// Every call's future is moved whole into whatever awaits it (a batch's `join_all`,
    /// the agent loop), so its size is paid on every call. These bounds hold with room
    /// to spare on the pinned toolchain; a change that crosses one has put something big
    /// in a stage's future (see the comments on `run_indexed` and `invoke`).
    #[test]
    fn a_calls_future_stays_small() {
        let registry = ToolRegistry::new();
        let handler = ToolHandler::from_async(|_, _| async { Ok("x".into()) });
        registry
            .register_with_schema(
                "t",
                "d",
                serde_json::json!({"type": "object"}),
                handler,
                ToolOptions::new(),
            )
            .unwrap();
        let call = ToolCall::new("1", "t", "{}");
        let ctx = RunContext::new();
        let size = std::mem::size_of_val(&registry.execute_in(&call, &ctx));
        assert!(size <= 1_100, "ToolRegistry::execute_in's future is {size} bytes");
        let Prepared::Ready(mut ready) = prepare(registry.read().target("t"), &call, true) else {
            unreachable!()
        };
        let run = Run { index: 0, authorized: false, key: None };
        let size = std::mem::size_of_val(&invoke(&mut ready, &call, &run, &NO_HOOKS, None));
        assert!(size <= 320, "invoke's future is {size} bytes");
        let mut out = None;
        let size = std::mem::size_of_val(&run_indexed(run, ready, &call, &ctx, &NO_HOOKS, &mut out));
        assert!(size <= 600, "run_indexed's future is {size} bytes");
    }
}
