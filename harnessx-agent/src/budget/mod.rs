//! Run budgets: usage accounted exactly, its cost, and the limits a run cannot exceed.
//!
//! - [`ModelPrice`]: what a model's tokens cost, with a built-in table of well-known
//!   models ([`PRICES_CHECKED`]).
//! - [`RunLimits`]: turns, tool calls, tokens, dollars and calls per tool; [`Limit`]: the
//!   one a run reached ([`RunStatus::LimitReached`](crate::RunStatus::LimitReached)).
//! - [`UsageSink`]: how a specialist's usage reaches its parent's run.
//!
//! The loop keeps the account: every response's usage, priced, summed for
//! the run, per model and per turn; calls counted; the limits checked before each
//! request, after each response and before each batch. See `docs/budgets.md`.

mod limits;
mod price;
mod sink;

use std::collections::BTreeMap;

pub use limits::{DEFAULT_MAX_TURNS, Limit, RunLimits};
pub use price::{ModelPrice, PRICES_CHECKED, ParsePriceError};
pub use sink::{UsageByModel, UsageSink, report};

use crate::model::{Message, Usage};

/// One model request's usage as a run counts it: one request, no tool calls, priced by
/// the model that answered. `answered_by` is the model a response names
/// ([`ModelResponse::model`](crate::model::ModelResponse::model)); when it is another
/// than the run's `model` (a fallback model's answer, a summarizer's), the usage is
/// counted under its name at its built-in price, else under `model` at `price`. Returns
/// the model it is counted under and the usage with its cost.
///
/// The one pricing rule: the run loop counts with it, and a durable runtime's status
/// counts a journal's responses with it, so both say the same.
pub fn priced<'a>(
    usage: Usage,
    answered_by: Option<&'a str>,
    model: &'a str,
    price: Option<ModelPrice>,
) -> (&'a str, Usage) {
    let mut usage = usage;
    usage.requests = 1;
    usage.tool_calls = 0;
    let (model, price) = match answered_by {
        Some(other) if other != model => {
            let name = other.split_once(':').map_or(other, |(_, name)| name);
            (other, ModelPrice::builtin(name))
        }
        _ => (model, price),
    };
    usage.cost_usd = price.map(|p| p.cost(&usage));
    (model, usage)
}

/// A run's account: what it used so far and what it may still use.
#[derive(Debug)]
pub(crate) struct Budget {
    /// The limits in force (`max_turns` always set).
    pub(crate) limits: RunLimits,
    price: Option<ModelPrice>,
    /// The agent's model, as usage is kept by model.
    model: String,
    pub(crate) usage: Usage,
    pub(crate) by_model: UsageByModel,
    pub(crate) by_turn: Vec<Usage>,
    /// Calls per registered tool, kept only for tools with a limit of their own (a few:
    /// a sorted map compares a name or two where a hash map would hash it).
    per_tool: BTreeMap<String, u64>,
    /// The input tokens of the last response: the next request's input is at least this
    /// (the conversation only grows) while the tool list stays the same.
    last_input: Option<u64>,
}

impl Budget {
    pub(crate) fn new(limits: RunLimits, price: Option<ModelPrice>, model: String) -> Self {
        Self {
            limits,
            price,
            model,
            usage: Usage::default(),
            by_model: BTreeMap::new(),
            by_turn: Vec::new(),
            per_tool: BTreeMap::new(),
            last_input: None,
        }
    }

    /// Adds the usage of turn `turn`'s response: priced with the agent's model's price,
    /// counted as one request. A response another model gave (`answered_by`, a fallback
    /// model's) is priced with that model's built-in price and counted under its name.
    pub(crate) fn response(&mut self, turn: u32, usage: Usage, answered_by: Option<&str>) {
        self.request(turn, usage, answered_by);
        self.last_input = Some(usage.input_tokens);
    }

    /// Adds the usage of a compaction's summarising request of turn `turn`, as a
    /// response's: priced, counted as one request, under the model that answered.
    pub(crate) fn summary(&mut self, turn: u32, usage: Usage, answered_by: Option<&str>) {
        self.request(turn, usage, answered_by);
    }

    fn request(&mut self, turn: u32, usage: Usage, answered_by: Option<&str>) {
        let (model, usage) = priced(usage, answered_by, &self.model, self.price);
        match self.by_model.get_mut(model) {
            Some(spent) => *spent += usage,
            None => {
                self.by_model.insert(model.to_owned(), usage);
            }
        }
        self.add_to_turn(turn, usage);
        self.usage += usage;
    }

