//! A planned batch: the calls of one model turn, checked and not yet run, each behind a
//! handle ([`PlannedCall`]) a runtime that records its steps looks at and decides on
//! before [`run_planned`](super::run_planned) runs what is left.

use std::sync::Arc;

use serde_json::Value;

use super::authorize::{Hooked, Refusal, act, apply_pre, ask_call, ask_pre, with_hooks};
use super::prepare::{CallTarget, Prepared, ReadyCall, prepare};
use super::schedule::{Schedule, Slot};
use crate::hooks::{PreOutcome, ToolHooks};
use crate::permission::{Authorization, Authorizer, PermissionLevel, PermissionManager};
use crate::tool::call::{ToolCall, ToolResult};
use crate::tool::policy::ReplayPolicy;

/// The calls of one model turn, checked (name, arguments, schema) and not yet run: made
/// by [`ToolRegistry::plan_batch`](crate::ToolRegistry::plan_batch), run by
/// [`ToolRegistry::run_planned`](crate::ToolRegistry::run_planned).
///
/// Between the two, a runtime that records each step (the durable one) goes through the
/// calls ([`iter_mut`](Self::iter_mut), [`get_mut`](Self::get_mut)): which tool, its
/// replay policy and permission; it gives calls results it already has, sets idempotency
/// keys, and settles permissions against an [`Authorizer`]
/// ([`authorize`](Self::authorize)). A direct run does not need it: `execute_batch`
/// plans and runs in one go, asking the run's authorizer as each call's turn comes.
pub struct PlannedBatch {
    pub(super) calls: Vec<ToolCall>,
    pub(super) items: Vec<PlanItem>,
}

pub(super) struct PlanItem {
    pub(super) prepared: Prepared,
    pub(super) authorized: bool,
    pub(super) idempotency_key: Option<Arc<str>>,
    /// The person's answer to the question the call paused on (see [`PlannedCall::set_answer`]).
    pub(super) answer: Option<Arc<Value>>,
    /// Settled with a result replayed from a journal (marked on its span).
    pub(super) replayed: bool,
    /// What the pre hooks said that the authorizer's answer is read with (an ALLOW past
    /// an ASK, or an ASK over an ALLOW); `None` when no hook said either. (Boxed: rare,
    /// and every item of every batch would keep room for it.)
    pub(super) hooked: Option<Box<Hooked>>,
}

/// The items of a batch, `calls[i]` prepared against `targets[i]`.
pub(super) fn plan_items(targets: Vec<CallTarget>, calls: &[ToolCall], from_text: bool) -> Vec<PlanItem> {
    targets
        .into_iter()
        .zip(calls)
        .map(|(t, c)| PlanItem {
            prepared: prepare(t, c, from_text),
            authorized: false,
            idempotency_key: None,
            answer: None,
            replayed: false,
            hooked: None,
        })
        .collect()
}

impl std::fmt::Debug for PlannedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedBatch").field("calls", &self.calls).finish_non_exhaustive()
    }
}

impl PlannedBatch {
    pub(crate) fn new(targets: Vec<CallTarget>, calls: &[ToolCall]) -> Self {
        // Checked from their text where the tool's schema is flat, as a direct call's:
        // parsed only when something asks for the value ([`PlannedCall::arguments`]).
        Self { calls: calls.to_vec(), items: plan_items(targets, calls, true) }
    }

    /// Number of calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether there are no calls.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Every call, in call order.
    pub fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = PlannedCall<'_>> {
        self.calls.iter().zip(&mut self.items).enumerate().map(|(position, (call, item))| PlannedCall {
            position,
            call,
            item,
        })
    }

    /// The call with this id (the first, should a model repeat an id).
    pub fn get_mut(&mut self, call_id: &str) -> Option<PlannedCall<'_>> {
        self.iter_mut().find(|c| c.call.id == call_id)
    }

    /// The order the calls that will run start in (see [`Schedule`]), by their
    /// [`position`](PlannedCall::position).
    pub fn schedule(&self) -> Schedule {
        Schedule::new(self.items.iter().map(|item| match &item.prepared {
            Prepared::Done(..) => Slot::Settled,
            Prepared::Ready(r) if r.serial.is_none() => Slot::Concurrent,
            Prepared::Ready(_) => Slot::Serial,
        }))
    }

    /// Settles the permission of every call that will run and is not yet authorized,
    /// against `authorizer`, in call order, each answer awaited before the next call is
    /// asked (so a session grant one answer makes covers the calls after it): see
    /// [`PlannedCall::authorize`]. What it did comes back: the questions nobody answered,
    /// the refusals, the edits.
    pub async fn authorize(
        &mut self,
        authorizer: &dyn Authorizer,
        recheck: Option<&PermissionManager>,
    ) -> Authorized {
        let mut done = Authorized::default();
        for mut call in self.iter_mut() {
            if call.result().is_some() || call.item.authorized {
                continue;
            }
            match call.authorize(authorizer, recheck).await {
                Permit::Asks(question) => done.questions.push(question),
                Permit::Settled => done.refused.extend(call.result().cloned()),
                Permit::Runs => {
                    if let Some(arguments) = call.edited_arguments() {
                        done.edited.push((call.call.id.clone(), arguments.clone()));
                    }
                }
            }
        }
        done
    }
}

