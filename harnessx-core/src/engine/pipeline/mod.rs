//! The one pipeline every call goes through, and batch scheduling.
//!
//! resolve name -> parse arguments -> validate ([`prepare`]) -> permission
//! ([`authorize`]) -> dedupe -> (serial turn, [`schedule`]) -> run with timeout -> retry
//! ([`attempt`]). Every failure becomes an error [`ToolResult`]. A runtime that records
//! its steps plans a batch first ([`plan`]), settles what it knows, and runs the rest.
//!
//! A call of a tool with a flat input schema (an object of scalar arguments) whose handler
//! decodes text ([`AsyncToolHandler::call_json`](crate::AsyncToolHandler::call_json)) is
//! checked straight from its text and not parsed into a value unless a stage asks for
//! one (a rule on arguments, a question to a person, dedupe); anything the flat check is
//! unsure of takes the general path, so each call ends as it would there.

mod attempt;
mod authorize;
mod plan;
mod prepare;
mod schedule;

use std::future::Future;
use std::sync::Arc;

use futures_util::future::{join, join_all};
use tracing::{Instrument, Span};

use crate::engine::context::RunContext;
use crate::engine::events::ToolEvent;
use crate::engine::span::{self, ErrorType};
use crate::hooks::ToolHooks;
use crate::tool::call::{ToolCall, ToolResult};

pub(crate) use attempt::Invoked;
use attempt::{invoke, run_deduplicated};
use authorize::{Gate, Refusal, act, ask_call, hooked_gate, post_hooks};
pub use plan::{Authorized, Permit, PlannedBatch, PlannedCall, Question};
use plan::{PlanItem, plan_items};
pub(crate) use prepare::{CallTarget, edited_note};
use prepare::{Prepared, ReadyCall, prepare};
pub use schedule::{Schedule, Slot};

pub use crate::permission::PERMISSION_DENIED;

/// No hooks, timeouts answered: what a direct call or batch runs with (when its registry
/// has no hooks).
static NO_HOOKS: RunHooks = RunHooks { on_start: None, on_end: None, retry_timeouts: false, registry: None };

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
    registry: Option<Arc<RunHooks>>,
) -> impl Future<Output = ToolResult> + 'a {
    async move {
        let hooks = registry.as_deref().unwrap_or(&NO_HOOKS);
        // The ready call is taken out of the match before the await: a match around the
        // await would keep the whole `Prepared` (a `ToolResult` wide) in this future.
        let ready = match prepare(target, call, true) {
            Prepared::Done(result, error, tool) => {
                ctx.emit(ToolEvent::CallStart { index: 0, call, tool: tool.as_deref() });
                return settled(0, call, result, error, false, ctx, hooks).result;
            }
            Prepared::Ready(ready) => ready,
        };
        ctx.emit(ToolEvent::CallStart { index: 0, call, tool: Some(ready.tool.name()) });
        let run = Run { index: 0, authorized: false, key: None, answer: None, pausable: false };
        let span = span::tool_span(call, Some(ready.tool.name()), false);
        let mut out = None;
        run_indexed(run, ready, call, ctx, hooks, &mut out).instrument(span).await;
        out.expect("a call's run leaves its outcome").result
    }
}

/// Runs the calls of one model turn (`targets[i]` is the target of `calls[i]`), with
/// the registry's hooks, if it has any.
pub(crate) async fn execute_batch(
    targets: Vec<CallTarget>,
    calls: &[ToolCall],
    ctx: &RunContext,
    registry: Option<&RunHooks>,
) -> Vec<ToolResult> {
    let items = plan_items(targets, calls, true);
    run_items(calls, items, ctx, registry.unwrap_or(&NO_HOOKS)).await.into_iter().map(|o| o.result).collect()
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
    /// Set when the handler [paused](crate::ToolError::Paused) for a person: the result
    /// then carries the pause's reason as an error, which a durable run does not record.
    pub paused: Option<Box<crate::error::Pause>>,
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
    /// The registry's hooks ([`ToolRegistry::set_hooks`](crate::ToolRegistry::set_hooks)),
    /// for the calls of its direct entry points whose context has none of its own.
    pub(crate) registry: Option<ToolHooks>,
}

impl std::fmt::Debug for RunHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHooks")
            .field("on_start", &self.on_start.is_some())
            .field("on_end", &self.on_end.is_some())
            .field("retry_timeouts", &self.retry_timeouts)
            .field("registry", &self.registry)
            .finish()
    }
}

impl RunHooks {
    /// No hooks, timeouts answered (what a direct run uses).
    pub fn new() -> Self {
        Self::default()
    }

