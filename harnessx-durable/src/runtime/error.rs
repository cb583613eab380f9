//! [`DurableError`]: why a durable operation failed, and the errors every backend words
//! the same way.

use harnessx_agent::{AgentError, NeedsInput, NeedsInputKind, spans};

use crate::journal::{JournalError, RunStatus};

/// Why a durable operation failed. One line each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The journal could not be read or written; nothing after the last commit happened.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The model or the agent failed; the run is marked failed and can be resumed.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The run was started by an agent with other tools, model or system prompt.
    #[error(
        "run {run_id:?} was started with {was}; this agent has {now}. Resume it with the same tools, model and system prompt, or start a new run"
    )]
    Mismatch {
        /// The run.
        run_id: String,
        /// What the run was started with.
        was: String,
        /// What this agent has.
        now: String,
    },
    /// `approve` or `answer` for a call the run is not waiting on.
    #[error("run {run_id:?} is not waiting for {what} of call {call_id:?}{waiting}")]
    NotAwaited {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// `"an approval"` or `"an answer"`.
        what: &'static str,
        /// What it is waiting for instead, as a clause.
        waiting: String,
    },
    /// `resume` of a run that already finished.
    #[error("run {0:?} is already completed; `runs show` prints its answer")]
    Completed(String),
    /// The Restate cluster could not be reached, or answered with an error (feature
    /// `restate`): the run is as the cluster last recorded it.
    #[error("{0}")]
    Cluster(String),
    /// The Restate cluster has no run with this id (feature `restate`).
    #[error("no run with id {run_id:?} on the Restate cluster at {cluster}")]
    NoClusterRun {
        /// The run id asked for.
        run_id: String,
        /// The cluster's ingress URL.
        cluster: String,
    },
    /// A conversation cannot go on from this run: it is not completed, or its chain of
    /// earlier turns is broken.
    #[error("{0}")]
    Conversation(String),
    /// [`fork`](crate::AgentRuntime::fork) at a turn the run does not have: a fork asks
    /// anew from a turn from 1 to the run's last.
    #[error("{}", no_such_turn(run_id, *turn, *turns))]
    NoSuchTurn {
        /// The run forked from.
        run_id: String,
        /// The turn asked for.
        turn: u32,
        /// How many turns the run has.
        turns: u32,
    },
    /// [`fork`](crate::AgentRuntime::fork) after a turn with a call that has no
    /// journaled result (a journal the loop wrote always has them before the next turn;
    /// this one was cut or changed by hand): nothing is forked.
    #[error(
        "run {run_id:?}: call {call_id:?} ({tool}) of turn {turn} has no journaled result, so a fork cannot copy it; fork at turn {turn} or before"
    )]
    Unsettled {
        /// The run forked from.
        run_id: String,
        /// The call.
        call_id: String,
        /// Its tool.
        tool: String,
        /// Its turn.
        turn: u32,
    },
    /// An answer that does not fit what the run waits for (a server's question: not
    /// JSON, or not its schema): one line naming the field; nothing was recorded.
    #[error("{0}")]
    BadAnswer(String),
}

/// The `error.type` of a durable run that failed outside the agent.
pub(super) fn durable_error_type(error: &DurableError) -> &'static str {
    match error {
        DurableError::Journal(_) => "journal",
        DurableError::Mismatch { .. } => "mismatch",
        DurableError::NotAwaited { .. } => "not_awaited",
        DurableError::Completed(_) => "completed",
        DurableError::Cluster(_) | DurableError::NoClusterRun { .. } => "cluster",
        DurableError::Conversation(_) => "conversation",
        DurableError::BadAnswer(_) => "bad_answer",
        DurableError::NoSuchTurn { .. } | DurableError::Unsettled { .. } => "fork",
        DurableError::Agent(e) => spans::agent_error_type(e),
    }
}