/// What [`PlannedBatch::authorize`] did to the calls it asked about.
#[derive(Debug, Default, Clone, PartialEq)]
#[non_exhaustive]
pub struct Authorized {
    /// The calls that wait for a person, in call order.
    pub questions: Vec<Question>,
    /// The error results of the calls it refused, in call order (settled: they do not run).
    pub refused: Vec<ToolResult>,
    /// The calls that run with arguments a person edited: call id and those arguments.
    pub edited: Vec<(String, Value)>,
}

/// A call that waits for a person's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Question {
    /// The call's id.
    pub call_id: String,
    /// The tool the call resolved to.
    pub tool: String,
    /// What the person is asked, in a sentence.
    pub question: String,
}

/// Where a call stands after its permission was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Permit {
    /// It runs (with a person's edited arguments, if they gave some).
    Runs,
    /// It has a result and does not run: refused, or settled before it was asked.
    Settled,
    /// It waits for a person.
    Asks(Question),
}

/// One call of a [`PlannedBatch`]: settled (it has a result and does not run) or ready
/// (it runs, once authorized).
pub struct PlannedCall<'a> {
    position: usize,
    call: &'a ToolCall,
    item: &'a mut PlanItem,
}

impl std::fmt::Debug for PlannedCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlannedCall")
            .field("position", &self.position)
            .field("call", self.call)
            .field("tool", &self.tool())
            .field("settled", &self.result().is_some())
            .finish_non_exhaustive()
    }
}