    /// What a registry's direct calls run with: its hooks, timeouts answered.
    pub(crate) fn of_registry(hooks: ToolHooks) -> Self {
        Self { registry: Some(hooks), ..Self::default() }
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
    let outcome = CallOutcome { result, timed_out: false, ran: false, paused: None };
    match replayed {
        // Its end hook still sees it (the batch's outcome is whole); no event says it ran.
        true => end_hook(index, &outcome, hooks),
        false => finish(index, &outcome, ctx, hooks),
    }
    outcome
}

/// The calls of a batch (`items[i]` planned from `calls[i]`), run by the batch rules.
async fn run_items(
    calls: &[ToolCall],
    items: Vec<PlanItem>,
    ctx: &RunContext,
    hooks: &RunHooks,
) -> Vec<CallOutcome> {
    // A call replayed from a journal sends no events: it does not run now.
    for (index, (call, item)) in calls.iter().zip(&items).enumerate().filter(|(_, (_, item))| !item.replayed)
    {
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
        let PlanItem { prepared, authorized, idempotency_key, answer, replayed, .. } = item;
        // Each call's span is a child of the caller's span (current here and in
        // `serial_run`), and its future runs inside it (`instrument`), so concurrent
        // calls nest right. A serial call's span starts when its turn comes.
        match prepared {
            Prepared::Done(result, error, _) => {
                *out = Some(settled(index, &calls[index], result, error, replayed, ctx, hooks));
            }
            Prepared::Ready(ready) => {
                let pausable = ctx.run_id().is_some();
                let run = Run { index, authorized, key: idempotency_key, answer, pausable };
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
pub(super) struct Run {
    pub(super) index: usize,
    authorized: bool,
    pub(super) key: Option<Arc<str>>,
    pub(super) answer: Option<Arc<serde_json::Value>>,
    /// Whether its handler may pause for a person (a journaled durable run's call).
    pub(super) pausable: bool,
}

fn finish(index: usize, outcome: &CallOutcome, ctx: &RunContext, hooks: &RunHooks) {
    ctx.emit(ToolEvent::CallEnd { index, result: &outcome.result });
    end_hook(index, outcome, hooks);
}

fn end_hook(index: usize, outcome: &CallOutcome, hooks: &RunHooks) {
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
        // (Boxed: what a hook answered is rare, and the future keeps room for it.)
        let mut answered: Option<Box<crate::tool::call::ToolOutput>> = None;
        if !run.authorized {
            let refused = match tool_hooks(ctx, hooks) {
                // Most calls are decided now (an ALLOW by the rules): no future to wait on.
                None => {
                    let decided = match ask_call(ctx.authorizer(), &mut ready, call) {
                        crate::permission::Decision::Now(decided) => decided,
                        crate::permission::Decision::Later(later) => later.await,
                    };
                    act(decided, &mut ready, call, ctx.permissions())
                }
                // Boxed: a context without hooks keeps a small future.
                Some(tool_hooks) => match Box::pin(hooked_gate(tool_hooks, &mut ready, call, ctx)).await {
                    Gate::Runs => None,
                    Gate::Refused(refusal) => Some(refusal),
                    Gate::Answered(output) => {
                        answered = Some(Box::new(output));
                        None
                    }
                },
            };
            if let Some(Refusal { result, .. }) = refused {
                let outcome = CallOutcome { result, timed_out: false, ran: false, paused: None };
                return ended(index, out.insert(outcome), Some(ErrorType::PermissionDenied), ctx, hooks);
            }
        }
        let note = match &ready.args {
            Some(args) if ready.edited => Some(edited_note(args)),
            _ => None,
        };
        // The arguments the post hooks see (the last attempt takes the call's own).
        // (Boxed: only a context with hooks pays for them.)
        let seen: Option<Box<serde_json::Value>> = tool_hooks(ctx, hooks).map(|_| ready.value_to_keep(call));
        let (Invoked { mut answer, timed_out, error, paused }, ran) = if let Some(output) = answered {
            // A hook answered it: it does not run.
            (Invoked::answered(*output), false)
        } else if ready.policy.dedupe_calls {
            // Boxed: the common path (no dedupe) keeps a small future.
            Box::pin(run_deduplicated(&mut ready, call, &run, hooks, ctx)).await
        } else {
            (invoke(&mut ready, call, &run, hooks, ctx.result_dir(), ctx.event_sink()).await, true)
        };
        if let (Some(arguments), Some(tool_hooks)) = (seen, tool_hooks(ctx, hooks)) {
            let replaced =
                post_hooks(tool_hooks, ctx, &ready, call, &arguments, &answer.output, answer.is_error);
            if let Some(output) = Box::pin(replaced).await {
                answer.output = output;
            }
        }
        if let Some(note) = note {
            answer.output.content.insert_str(0, &note);
        }
        // (Made in its place: a result is too big to be handed on for free.)
        let result = answer.into_result(&call.id, ready.tool.name());
        ended(index, out.insert(CallOutcome { result, timed_out, ran, paused }), error, ctx, hooks)
    }
}

/// The hooks a call goes through: its context's own, else its registry's (for a direct
/// call, [`ToolRegistry::set_hooks`](crate::ToolRegistry::set_hooks)).
fn tool_hooks<'a>(ctx: &'a RunContext, hooks: &'a RunHooks) -> Option<&'a ToolHooks> {
    ctx.hooks().or(hooks.registry.as_ref())
}

/// A call that ran or was refused, its outcome in its place: its span's result, the end
/// event and hook.
fn ended(index: usize, outcome: &CallOutcome, error: Option<ErrorType>, ctx: &RunContext, hooks: &RunHooks) {
    span::record_result(&Span::current(), &outcome.result, error);
    finish(index, outcome, ctx, hooks);
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
        // 1_088 bytes before media parts, 1_136 with them as a `Vec` each, 1_104 as
        // `Parts` (one word each); 920 since `execute_one` no longer keeps its `Prepared`
        // across the await.
        assert!(size <= 1_100, "ToolRegistry::execute_in's future is {size} bytes");
        let Prepared::Ready(mut ready) = prepare(registry.read().target("t"), &call, true) else {
            unreachable!()
        };
        let run = Run { index: 0, authorized: false, key: None, answer: None, pausable: false };
        let size = std::mem::size_of_val(&invoke(&mut ready, &call, &run, &NO_HOOKS, None, None));
        assert!(size <= 320, "invoke's future is {size} bytes");
        let mut out = None;
        let size = std::mem::size_of_val(&run_indexed(run, ready, &call, &ctx, &NO_HOOKS, &mut out));
        assert!(size <= 600, "run_indexed's future is {size} bytes");
    }
}
