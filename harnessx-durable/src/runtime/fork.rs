//! [`AgentRuntime::fork`]: a new run from another run's journaled history up to a turn,
//! asked anew from that turn on by this runtime's agent ("what if this run had gone on
//! with another model, prompt or tools from here?").
//!
//! The fork copies the source's journal up to the first entry of turn `at`: the model's
//! responses of turns `1..at`, what the hooks and people decided about their calls, and
//! the calls' results. Driving the fork replays them as a resume replays its own journal:
//! no copied turn is asked again and no copied call runs again, whatever its tool's
//! replay policy, because each has its result. From turn `at` the fork asks its own model.
//!
//! Left out of the copy: how the source stopped (`failed`, `limit_reached`) and the
//! source's own limits and price (the fork's are its own), and the source's origin if it
//! was itself a fork (the fork names the run it was copied from).

use serde::{Deserialize, Serialize};

use harnessx_agent::{Events, Prompt, RunResult};

use super::{AgentRuntime, DurableError, Replay};
use crate::journal::{Entry, JournalEntry};
use crate::runs::StartOptions;

/// Where a forked run came from: the run, and the first turn the fork asked anew (its
/// turns before it are that run's). `RunReport::forked_from`; `harnessx runs show` says
/// `forked from RUN at turn N`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The run it was forked from.
    pub run_id: String,
    /// The first turn it asked anew (1-based).
    pub turn: u32,
}

impl AgentRuntime {
    /// Whether run `source` can be forked at turn `at`: the checks [`fork`](Self::fork)
    /// makes of the source (it exists, has turn `at`, every copied call has its result),
    /// for a caller that would rather not build the fork's agent first. Reads only.
    pub fn can_fork(&self, source: &str, at: u32) -> Result<(), DurableError> {
        let (_, entries) = self.load(source)?;
        history(source, &entries, at).map(drop)
    }

    /// Starts run `run_id` (new) as a fork of run `source` at turn `at` (1-based, the
    /// turns as [`RunState::turns`](harnessx_agent::RunState::turns) counts them): the
    /// source's turns `1..at` are copied from its journal (its prompt, the model's
    /// responses, the decisions on their calls and the calls' results), and from turn
    /// `at` on this runtime's agent asks its model. `at` 1 copies the prompt alone.
    ///
    /// No call of a copied turn runs again, whatever its replay policy: its result is
    /// copied. The fork is fingerprinted with this runtime's agent (so it is resumed
    /// with that agent), journals where it came from ([`ForkedFrom`], in the
    /// [`RunReport`](crate::RunReport) of [`status`](Self::status)), and runs under
    /// `options`' limits and price. A typed source's output is kept unless `options`
    /// gives another. The source's journal is only read.
    ///
    /// Refused, with nothing written: a source that does not exist
    /// ([`JournalError::NoSuchRun`](crate::JournalError::NoSuchRun)), a turn it does not
    /// have ([`DurableError::NoSuchTurn`]), a copied call with no journaled result
    /// ([`DurableError::Unsettled`]), an id in use. `events` as for
    /// [`start_with_events`](Self::start_with_events) (replayed turns send none).
    pub async fn fork(
        &self,
        source: &str,
        at: u32,
        run_id: &str,
        options: StartOptions,
        events: Option<Events>,
    ) -> Result<RunResult, DurableError> {
        let (run, entries) = self.load(source)?;
        let copied = history(source, &entries, at)?;
        let StartOptions { output, limits, price, progress: _ } = options;
        let prompt = Prompt { text: run.prompt, parts: run.prompt_parts };
        let spec = self.create_run(run_id, prompt, output.as_ref())?;
        let mut journaled = vec![Entry::Forked { run_id: source.to_owned(), turn: at }];
        journaled.extend(copied.into_iter().filter(|e| spec.is_none() || !matches!(e, Entry::Output { .. })));
        if let Some(spec) = spec {
            journaled.insert(1, Entry::Output { output: spec });
        }
        if limits.is_some() || price.is_some() {
            journaled.push(Entry::Limits { limits: limits.unwrap_or_default(), price });
        }
        // One commit: the fork's origin and the history it goes on from.
        self.journal.append(run_id, &journaled, None)?;
        self.drive(run_id, events, output, None).await
    }
}

/// The entries of `source`'s journal a fork at turn `at` starts from (see the module
/// doc), after checking that the run has turn `at` and that every call the copy starts
/// has its result.
fn history(source: &str, entries: &[JournalEntry], at: u32) -> Result<Vec<Entry>, DurableError> {
    let turns = u32::try_from(Replay::new(entries).responses.len()).unwrap_or(u32::MAX);
    if at == 0 || at > turns {
        return Err(DurableError::NoSuchTurn { run_id: source.to_owned(), turn: at, turns });
    }
    // The loop journals a turn's steps before the next turn's: everything before the
    // first step of turn `at` belongs to the run (its prompt) or to an earlier turn.
    let end =
        entries.iter().position(|e| turn_of(&e.entry).is_some_and(|t| t >= at)).unwrap_or(entries.len());
    let copied: Vec<Entry> = entries[..end].iter().map(|e| &e.entry).filter(|e| copied(e)).cloned().collect();
    // A journal the loop wrote always has them (turn t + 1 is asked once every call of
    // turn t settled); one cut or changed by hand may not.
    let settled = |call: &str| {
        copied.iter().any(|e| match e {
            Entry::CallResult { result, .. } => result.call_id == call,
            Entry::Answer { call_id, .. } => call_id == call,
            _ => false,
        })
    };
    for entry in &copied {
        if let Entry::CallStart { turn, call_id, tool, .. } = entry
            && !settled(call_id)
        {
            return Err(DurableError::Unsettled {
                run_id: source.to_owned(),
                call_id: call_id.clone(),
                tool: tool.clone(),
                turn: *turn,
            });
        }
    }
    Ok(copied)
}