/// [`DurableError::NoSuchTurn`] in words: how many turns the run has, and which a fork
/// can start at.
fn no_such_turn(run_id: &str, turn: u32, turns: u32) -> String {
    match turns {
        0 => format!("run {run_id:?} has no turns (it never asked its model): there is nothing to fork"),
        1 => format!("run {run_id:?} has 1 turn: a fork starts at turn 1, not {turn}"),
        _ => {
            format!("run {run_id:?} has {turns} turns: a fork starts at a turn from 1 to {turns}, not {turn}")
        }
    }
}

/// The error for `approve`/`answer` of a call the run is not waiting on, the same on
/// every backend: what it waits for instead, or where it stands.
pub(crate) fn not_awaited(
    run_id: &str,
    call_id: &str,
    kind: NeedsInputKind,
    waiting: &[NeedsInput],
    status: RunStatus,
) -> DurableError {
    let what = kind.awaited();
    let waiting = if waiting.is_empty() {
        format!(" (it is {})", status.as_str())
    } else {
        let list: Vec<String> =
            waiting.iter().map(|n| format!("{} of {:?}", n.kind.noun(), n.call_id)).collect();
        format!("; it waits for: {}", list.join(", "))
    };
    DurableError::NotAwaited { run_id: run_id.to_owned(), call_id: call_id.to_owned(), what, waiting }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(kind: NeedsInputKind, call_id: &str) -> NeedsInput {
        NeedsInput {
            kind,
            call_id: call_id.into(),
            tool: "write_file".into(),
            arguments: "{}".into(),
            reason: "asks".into(),
            schema: None,
        }
    }

    #[test]
    fn not_awaited_lists_what_the_run_waits_for_instead() {
        let waiting = [need(NeedsInputKind::Approval, "c1"), need(NeedsInputKind::Outcome, "c2")];
        let error = not_awaited("r1", "c9", NeedsInputKind::Approval, &waiting, RunStatus::NeedsInput);
        assert_eq!(
            error.to_string(),
            r#"run "r1" is not waiting for an approval of call "c9"; it waits for: approval of "c1", answer of "c2""#
        );
    }

    #[test]
    fn not_awaited_of_a_run_waiting_for_nothing_says_where_it_stands() {
        let error = not_awaited("r1", "c1", NeedsInputKind::Outcome, &[], RunStatus::Completed);
        assert_eq!(
            error.to_string(),
            r#"run "r1" is not waiting for an answer of call "c1" (it is completed)"#
        );
        assert!(matches!(error, DurableError::NotAwaited { what: "an answer", .. }));
    }

    #[test]
    fn each_failure_outside_the_agent_has_its_own_error_type() {
        let errors = [
            (DurableError::Journal(JournalError::NoSuchRun("r".into())), "journal"),
            (DurableError::Mismatch { run_id: "r".into(), was: "a".into(), now: "b".into() }, "mismatch"),
            (not_awaited("r", "c", NeedsInputKind::Approval, &[], RunStatus::Running), "not_awaited"),
            (DurableError::Completed("r".into()), "completed"),
            (DurableError::Cluster("down".into()), "cluster"),
            (DurableError::Conversation("broken".into()), "conversation"),
        ];
        for (error, kind) in errors {
            assert_eq!(durable_error_type(&error), kind, "{error}");
        }
    }

    #[test]
    fn a_fork_at_a_turn_the_run_lacks_names_how_many_it_has() {
        let error = |turn, turns| DurableError::NoSuchTurn { run_id: "r".into(), turn, turns }.to_string();
        assert_eq!(error(9, 3), r#"run "r" has 3 turns: a fork starts at a turn from 1 to 3, not 9"#);
        assert_eq!(error(0, 1), r#"run "r" has 1 turn: a fork starts at turn 1, not 0"#);
        assert!(error(1, 0).ends_with("there is nothing to fork"), "{}", error(1, 0));
    }

    #[test]
    fn a_mismatch_names_both_sides_and_what_to_do() {
        let error =
            DurableError::Mismatch { run_id: "r1".into(), was: "tools [a]".into(), now: "tools [b]".into() };
        let text = error.to_string();
        assert!(
            text.starts_with(r#"run "r1" was started with tools [a]; this agent has tools [b]."#),
            "{text}"
        );
        assert!(text.contains("or start a new run"), "{text}");
    }
}