    /// Adds what a specialist used in a call of turn `turn`.
    pub(crate) fn specialist(&mut self, turn: u32, by_model: &UsageByModel) {
        for (model, usage) in by_model {
            *self.by_model.entry(model.clone()).or_default() += *usage;
            self.add_to_turn(turn, *usage);
            self.usage += *usage;
        }
    }

    fn add_to_turn(&mut self, turn: u32, usage: Usage) {
        let index = turn.saturating_sub(1) as usize;
        if self.by_turn.len() <= index {
            self.by_turn.resize(index + 1, Usage::default());
        }
        self.by_turn[index] += usage;
    }

    /// Media of `tokens` (by the provider's formula, [`MediaCost`](crate::context::MediaCost))
    /// joined the conversation since the last response: the next request's input is at
    /// least that much more, which a token or cost limit checks before it is sent.
    pub(crate) fn media_added(&mut self, tokens: u64) {
        if let Some(input) = &mut self.last_input {
            *input = input.saturating_add(tokens);
        }
    }

    /// The tool list changed: the last request's input says nothing of the next one's.
    pub(crate) fn tools_changed(&mut self) {
        self.last_input = None;
    }

    /// A token or cost limit the run has reached (after a response, or a batch whose
    /// specialists spent).
    pub(crate) fn reached(&self) -> Option<Limit> {
        if self.limits.max_tokens.is_some_and(|max| self.usage.total_tokens() >= max) {
            return Some(Limit::Tokens);
        }
        if let (Some(max), Some(cost)) = (self.limits.max_cost_usd, self.usage.cost_usd)
            && cost >= max
        {
            return Some(Limit::Cost);
        }
        None
    }

    /// The limit that keeps the request of turn `turn` from being sent: the turns, one
    /// reached, or an input known to pass what is left.
    pub(crate) fn before_request(&self, turn: u32) -> Option<Limit> {
        if self.limits.max_turns.is_some_and(|max| turn > max) {
            return Some(Limit::Turns);
        }
        if let Some(limit) = self.reached() {
            return Some(limit);
        }
        let input = self.last_input?;
        if self.limits.max_tokens.is_some_and(|max| self.usage.total_tokens().saturating_add(input) > max) {
            return Some(Limit::Tokens);
        }
        if let (Some(max), Some(cost), Some(price)) =
            (self.limits.max_cost_usd, self.usage.cost_usd, self.price)
            && cost + price.least_input_cost(input) > max
        {
            return Some(Limit::Cost);
        }
        None
    }

    /// How many of `calls` more calls may run.
    pub(crate) fn calls_allowed(&self, calls: usize) -> usize {
        match self.limits.max_tool_calls {
            None => calls,
            Some(max) => {
                let left = max.saturating_sub(self.usage.tool_calls);
                calls.min(usize::try_from(left).unwrap_or(usize::MAX))
            }
        }
    }

    /// Counts `n` calls (as the agent's model's: the usage by model sums to the run's).
    pub(crate) fn count_calls(&mut self, turn: u32, n: usize) {
        let calls = Usage { tool_calls: n as u64, ..Usage::default() };
        match self.by_model.get_mut(&self.model) {
            Some(spent) => *spent += calls,
            None => {
                self.by_model.insert(self.model.clone(), calls);
            }
        }
        self.add_to_turn(turn, calls);
        self.usage += calls;
    }

    /// Counts a call of `tool` against its own limit: `Some(limit)` when the tool has
    /// used it up (the call does not run).
    pub(crate) fn per_tool(&mut self, tool: &str) -> Option<u64> {
        let max = *self.limits.max_calls_per_tool.get(tool)?;
        // The name is copied once per tool, not once per call.
        let used = match self.per_tool.get_mut(tool) {
            Some(used) => used,
            None => self.per_tool.entry(tool.to_owned()).or_default(),
        };
        if *used >= max {
            return Some(max);
        }
        *used += 1;
        None
    }

    /// Whether any per-tool limit is set.
    pub(crate) fn has_per_tool(&self) -> bool {
        !self.limits.max_calls_per_tool.is_empty()
    }

    /// Raises the limits by `changes` (a backend that waited for them).
    pub(crate) fn raise(&mut self, changes: &RunLimits) {
        self.limits = self.limits.with(changes);
    }

    /// The error result of a call that `limit` kept from running.
    pub(crate) fn not_run(&self, limit: Limit) -> String {
        format!("{} reached: this call was not run", limit.describe(&self.limits).trim_start_matches("the "))
    }