impl PlannedCall<'_> {
    /// Its place in the batch (0 for the first call): the index
    /// [`run_planned`](crate::ToolRegistry::run_planned)'s outcomes, its hooks and the
    /// [`Schedule`] use.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The call, as the model made it.
    pub fn call(&self) -> &ToolCall {
        self.call
    }

    fn ready(&self) -> Option<&ReadyCall> {
        match &self.item.prepared {
            Prepared::Ready(r) => Some(r),
            Prepared::Done(..) => None,
        }
    }

    /// The registered name the call resolved to; `None` when it will not run (unknown
    /// tool, bad arguments, or [`settle`](Self::settle)d).
    pub fn tool(&self) -> Option<&str> {
        self.ready().map(|r| &**r.tool.name())
    }

    /// The tool's replay policy, when the call will run.
    pub fn replay_policy(&self) -> Option<ReplayPolicy> {
        self.ready().map(|r| r.tool.definition().replay_policy)
    }

    /// The tool's own permission (`None` when omitted, so the manager decides), when the
    /// call will run.
    pub fn permission(&self) -> Option<PermissionLevel> {
        self.ready().and_then(|r| r.tool.definition().permission)
    }

    /// The validated arguments, when the call will run. Arguments checked straight from
    /// their text (a flat schema) are parsed here, once, hence `&mut`.
    pub fn arguments(&mut self) -> Option<&Value> {
        match &mut self.item.prepared {
            Prepared::Ready(ready) => Some(ready.with_value(self.call).1),
            Prepared::Done(..) => None,
        }
    }

    /// The tool the call resolved to and its validated arguments (parsed here, once, if
    /// they were only checked as text), when the call will run: what a hook is shown.
    pub fn tool_and_arguments(&mut self) -> Option<(&str, &Value)> {
        match &mut self.item.prepared {
            Prepared::Ready(ready) => {
                let (tool, arguments) = ready.with_value(self.call);
                Some((tool.name(), arguments))
            }
            Prepared::Done(..) => None,
        }
    }

    /// Whether the call runs alongside others (`false`: it takes its turn in call order).
    pub fn is_concurrent(&self) -> bool {
        self.ready().is_some_and(|r| r.serial.is_none())
    }

    /// The result a call already has: the error for an unknown tool or bad arguments,
    /// or what [`settle`](Self::settle) gave it. `None` for a call that will run.
    pub fn result(&self) -> Option<&ToolResult> {
        match &self.item.prepared {
            Prepared::Done(r, ..) => Some(r),
            Prepared::Ready(_) => None,
        }
    }

    /// Whether its permission is settled: it runs without the authorizer being asked.
    pub fn is_authorized(&self) -> bool {
        self.item.authorized && self.ready().is_some()
    }

    /// Whether a person edited the call's arguments ([`edit`](Self::edit)).
    pub fn is_edited(&self) -> bool {
        self.ready().is_some_and(|r| r.edited)
    }

    /// The arguments a person edited, when they did.
    pub fn edited_arguments(&self) -> Option<&Value> {
        self.ready().filter(|r| r.edited).and_then(|r| r.args.as_deref())
    }

    /// The arguments a hook rewrote the call to run with, when one did (and no person
    /// edited them after).
    pub fn rewritten_arguments(&self) -> Option<&Value> {
        self.ready().filter(|r| r.rewritten && !r.edited).and_then(|r| r.args.as_deref())
    }

    /// Gives the call a result: it will not run, and `run_planned` returns this (as not
    /// run, not timed out). For results replayed from a journal, and for refusals.
    pub fn settle(&mut self, result: ToolResult) {
        let tool = self.item.prepared.tool_name().map(Arc::from);
        self.item.prepared = Prepared::Done(result, None, tool);
    }

    /// Like [`settle`](Self::settle), for a result replayed from a journal: the call's
    /// `execute_tool` span says so (`harnessx.replayed = true`).
    pub fn settle_replayed(&mut self, result: ToolResult) {
        self.settle(result);
        self.item.replayed = true;
    }

    /// Sets the key the handler sees as
    /// [`ToolContext::idempotency_key`](crate::tool::handler::ToolContext::idempotency_key).
    pub fn set_idempotency_key(&mut self, key: impl Into<Arc<str>>) {
        self.item.idempotency_key = Some(key.into());
    }

    /// Sets the answer the handler sees as
    /// [`ToolContext::answer`](crate::tool::handler::ToolContext::answer): a person's
    /// answer to the question the call [paused](crate::ToolError::Paused) on before.
    pub fn set_answer(&mut self, answer: Value) {
        self.item.answer = Some(Arc::new(answer));
    }

    /// A person approved the call with edited `arguments`: they replace the model's
    /// (validated against the tool's schema again), and the result will start with a
    /// note that the user changed them. The error is the text the model should get; the
    /// call is then settled with it. (The deny rules on them are checked by
    /// [`decide`](Self::decide), which calls this.)
    pub fn edit(&mut self, arguments: Value) -> Result<(), String> {
        let Prepared::Ready(ready) = &mut self.item.prepared else {
            return Err("the call does not run".to_owned());
        };
        if let Err(message) = ready.edit(arguments) {
            let result = ToolResult::error(&self.call.id, &**ready.tool.name(), message.clone());
            self.settle(result);
            return Err(message);
        }
        Ok(())
    }

    /// Marks the call's permission as settled without asking anyone: `run_planned` runs
    /// it. For a runtime that authorized it itself (and recorded that), or one whose
    /// caller did.
    pub fn authorize_unasked(&mut self) {
        self.item.authorized = true;
    }

    /// Puts the call to `authorizer` (failing closed, as
    /// [`permission::ask`](crate::permission::ask)) and acts on the answer
    /// ([`decide`](Self::decide)); a WAIT comes back as the [`Question`], the call
    /// still unsettled. A call already settled or authorized is left as it is.
    pub async fn authorize(
        &mut self,
        authorizer: &dyn Authorizer,
        recheck: Option<&PermissionManager>,
    ) -> Permit {
        if self.item.authorized {
            return if self.ready().is_some() { Permit::Runs } else { Permit::Settled };
        }
        let Prepared::Ready(ready) = &mut self.item.prepared else { return Permit::Settled };
        let mut decided = ask_call(authorizer, ready, self.call).resolve().await;
        if let Some(hooked) = &self.item.hooked {
            decided = with_hooks(hooked, decided);
        }
        if let Authorization::Wait { question } = decided {
            let tool = ready.tool.name().to_string();
            return Permit::Asks(Question { call_id: self.call.id.clone(), tool, question });
        }
        self.decide(decided, recheck)
    }

    /// What the pre hooks decide about the call (`None` for a settled call), not yet
    /// applied: a runtime that records each step records it, then applies it with
    /// [`apply_hooks`](Self::apply_hooks) (and on a resume applies the recorded one
    /// without asking the hooks again).
    /// `usage` is what the run used so far, as the hooks see it.
    pub async fn ask_hooks(
        &mut self,
        hooks: &ToolHooks,
        run_id: Option<&str>,
        usage: crate::hooks::RunUsage,
    ) -> Option<PreOutcome> {
        let Prepared::Ready(ready) = &mut self.item.prepared else { return None };
        Some(ask_pre(hooks, ready, self.call, run_id, usage).await)
    }

    /// Applies what the pre hooks decided: rewritten arguments replace the model's once
    /// they pass the schema (the rules are checked on them by
    /// [`authorize`](Self::authorize)); a DENY settles the call with the hook's message;
    /// an ANSWER settles it with the hook's result (it does not run); an ALLOW or an ASK
    /// is kept for [`authorize`](Self::authorize), where a DENY of the rules still wins.
    pub fn apply_hooks(&mut self, outcome: PreOutcome) -> Permit {
        let Prepared::Ready(ready) = &mut self.item.prepared else { return Permit::Settled };
        match apply_pre(outcome, ready, self.call) {
            Hooked::Refused(Refusal { result, .. }) => {
                self.settle(result);
                Permit::Settled
            }
            Hooked::Answered(output) => {
                let name = ready.tool.name().to_string();
                let result = ToolResult::success(&self.call.id, name, output);
                self.settle(result);
                Permit::Settled
            }
            Hooked::Continue => Permit::Runs,
            hooked => {
                self.item.hooked = Some(Box::new(hooked));
                Permit::Runs
            }
        }
    }

    /// Acts on a decision about the call: ALLOW authorizes it; arguments a person
    /// edited replace the model's once they pass the tool's schema and `recheck`'s deny
    /// rules ([`PermissionManager::recheck_edited`]), else the call is refused with why;
    /// a DENY settles it with its message; a WAIT (nobody could answer) settles it with
    /// [`PERMISSION_DENIED`](crate::PERMISSION_DENIED). The one place a decision
    /// becomes a call that runs or a refusal, for a batch run here as for a planned one.
    pub fn decide(&mut self, decided: Authorization, recheck: Option<&PermissionManager>) -> Permit {
        let Prepared::Ready(ready) = &mut self.item.prepared else { return Permit::Settled };
        match act(decided, ready, self.call, recheck) {
            None => {
                self.item.authorized = true;
                Permit::Runs
            }
            Some(Refusal { result, .. }) => {
                self.settle(result);
                Permit::Settled
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{PermissionLevel, ToolHandler, ToolOptions, ToolRegistry};

    fn registry() -> ToolRegistry {
        let registry = ToolRegistry::new();
        let ok = ToolHandler::from_async(|_, _| async { Ok("ran".into()) });
        let schema = json!({"type": "object"});
        registry.register_with_schema("a", "d", schema.clone(), ok.clone(), ToolOptions::new()).unwrap();
        let serial = ToolOptions::new().concurrent(false).permission(PermissionLevel::Ask);
        registry.register_with_schema("s", "d", schema, ok, serial).unwrap();
        registry
    }

    #[test]
    fn handles_follow_call_order_and_a_repeated_id_finds_the_first() {
        let registry = registry();
        let calls =
            [ToolCall::new("x", "a", "{}"), ToolCall::new("x", "s", "{}"), ToolCall::new("y", "zz", "{}")];
        let mut batch = registry.plan_batch(&calls);
        assert_eq!(batch.get_mut("x").unwrap().tool(), Some("a"));
        let seen: Vec<_> = batch.iter_mut().map(|c| (c.position(), c.tool().map(str::to_owned))).collect();
        assert_eq!(seen, [(0, Some("a".into())), (1, Some("s".into())), (2, None)]);
        assert_eq!(batch.iter_mut().len(), 3);
    }

    #[test]
    fn the_schedule_sees_what_was_settled() {
        let registry = registry();
        let calls =
            [ToolCall::new("1", "s", "{}"), ToolCall::new("2", "a", "{}"), ToolCall::new("3", "s", "{}")];
        let mut batch = registry.plan_batch(&calls);
        assert_eq!(batch.schedule().start(), vec![1, 0]);
        batch.get_mut("1").unwrap().settle(ToolResult::error("1", "s", "no"));
        // The first serial call settled: the next one starts with the concurrent ones.
        assert_eq!(batch.schedule().start(), vec![1, 2]);
    }

    #[tokio::test]
    async fn a_settled_call_is_not_asked_and_an_authorized_one_runs_unasked() {
        let registry = registry();
        let calls = [ToolCall::new("1", "s", "{}"), ToolCall::new("2", "s", "{}")];
        let mut batch = registry.plan_batch(&calls);
        batch.get_mut("1").unwrap().settle(ToolResult::error("1", "s", "no"));
        batch.get_mut("2").unwrap().authorize_unasked();
        // Nobody could answer an ASK: yet nothing is asked.
        let manager = PermissionManager::default();
        let done = batch.authorize(&manager.rules_only(), Some(&manager)).await;
        assert_eq!(done, Authorized::default());
        let mut second = batch.get_mut("2").unwrap();
        assert!(second.is_authorized());
        assert_eq!(second.authorize(&manager.rules_only(), None).await, Permit::Runs);
        assert!(format!("{second:?}").contains("position: 1"));
    }
}
