//! [`RunLimits`]: what a run may not exceed, and [`Limit`]: which one it reached.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The turn limit of a run whose [`RunLimits`] do not set [`RunLimits::max_turns`]
/// (what [`AgentConfig::run_limits`](crate::AgentConfig::run_limits) fills in).
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// What a run may not exceed; `None` (and an empty map) for no limit. Checked in the one
/// run loop, so they hold on every backend (direct, SQLite, Restate).
///
/// - `max_turns`: model requests. The calls of the last turn run; the request after it
///   is not sent.
/// - `max_tool_calls`: tool calls. No call past it runs: in a batch that would pass it the
///   calls up to it run, the others get the error result `tool-call limit of N reached:
///   this call was not run`, and the run ends without another model request.
/// - `max_tokens`: input plus output tokens of the run (its specialists' included),
///   checked after each response: once reached, no request is sent and the calls of
///   that response do not run. A request is not sent either when its input alone is
///   known to pass what is left: the conversation only grows, so a request's input is at
///   least the previous one's (while the tool list is unchanged).
/// - `max_cost_usd`: the cost in US dollars, checked like `max_tokens`; needs the model's
///   price ([`ModelPrice`](super::ModelPrice)).
/// - `max_calls_per_tool`: calls of one tool (by its registered name). A call past it gets
///   the error result `tool-call limit of N for TOOL reached: this call was not run` and
///   the run goes on: the model can do without that tool.
///
/// A run that reaches one of the first four ends with
/// [`RunStatus::LimitReached`](crate::RunStatus::LimitReached), not an error; a durable
/// run pauses there, and resuming it under a higher limit continues it.
///
/// A run whose limits leave `max_turns` unset is held to [`DEFAULT_MAX_TURNS`]
/// ([`AgentConfig::run_limits`](crate::AgentConfig::run_limits)): every run has a turn limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunLimits {
    /// Most model requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Most tool calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Most input plus output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Most US dollars.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Most calls of a tool, by its registered name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_calls_per_tool: BTreeMap<String, u64>,
}

impl RunLimits {
    /// These limits with those set in `changes` in their place (a raised limit on
    /// resume): a field `changes` leaves unset keeps its value here, and per-tool limits
    /// are replaced tool by tool.
    ///
    /// ```
    /// use harnessx_agent::budget::RunLimits;
    ///
    /// let run = RunLimits { max_tool_calls: Some(3), max_tokens: Some(1000), ..RunLimits::default() };
    /// let raised = run.with(&RunLimits { max_tool_calls: Some(5), ..RunLimits::default() });
    /// assert_eq!((raised.max_tool_calls, raised.max_tokens), (Some(5), Some(1000)));
    /// ```
    pub fn with(&self, changes: &RunLimits) -> RunLimits {
        let mut limits = self.clone();
        limits.max_turns = changes.max_turns.or(self.max_turns);
        limits.max_tool_calls = changes.max_tool_calls.or(self.max_tool_calls);
        limits.max_tokens = changes.max_tokens.or(self.max_tokens);
        limits.max_cost_usd = changes.max_cost_usd.or(self.max_cost_usd);
        for (tool, max) in &changes.max_calls_per_tool {
            limits.max_calls_per_tool.insert(tool.clone(), *max);
        }
        limits
    }

    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The limit a run reached. Serialises as `turns`, `tool_calls`, `tokens`, `cost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limit {
    /// [`RunLimits::max_turns`] (or [`DEFAULT_MAX_TURNS`] when unset).
    Turns,
    /// [`RunLimits::max_tool_calls`].
    ToolCalls,
    /// [`RunLimits::max_tokens`].
    Tokens,
    /// [`RunLimits::max_cost_usd`].
    Cost,
}

impl Limit {
    /// `turns`, `tool_calls`, `tokens` or `cost`, as `--json` and journals spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turns => "turns",
            Self::ToolCalls => "tool_calls",
            Self::Tokens => "tokens",
            Self::Cost => "cost",
        }
    }

    /// The limit in words, with its value in `limits`: `the tool-call limit of 3`.
    pub fn describe(self, limits: &RunLimits) -> String {
        let value = match self {
            Self::Turns => limits.max_turns.map(|n| n.to_string()),
            Self::ToolCalls => limits.max_tool_calls.map(|n| n.to_string()),
            Self::Tokens => limits.max_tokens.map(|n| n.to_string()),
            Self::Cost => limits.max_cost_usd.map(|n| format!("${n}")),
        };
        match value {
            Some(value) => format!("the {self} limit of {value}"),
            None => format!("the {self} limit"),
        }
    }
}

impl fmt::Display for Limit {
    /// `turn`, `tool-call`, `token`, `cost`: as in "the tool-call limit".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Turns => "turn",
            Self::ToolCalls => "tool-call",
            Self::Tokens => "token",
            Self::Cost => "cost",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_from_json_refuse_unknown_fields() {
        let limits: RunLimits = serde_json::from_str(r#"{"max_tool_calls": 3}"#).unwrap();
        assert_eq!(limits.max_tool_calls, Some(3));
        assert!(serde_json::from_str::<RunLimits>(r#"{"max_tool_call": 3}"#).is_err());
        assert_eq!(serde_json::to_string(&RunLimits::default()).unwrap(), "{}");
    }

    #[test]
    fn limits_are_named_with_their_values() {
        let limits = RunLimits { max_tool_calls: Some(3), max_cost_usd: Some(0.5), ..RunLimits::default() };
        assert_eq!(Limit::ToolCalls.describe(&limits), "the tool-call limit of 3");
        assert_eq!(Limit::Cost.describe(&limits), "the cost limit of $0.5");
        assert_eq!(Limit::Tokens.describe(&limits), "the token limit");
        assert_eq!(serde_json::to_value(Limit::ToolCalls).unwrap(), "tool_calls");
    }
}
