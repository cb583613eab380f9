//! The recovery rules of durable runs, written once for every backend.
//!
//! A call whose outcome is unknown — it started and its process (or worker) stopped
//! before its result was recorded, or it timed out and may have partly run — is run
//! again when its tool is `safe`, run again with the same idempotency key when it is
//! `idempotent`, and put to a person when it is `manual` ([`NeedsInputKind::Outcome`]).
//! A direct run has no record to recover from: it answers a timeout to the model.

use harnessx_core::ReplayPolicy;
use serde::{Deserialize, Serialize};

use crate::run::state::{NeedsInput, NeedsInputKind};

/// Why a call's outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unknown {
    /// It started and the run stopped (a crash, a killed worker) before its result was
    /// recorded.
    Interrupted,
    /// It timed out and may have partly run.
    TimedOut,
}

/// What to do with a call whose outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// Run it again (`safe`; `idempotent`, with the key it had).
    RunAgain,
    /// Ask a person whether it took effect (`manual`).
    Ask(NeedsInput),
}

/// The rule for a call of `tool` with `policy` whose outcome is unknown for `why`.
pub fn recover(policy: ReplayPolicy, why: Unknown, call_id: &str, tool: &str, arguments: &str) -> Recovery {
    match policy {
        ReplayPolicy::Safe | ReplayPolicy::Idempotent => Recovery::RunAgain,
        ReplayPolicy::Manual => Recovery::Ask(ask(why, call_id, tool, arguments)),
    }
}

/// The question put to a person about a `manual` call whose outcome is unknown.
pub fn ask(why: Unknown, call_id: &str, tool: &str, arguments: &str) -> NeedsInput {
    NeedsInput {
        kind: NeedsInputKind::Outcome,
        call_id: call_id.to_owned(),
        tool: tool.to_owned(),
        arguments: arguments.to_owned(),
        reason: reason(why, tool),
        schema: None,
    }
}

/// The sentence a person reads about a `manual` call whose outcome is unknown.
pub fn reason(why: Unknown, tool: &str) -> String {
    match why {
        Unknown::Interrupted => format!(
            "{tool} started and its outcome is unknown (the run stopped before it answered); it is `manual`, so it is not run again. Say whether it took effect, and what it did"
        ),
        Unknown::TimedOut => format!(
            "{tool} timed out and may have partly run; it is `manual`, so it is not run again. Say whether it took effect, and what it did"
        ),
    }
}

/// The idempotency key a durable run gives a call: the same on every re-run, on any
/// process or worker.
pub fn idempotency_key(run_id: &str, call_id: &str) -> String {
    format!("{run_id}/{call_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_manual_calls_are_asked_about() {
        for policy in [ReplayPolicy::Safe, ReplayPolicy::Idempotent] {
            for why in [Unknown::Interrupted, Unknown::TimedOut] {
                assert_eq!(recover(policy, why, "c", "t", "{}"), Recovery::RunAgain);
            }
        }
        let Recovery::Ask(n) = recover(ReplayPolicy::Manual, Unknown::TimedOut, "c1", "send", "{\"to\":1}")
        else {
            panic!("manual is asked about")
        };
        assert_eq!(n.kind, NeedsInputKind::Outcome);
        assert_eq!((n.call_id.as_str(), n.tool.as_str(), n.arguments.as_str()), ("c1", "send", "{\"to\":1}"));
        assert!(n.reason.starts_with("send timed out and may have partly run"), "{}", n.reason);
    }
}