    /// Appends what is left of the budget to the newest message (as the planning list
    /// is: the message keeps it, so every request's prefix is the previous request's).
    pub(crate) fn attach_note(&self, turn: u32, messages: &mut [Message]) {
        let Some(last) = messages.last_mut() else { return };
        let mut left = Vec::new();
        if let Some(max) = self.limits.max_turns {
            // This request included.
            left.push(format!("{} model requests", (max + 1).saturating_sub(turn)));
        }
        if let Some(max) = self.limits.max_tool_calls {
            left.push(format!("{} tool calls", max.saturating_sub(self.usage.tool_calls)));
        }
        if let Some(max) = self.limits.max_tokens {
            left.push(format!("{} tokens", max.saturating_sub(self.usage.total_tokens())));
        }
        if let Some(max) = self.limits.max_cost_usd {
            let spent = self.usage.cost_usd.unwrap_or(0.0);
            left.push(format!("${:.4}", (max - spent).max(0.0)));
        }
        if left.is_empty() {
            return;
        }
        let content = last.content_mut();
        if !content.is_empty() {
            content.push_str("\n\n");
        }
        content.push_str("[Budget left for this run: ");
        content.push_str(&left.join(", "));
        content.push_str(". Finish before it runs out.]");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limits: RunLimits) -> Budget {
        Budget::new(limits, Some(ModelPrice::new(1.0, 2.0)), "test:m".into())
    }

    #[test]
    fn a_request_whose_input_alone_passes_what_is_left_is_not_sent() {
        let mut b = budget(RunLimits { max_tokens: Some(200), ..RunLimits::default() });
        assert_eq!(b.before_request(1), None, "nothing known before the first request");
        b.response(1, Usage { input_tokens: 100, output_tokens: 10, ..Usage::default() }, None);
        assert_eq!(b.reached(), None);
        // 110 used, 90 left, and the next input is at least 100.
        assert_eq!(b.before_request(2), Some(Limit::Tokens));
        b.tools_changed();
        assert_eq!(b.before_request(2), None, "a changed tool list may shrink the input");
        b.response(2, Usage { input_tokens: 80, output_tokens: 10, ..Usage::default() }, None);
        assert_eq!(b.reached(), Some(Limit::Tokens), "200 reached");
    }

    #[test]
    fn cost_is_summed_per_model_and_turn_and_a_specialist_adds_its_own() {
        let mut b = budget(RunLimits { max_cost_usd: Some(1.0), ..RunLimits::default() });
        b.response(1, Usage { input_tokens: 100_000, output_tokens: 100_000, ..Usage::default() }, None);
        assert_eq!(b.usage.cost_usd, Some(0.3));
        let mut other = UsageByModel::new();
        other.insert(
            "x:y".into(),
            Usage { input_tokens: 5, requests: 1, cost_usd: Some(0.7), ..Usage::default() },
        );
        b.specialist(1, &other);
        assert_eq!(b.usage.requests, 2);
        assert_eq!(b.by_model.len(), 2);
        assert_eq!(b.by_turn.len(), 1);
        assert_eq!(b.by_turn[0].input_tokens, 100_005);
        assert_eq!(b.reached(), Some(Limit::Cost));
    }

    #[test]
    fn calls_are_allowed_up_to_the_limit_and_per_tool_limits_count_each_tool() {
        let mut limits = RunLimits { max_tool_calls: Some(3), ..RunLimits::default() };
        limits.max_calls_per_tool.insert("a".into(), 1);
        let mut b = budget(limits);
        assert_eq!(b.calls_allowed(5), 3);
        b.count_calls(1, 2);
        assert_eq!(b.calls_allowed(5), 1);
        assert_eq!((b.per_tool("a"), b.per_tool("a"), b.per_tool("b")), (None, Some(1), None));
        assert_eq!(b.not_run(Limit::ToolCalls), "tool-call limit of 3 reached: this call was not run");
        b.raise(&RunLimits { max_tool_calls: Some(10), ..RunLimits::default() });
        assert_eq!(b.calls_allowed(5), 5);
    }

    #[test]
    fn the_note_names_only_the_limits_that_are_set() {
        let b = budget(RunLimits { max_turns: Some(5), max_tool_calls: Some(4), ..RunLimits::default() });
        let mut messages = vec![Message::user("go")];
        b.attach_note(2, &mut messages);
        assert_eq!(
            messages[0].content_mut().as_str(),
            "go\n\n[Budget left for this run: 4 model requests, 4 tool calls. Finish before it runs out.]"
        );
    }
}