/// The turn a step belongs to; `None` for the run's own entries (its prompt's hooks, its
/// output, its limits) and for those that name a call, not a turn (a decision, an
/// answer, a pause: journaled within their call's turn).
fn turn_of(entry: &Entry) -> Option<u32> {
    match entry {
        Entry::ModelResponse { turn, .. }
        | Entry::ContextOverflow { turn, .. }
        | Entry::Compaction { turn, .. }
        | Entry::CallStart { turn, .. }
        | Entry::CallResult { turn, .. }
        | Entry::ResponseHook { turn, .. } => Some(*turn),
        _ => None,
    }
}

/// Whether a fork copies the entry: every step of the history, not how the source
/// stopped, what it was allowed, or where it came from.
fn copied(entry: &Entry) -> bool {
    !matches!(
        entry,
        Entry::Failed { .. }
            | Entry::LimitReached { .. }
            | Entry::Final { .. }
            | Entry::Blocked { .. }
            | Entry::Limits { .. }
            | Entry::Forked { .. }
    )
}

#[cfg(test)]
mod tests {
    use harnessx_agent::model::Usage;
    use harnessx_core::ToolResult;
    use serde_json::json;

    use super::*;

    fn journal(entries: Vec<Entry>) -> Vec<JournalEntry> {
        entries.into_iter().zip(1..).map(|(entry, seq)| JournalEntry { seq, at_ms: 0, entry }).collect()
    }

    fn start(turn: u32, call: &str) -> Entry {
        Entry::CallStart {
            turn,
            call_id: call.into(),
            tool: "send".into(),
            replay: "manual".into(),
            idempotency_key: format!("r/{call}"),
        }
    }

    fn result(turn: u32, call: &str) -> Entry {
        Entry::CallResult {
            turn,
            result: ToolResult::error(call, "send", "sent"),
            timed_out: false,
            usage: Default::default(),
        }
    }

    fn response(turn: u32) -> Entry {
        Entry::ModelResponse { turn, response: json!({"content": format!("turn {turn}")}) }
    }

    /// Three turns: a call at turn 1 (approved), a call at turn 2 (answered after its
    /// outcome was unknown), an answer at turn 3; the run stopped at a limit once, was
    /// given a higher one, and was itself forked.
    fn source() -> Vec<JournalEntry> {
        let approval = Entry::Approval {
            call_id: "c1".into(),
            tool: "send".into(),
            decision: harnessx_core::ApprovalDecision::Approve,
            arguments_hash: Some("h".into()),
        };
        journal(vec![
            Entry::Forked { run_id: "r0".into(), turn: 1 },
            Entry::Limits { limits: Default::default(), price: None },
            response(1),
            Entry::Paused { needs_input: json!([]) },
            approval,
            start(1, "c1"),
            result(1, "c1"),
            Entry::Compaction { turn: 2, attempt: 0, response: json!({"content": "summary"}) },
            response(2),
            start(2, "c2"),
            Entry::Answer { call_id: "c2".into(), text: "it was sent".into() },
            result(2, "c2"),
            Entry::LimitReached { limit: harnessx_agent::Limit::Turns, usage: Usage::default() },
            response(3),
            Entry::Final { output: "done".into() },
        ])
    }

    fn kinds(entries: &[Entry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| serde_json::to_value(e).unwrap()["kind"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn a_fork_copies_the_steps_before_its_turn_and_not_how_the_source_stopped() {
        let entries = source();
        assert_eq!(kinds(&history("r", &entries, 1).unwrap()), Vec::<String>::new(), "the prompt alone");
        assert_eq!(
            kinds(&history("r", &entries, 2).unwrap()),
            ["model_response", "paused", "approval", "call_start", "call_result"]
        );
        assert_eq!(
            kinds(&history("r", &entries, 3).unwrap()),
            [
                "model_response",
                "paused",
                "approval",
                "call_start",
                "call_result",
                "compaction",
                "model_response",
                "call_start",
                "answer",
                "call_result"
            ]
        );
    }

    #[test]
    fn a_fork_at_a_turn_the_run_lacks_is_refused_naming_its_turns() {
        for at in [0, 4, 99] {
            let refused = history("r", &source(), at).unwrap_err();
            assert!(
                matches!(&refused, DurableError::NoSuchTurn { run_id, turn, turns: 3 } if run_id == "r" && *turn == at),
                "{refused}"
            );
        }
        let refused = history("r", &journal(Vec::new()), 1).unwrap_err();
        assert!(matches!(refused, DurableError::NoSuchTurn { turns: 0, .. }), "{refused}");
    }

    #[test]
    fn a_copied_call_without_a_result_is_refused_naming_it() {
        // Cut by hand: the call of turn 1 has no result, yet turn 2 was asked.
        let entries = journal(vec![response(1), start(1, "c1"), response(2)]);
        let refused = history("r", &entries, 2).unwrap_err();
        assert!(
            matches!(&refused, DurableError::Unsettled { call_id, turn: 1, .. } if call_id == "c1"),
            "{refused}"
        );
        assert!(refused.to_string().contains("fork at turn 1 or before"), "{refused}");
        assert!(history("r", &entries, 1).is_ok(), "before it, nothing of it is copied");
    }
}
